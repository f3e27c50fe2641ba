package load

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"testing"
)

// TestGzipTrailerSize: the claimed length is a gzip file's last four bytes, little-endian (here checked against
// the length of what was compressed), 0 for input too short to be gzip; the reader is left where it was.
func TestGzipTrailerSize(t *testing.T) {
	content := bytes.Repeat([]byte("memscan "), 5000)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(content); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	gz := buf.Bytes()
	claim := func(n uint32) []byte { // a gzip file whose trailer claims n bytes
		b := bytes.Clone(gz)
		binary.LittleEndian.PutUint32(b[len(b)-4:], n)
		return b
	}
	for _, tc := range []struct {
		name string
		data []byte
		want int64
	}{
		{"gzip", gz, int64(len(content))},
		{"claim of 4 GiB less a byte", claim(1<<32 - 1), 1<<32 - 1},
		{"too short for gzip", gz[:17], 0},
		{"shorter than a trailer", gz[:3], 0},
		{"empty", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := bytes.NewReader(tc.data)
			if len(tc.data) > 3 {
				if _, err := r.Seek(3, io.SeekStart); err != nil {
					t.Fatal(err)
				}
			}
			at, _ := r.Seek(0, io.SeekCurrent)
			if got := gzipTrailerSize(r); got != tc.want {
				t.Errorf("gzipTrailerSize = %d, want %d", got, tc.want)
			}
			if now, _ := r.Seek(0, io.SeekCurrent); now != at {
				t.Errorf("reader left at %d, was at %d", now, at)
			}
		})
	}
}
