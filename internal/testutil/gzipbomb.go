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
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(Gzip(head)); err != nil {
		t.Fatal(err)
	}
	member := Gzip(fill)
	for range n {
		if _, err := f.Write(member); err != nil {
			t.Fatal(err)
		}
	}
}

// Gzip returns b compressed as one gzip member (best compression, so bombs stay small on disk).
func Gzip(b []byte) []byte {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression) // the level is valid, so no error
	zw.Write(b)                                              // a bytes.Buffer does not fail
	zw.Close()
	return buf.Bytes()
}
