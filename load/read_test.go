package load_test

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/load"
)

// declinedPickle is a valid snapshot that the fast pickle decoder declines (an allocator setting it does not
// know), so that the reference decoder reads the file a second time.
const declinedPickle = "\x80\x04}(\x8c\x08segments]\x8c\x12allocator_settings}\x8c\x0bfuture_knob\x8c\x02onsu."

// TestDecodeCountsBytesRead: Options.Read ends at the bytes of the file, whatever the decoder: a plain file's
// size, a gzip file's compressed size, and a file the reference decoder reads again counted once, not twice.
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
	files := map[string][]byte{
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
