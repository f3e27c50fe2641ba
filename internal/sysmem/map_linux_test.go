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
	f := openWritten(t, data)
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

// TestMappingReading: a reader's window over a mapping that starts inside a page. Before the reader reads, the
// pages ahead join the resident set (where the kernel can map ahead); once it has read, those behind it leave and
// only about the window ahead stays; the bytes still read as the file holds them.
func TestMappingReading(t *testing.T) {
	const size, ahead = 16 << 20, 4 << 20
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i / 4093)
	}
	f := openWritten(t, data)
	const off = 5000 // not on a page
	m, err := MapFile(f, off, size-off)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	b := m.Bytes()
	// The kernel may map a file's page cache in folios of up to 2 MiB (huge pages), around what is asked.
	slack := int64(2<<20 + 2*os.Getpagesize())
	before := fileResident(t)
	m.Reading(0, ahead)
	if !m.noAhead {
		if grown := fileResident(t) - before; grown < ahead || grown > ahead+slack {
			t.Errorf("resident memory grew by %d bytes with %d mapped ahead", grown, ahead)
		}
	} else {
		t.Log("this kernel cannot map pages ahead of reads (MADV_POPULATE_READ needs Linux 5.14)")
	}
	const read = 12 << 20
	if !bytes.Equal(b[:read], data[off:off+read]) {
		t.Fatal("the mapping differs from the file")
	}
	m.Reading(read, ahead)
	if got := fileResident(t) - before; got > ahead+slack {
		t.Errorf("%d bytes resident after the reader read %d of %d with %d ahead", got, read, size, ahead)
	}
	if !bytes.Equal(b, data[off:]) {
		t.Error("the pages given back do not read the file again")
	}
}

// openWritten writes data to a file of the test's and opens it for reading, closed when the test ends.
func openWritten(t *testing.T, data []byte) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mapped")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// fileResident is this process's resident memory that files back (ResidentFile): a mapping's pages, without the
// heap's.
func fileResident(t *testing.T) int64 {
	t.Helper()
	n, ok := ResidentFile()
	if !ok {
		t.Skip("cannot read RssFile from /proc/self/status")
	}
	return n
}
