package export

import (
	"bytes"
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/snapshot"
)

// roundTripFiles lists every snapshot fixture (pickle and JSON) and, when ../shared is present, every real
// snapshot.
func roundTripFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"*.pickle", "*.json"} {
		m, err := filepath.Glob(filepath.Join("..", "..", "snapshot", "testdata", pat))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatal("no snapshot fixtures in ../snapshot/testdata")
	}
	return files
}

// TestExportRoundTripKeepsGeneration exports each snapshot as JSON, as a pickle and as an uncut slice, decodes
// the result, and requires the decoder to infer the same format generation (TorchFormat: a torch 2.0 file with
// block histories must not come back "2.1+") and to rebuild the same model: segments, blocks, histories, traces,
// settings and annotations, hence the same totals. Only the pickle protocol may differ (JSON has none).
func TestExportRoundTripKeepsGeneration(t *testing.T) {
	files := roundTripFiles(t)
	t.Run("fixtures", func(t *testing.T) { checkRoundTrips(t, files) })
	t.Run("real", func(t *testing.T) {
		dir := testutil.SharedDir(t, "real_snapshots")
		real, err := filepath.Glob(filepath.Join(dir, "*.pickle"))
		if err != nil || len(real) == 0 {
			t.Fatalf("no snapshots in %s: %v", dir, err)
		}
		checkRoundTrips(t, real)
	})
}

func checkRoundTrips(t *testing.T, files []string) {
	ctx := context.Background()
	writers := []struct {
		name  string
		write func(*bytes.Buffer, *snapshot.Snapshot) error
	}{
		{"json", func(b *bytes.Buffer, s *snapshot.Snapshot) error { return WriteJSON(ctx, b, s) }},
		{"pickle", func(b *bytes.Buffer, s *snapshot.Snapshot) error { return WritePickle(ctx, b, s) }},
		{"slice", func(b *bytes.Buffer, s *snapshot.Snapshot) error {
			_, err := WriteSlice(ctx, b, s, SliceOptions{})
			return err
		}},
	}
	for _, path := range files {
		in, err := load.DecodeFile(ctx, path)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(path), err)
			continue
		}
		if in.Snapshot == nil {
			continue // a JSON fixture that is not a snapshot
		}
		orig := in.Snapshot
		for _, w := range writers {
			t.Run(filepath.Base(path)+"/"+w.name, func(t *testing.T) {
				var buf bytes.Buffer
				if err := w.write(&buf, orig); err != nil {
					t.Fatal(err)
				}
				back, err := load.Decode(ctx, "roundtrip."+w.name, &buf)
				if err != nil {
					t.Fatal(err)
				}
				got := back.Snapshot
				if got.TorchFormat != orig.TorchFormat {
					t.Errorf("format %q came back as %q", orig.TorchFormat, got.TorchFormat)
				}
				if stateTotals(got) != stateTotals(orig) {
					t.Errorf("totals %+v, want %+v", stateTotals(got), stateTotals(orig))
				}
				cp := *got
				cp.Protocol = orig.Protocol
				if !reflect.DeepEqual(&cp, orig) {
					t.Errorf("the decoded model differs from the original")
				}
			})
		}
	}
}

// TestExportKeepsGenerationMarkers covers generations whose mark is a key that may hold nothing: allocator_settings
// None (2.3), external_annotations None (2.5), compile_context and user_metadata empty on every event (2.8, 2.10).
func TestExportKeepsGenerationMarkers(t *testing.T) {
	ctx := context.Background()
	seg := snapshot.Segment{Device: 0, Address: 1 << 20, TotalSize: 2048, AllocatedSize: 1024, ActiveSize: 1024, RequestedSize: 1000,
		Type: snapshot.SegmentSmall, Blocks: []snapshot.Block{
			{Address: 1 << 20, Size: 1024, RequestedSize: 1000, State: snapshot.BlockActiveAllocated},
			{Address: 1<<20 + 1024, Size: 1024, RequestedSize: 1024, State: snapshot.BlockInactive}}}
	trace := [][]snapshot.TraceEntry{{{Action: snapshot.ActionAlloc, Addr: 1 << 20, Size: 1000, TimeUS: 5, HasTime: true}}}
	for _, format := range []string{"2.0", "2.1+", "2.2+", "2.3+", "2.5+", "2.8+", "2.10+"} {
		s := &snapshot.Snapshot{Segments: []snapshot.Segment{seg}, DeviceTraces: trace, TorchFormat: format}
		if format == "2.0" || format == "2.1+" {
			s.DeviceTraces = [][]snapshot.TraceEntry{{{Action: snapshot.ActionAlloc, Addr: 1 << 20, Size: 1000}}}
		}
		if format == "2.0" {
			// A 2.0 file with blocks reads as "2.0-history" (its blocks have no address); plain "2.0" is one
			// whose segments list no blocks.
			empty := seg
			empty.Blocks, empty.AllocatedSize, empty.ActiveSize, empty.RequestedSize = []snapshot.Block{}, 0, 0, 0
			s.Segments = []snapshot.Segment{empty}
		}
		for _, kind := range []string{"json", "pickle"} {
			var buf bytes.Buffer
			var err error
			if kind == "json" {
				err = WriteJSON(ctx, &buf, s)
			} else {
				err = WritePickle(ctx, &buf, s)
			}
			if err != nil {
				t.Fatal(err)
			}
			back, err := load.Decode(ctx, "m."+kind, &buf)
			if err != nil {
				t.Fatalf("%s %s: %v", format, kind, err)
			}
			got := back.Snapshot
			if got.TorchFormat != format {
				t.Errorf("%s %s: came back as %q", format, kind, got.TorchFormat)
			}
			cp := *got
			cp.Protocol, cp.TorchFormat = s.Protocol, s.TorchFormat
			if !reflect.DeepEqual(&cp, s) {
				t.Errorf("%s %s: model %+v, want %+v", format, kind, cp, *s)
			}
		}
	}
}
