package snapshot_test

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/snapshot"
)

// TestSnapshotJSONRouting checks that the JSON rendition of an allocator snapshot is told apart from tracer
// and timeline JSON and decodes to the same model as its pickle.
func TestSnapshotJSONRouting(t *testing.T) {
	js, err := load.DecodeFile(context.Background(), filepath.Join("testdata", "v22_oom.json"))
	if err != nil {
		t.Fatal(err)
	}
	pk, err := load.DecodeFile(context.Background(), filepath.Join("testdata", "v22_oom.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	if js.Format != snapshot.FormatSnapshotJSON || js.Snapshot == nil || js.Tracer != nil || js.Timeline != nil {
		t.Fatalf("format %q", js.Format)
	}
	want := *pk.Snapshot
	want.Protocol = 0
	if !reflect.DeepEqual(*js.Snapshot, want) {
		t.Error("snapshot JSON decodes differently from its pickle")
	}
	// A bare list of segments is a snapshot too.
	in, err := load.Decode(context.Background(), "list.json", strings.NewReader(`[]`))
	if err != nil || in.Snapshot == nil || !in.Snapshot.BareList {
		t.Errorf("empty segment list: %+v, %v", in, err)
	}
}
