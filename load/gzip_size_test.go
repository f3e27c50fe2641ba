package load_test

import (
	"bytes"
	"context"
	"io"
	"reflect"
	"testing"

	"github.com/memscan/memscan/internal/gen"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/load"
)

// TestGzipSizedTraceList: a gzip file read from a seekable reader sizes its trace list from the trailer's claim
// (room reserved ahead: unsized, the list was gathered in chunks and joined at its length, holding both at once),
// and gzip read from a file or a stream decodes to the plain file's model.
func TestGzipSizedTraceList(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes a 70,000-entry snapshot three times")
	}
	var buf bytes.Buffer
	if _, err := gen.Write(&buf, gen.Config{Name: "gz", Seed: 3, Entries: 70000}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	plain, err := load.DecodeWith(ctx, "x.pickle", bytes.NewReader(buf.Bytes()), load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	gz := testutil.Gzip(buf.Bytes())
	for _, tc := range []struct {
		name  string
		r     io.Reader
		sized bool
	}{
		{"file", bytes.NewReader(gz), true},
		{"stream", io.MultiReader(bytes.NewReader(gz)), false}, // kept whole, then decoded at its known length
	} {
		in, err := load.DecodeWith(ctx, "x.pickle.gz", tc.r, load.Options{})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(in.Snapshot, plain.Snapshot) {
			t.Fatalf("%s: the gzip file's model differs from the plain file's", tc.name)
		}
		if tr := in.Snapshot.DeviceTraces[0]; tc.sized && cap(tr) == len(tr) {
			t.Errorf("%s: %d entries in a list of capacity %d: joined from chunks, not sized from the trailer", tc.name, len(tr), cap(tr))
		}
	}
}
