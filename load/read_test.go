package load_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/memscan/memscan/internal/gen"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/load"
)

// declinedPickle is a valid snapshot that the fast pickle decoder declines (an allocator setting it does not
// know), so that the reference decoder reads the file a second time.
const declinedPickle = "\x80\x04}(\x8c\x08segments]\x8c\x12allocator_settings}\x8c\x0bfuture_knob\x8c\x02onsu."

// TestDecodeCountsBytesRead: Options.Read ends at the bytes of the file, whatever the decoder: a plain file's
// size (read through or in place), a gzip file's compressed size, and a file the reference decoder reads again
// counted once, not twice.
func TestDecodeCountsBytesRead(t *testing.T) {
	dir := t.TempDir()
	example, err := os.ReadFile(filepath.Join("..", "testdata", "example", "rank0_memory_snapshot.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	tracer, err := os.ReadFile(filepath.Join("..", "tracer", "testdata", "small_rank0.json"))
	if err != nil {
		t.Fatal(err)
	}
	var large bytes.Buffer
	// Past a few megabytes, so that a decoder reading the file in place (mapped) counts as it goes.
	if _, err := gen.Write(&large, gen.Config{Name: "large", Seed: 2, Entries: 100000, ShareStack: true}); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"large.pickle":       large.Bytes(),
		"snapshot.pickle":    example,
		"snapshot.pickle.gz": testutil.Gzip(example),
		"declined.pickle":    []byte(declinedPickle),
		"tracer.json":        tracer,
	}
	var all atomic.Int64
	var total int64
	for name, data := range files {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		var read atomic.Int64
		in, err := load.DecodeFileWith(context.Background(), path, load.Options{Read: &read})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if name == "declined.pickle" && (in.Snapshot.AllocatorSettings == nil || in.Snapshot.AllocatorSettings.Other["future_knob"] != "on") {
			t.Errorf("%s was not decoded by the reference decoder: %+v", name, in.Snapshot.AllocatorSettings)
		}
		if got := read.Load(); got != int64(len(data)) {
			t.Errorf("%s: counted %d bytes read, the file has %d", name, got, len(data))
		}
		// One counter shared by several files sums them.
		if _, err := load.DecodeFileWith(context.Background(), path, load.Options{Read: &all}); err != nil {
			t.Fatal(err)
		}
		total += int64(len(data))
	}
	if all.Load() != total {
		t.Errorf("shared counter %d, the files hold %d bytes", all.Load(), total)
	}
}

// TestDecodeFileInPlace: a snapshot file, which the decoder reads in place (mapped), decodes to the model that the
// same bytes read through a reader decode to.
func TestDecodeFileInPlace(t *testing.T) {
	var buf bytes.Buffer
	if _, err := gen.Write(&buf, gen.Config{Name: "in-place", Seed: 4, Entries: 60000, Devices: 2, ShareStack: true}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rank0.pickle")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := load.DecodeFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := load.Decode(context.Background(), path, bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Error("the file decodes otherwise than its bytes read through a reader")
	}
}
