package testutil

import (
	"bytes"
	"compress/gzip"
	"os"
	"testing"
)

// GzipBomb writes to path a gzip file whose decompressed content is head followed by n copies of fill: head in
// one gzip member, then the compressed fill repeated as further members (gzip readers join members), so that
// gigabytes of content cost a few megabytes on disk and one compression of fill.
func GzipBomb(t testing.TB, path string, head, fill []byte, n int) {
	t.Helper()
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(b)
		zw.Close()
		return buf.Bytes()
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(gz(head)); err != nil {
		t.Fatal(err)
	}
	member := gz(fill)
	for range n {
		if _, err := f.Write(member); err != nil {
			t.Fatal(err)
		}
	}
}
