package sysmem

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// residentBytes reads this process's resident memory from /proc/self/statm.
func residentBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("cannot read /proc/self/statm: %v", err)
	}
	f := strings.Fields(string(b))
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatalf("statm %q: %v", b, err)
	}
	return pages * int64(os.Getpagesize())
}

// mapAnonymous maps size bytes of the test's own, unmapped when it ends: not the Go heap's, which may hand back
// memory it has zeroed (and so made resident) when a test runs again in one process.
func mapAnonymous(t *testing.T, size int) []byte {
	t.Helper()
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		t.Skipf("cannot map %d bytes: %v", size, err)
	}
	t.Cleanup(func() { unix.Munmap(b) })
	return b
}

func TestPopulate(t *testing.T) {
	const size = 64 << 20
	b := mapAnonymous(t, size)
	// What is written already stays as it was, at both ends and inside.
	copy(b, "head")
	copy(b[size/2:], "middle")
	copy(b[size-4:], "tail")
	before := residentBytes(t)
	if !Populate(b) {
		t.Skip("this kernel cannot populate pages ahead of writes (MADV_POPULATE_WRITE needs Linux 5.14)")
	}
	after := residentBytes(t)
	if grown := after - before; grown < size*3/4 {
		t.Errorf("resident memory grew by %d bytes after populating %d", grown, size)
	}
	if !bytes.HasPrefix(b, []byte("head")) || !bytes.HasPrefix(b[size/2:], []byte("middle")) || !bytes.HasSuffix(b, []byte("tail")) {
		t.Error("populating changed what the memory held")
	}
	if bytes.Count(b[8:size/2], []byte{0}) != size/2-8 {
		t.Error("populated pages are not zero")
	}
}

// TestRelease: the whole pages inside a slice leave the resident set and read as zero afterwards; the partial pages
// at its ends keep what they held.
func TestRelease(t *testing.T) {
	const size = 64 << 20
	b := mapAnonymous(t, size)
	for i := range b {
		b[i] = 0xa5 // every page resident, none zero
	}
	pg := os.Getpagesize()
	// From the middle of the first page to the middle of the last: all pages but those two are released.
	r := b[pg/2 : size-pg/2]
	before := residentBytes(t)
	if !Release(r) {
		t.Fatal("Release = false on Linux")
	}
	after := residentBytes(t)
	if shrunk := before - after; shrunk < size*3/4 {
		t.Errorf("resident memory shrank by %d bytes after releasing %d", shrunk, size)
	}
	if bytes.Count(b[:pg], []byte{0xa5}) != pg || bytes.Count(b[size-pg:], []byte{0xa5}) != pg {
		t.Error("the partial pages at the ends lost what they held")
	}
	if bytes.Count(b[pg:size-pg], []byte{0}) != size-2*pg {
		t.Error("released pages do not read as zero")
	}
}

// TestNoWholePage: slices of less than a page, or holding no whole page, ask nothing of the kernel and succeed, and
// leave their bytes as they were.
func TestNoWholePage(t *testing.T) {
	pg := os.Getpagesize()
	b := mapAnonymous(t, 4*pg)
	for i := range b {
		b[i] = 0xa5
	}
	for name, f := range map[string]func([]byte) bool{"Populate": Populate, "Release": Release} {
		for _, s := range [][]byte{nil, b[1:100], b[pg-1 : 2*pg-1], b[pg/2 : 2*pg-1]} {
			if !f(s) {
				t.Errorf("%s of %d bytes = false", name, len(s))
			}
		}
	}
	if bytes.Count(b, []byte{0xa5}) != len(b) {
		t.Error("a slice holding no whole page changed")
	}
}
