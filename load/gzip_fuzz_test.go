package load_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/memscan/memscan/internal/input"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/load"
)

// FuzzDecodeGzip feeds gzip input to Decode: the fixtures compressed (raw false, so the fuzzer mutates the
// content under a valid gzip layer), and arbitrary bytes after a gzip magic (raw true, so it mutates the gzip
// layer itself). The input is decoded from a seekable reader, whose pickle fallback decompresses the file again,
// and from a stream, whose fallback keeps the bytes; both must return promptly and agree on success, and a
// pickle error must be an *Error or the size limit's error. Crashers live in testdata/fuzz/FuzzDecodeGzip.
func FuzzDecodeGzip(f *testing.F) {
	gz := testutil.Gzip
	for _, pat := range []string{"../snapshot/testdata/*.pickle", "../snapshot/testdata/bad/*.pickle", "../tracer/testdata/*.json", "../trainlog/testdata/*.log"} {
		files, err := filepath.Glob(pat)
		if err != nil {
			f.Fatal(err)
		}
		for _, p := range files {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			if len(data) <= 64<<10 {
				f.Add(data, false)
				f.Add(gz(data), true)
			}
		}
	}
	f.Add(gz(gz([]byte("\x80\x04}."))), true)
	f.Fuzz(func(t *testing.T, data []byte, raw bool) {
		if !raw {
			data = gz(data)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		opts := load.Options{MaxInputSize: 64 << 10} // small, so that each run stays fast
		start := time.Now()
		seekIn, seekErr := load.DecodeWith(ctx, "fuzz.gz", bytes.NewReader(data), opts)
		streamIn, streamErr := load.DecodeWith(ctx, "fuzz.gz", io.MultiReader(bytes.NewReader(data)), opts)
		if d := time.Since(start); ctx.Err() != nil || d > 5*time.Second {
			t.Fatalf("decode of %d bytes took %v", len(data), d)
		}
		if (seekErr == nil) != (streamErr == nil) {
			t.Fatalf("seekable and stream decodes disagree: %v / %v", seekErr, streamErr)
		}
		for _, err := range []error{seekErr, streamErr} {
			var de *input.Error
			if err != nil && !errors.As(err, &de) && !errors.Is(err, input.ErrInputTooLarge) && !errors.Is(err, input.ErrUnknownContent) {
				t.Fatalf("error is %T, want *Error: %v", err, err)
			}
		}
		for _, in := range []*load.Input{seekIn, streamIn} {
			if in != nil && in.Snapshot != nil {
				_ = in.Snapshot.Validate()
			}
		}
	})
}
