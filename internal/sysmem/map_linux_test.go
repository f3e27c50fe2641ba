package sysmem

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestMapFile: a file's bytes mapped from any offset, page-aligned or not, read as the file holds them; pages
// mapped ahead (PopulateRead) join the resident set before they are read; pages given back (Release) leave it and
// read the file again when touched; Close unmaps once.
func TestMapFile(t *testing.T) {
	const size = 16 << 20
	data := make([]byte, size)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	path := filepath.Join(t.TempDir(), "mapped")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pg := int64(os.Getpagesize())
	for _, off := range []int64{0, pg, 5000, size - 1} {
		m, err := MapFile(f, off, size-off)
		if err != nil {
			t.Fatalf("MapFile at %d: %v", off, err)
		}
		b := m.Bytes()
		if off == 0 {
			before := residentBytes(t)
			if PopulateRead(b) {
				if grown := residentBytes(t) - before; grown < size*3/4 {
					t.Errorf("resident memory grew by %d bytes after mapping %d ahead", grown, size)
				}
			} else {
				t.Log("this kernel cannot map pages ahead of reads (MADV_POPULATE_READ needs Linux 5.14)")
			}
		}
		if !bytes.Equal(b, data[off:]) {
			t.Errorf("at offset %d: the mapping differs from the file", off)
		}
		if off == 0 {
			before := residentBytes(t)
			if !Release(b[pg : size-pg]) {
				t.Fatal("Release of mapped pages = false on Linux")
			}
			if shrunk := before - residentBytes(t); shrunk < size*3/4 {
				t.Errorf("resident memory shrank by %d bytes after releasing %d mapped bytes", shrunk, size)
			}
			if !bytes.Equal(b, data) {
				t.Error("released pages of a file do not read the file again")
			}
		}
		if err := m.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := m.Close(); err != nil || m.Bytes() != nil {
			t.Errorf("second Close = %v, Bytes after Close has %d bytes", err, len(m.Bytes()))
		}
	}
	for _, c := range []struct{ off, n int64 }{{-1, 10}, {0, 0}, {0, -5}} {
		if _, err := MapFile(f, c.off, c.n); err == nil {
			t.Errorf("MapFile(%d, %d) succeeded", c.off, c.n)
		}
	}
}
