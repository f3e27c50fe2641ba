package load_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/load"
)

// TestGzipChecksum: a gzip file whose trailer does not match its content is refused whether it is read from a
// file (which the decoders may read again) or from a stream, and whether the fast decoder or the reference one
// reads the pickle inside; the same file with its trailer intact decodes both ways.
func TestGzipChecksum(t *testing.T) {
	example, err := os.ReadFile(filepath.Join("..", "testdata", "example", "rank0_memory_snapshot.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	for name, pickle := range map[string][]byte{"fast": example, "declined": []byte(declinedPickle)} {
		good := testutil.Gzip(pickle)
		bad := bytes.Clone(good)
		bad[len(bad)-8] ^= 0xff // the CRC-32 of the trailer
		for _, tc := range []struct {
			kind string
			r    func([]byte) io.Reader
		}{
			{"file", func(b []byte) io.Reader { return bytes.NewReader(b) }},
			{"stream", func(b []byte) io.Reader { return io.MultiReader(bytes.NewReader(b)) }},
		} {
			if _, err := load.DecodeWith(context.Background(), "x.pickle.gz", tc.r(good), load.Options{}); err != nil {
				t.Errorf("%s, %s: the intact file: %v", name, tc.kind, err)
			}
			_, err := load.DecodeWith(context.Background(), "x.pickle.gz", tc.r(bad), load.Options{})
			if err == nil || !strings.Contains(err.Error(), "x.pickle.gz") || !strings.Contains(err.Error(), "checksum") {
				t.Errorf("%s, %s: a bad checksum gave %v, want an error naming the file and the checksum", name, tc.kind, err)
			}
		}
	}
}
