package sysmem

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Populate backs the whole pages inside b with memory now, as writing them would, without changing what they
// hold (madvise MADV_POPULATE_WRITE, Linux 5.14). A caller about to fill a large fresh allocation calls it from
// another goroutine, so that the page faults are taken there instead of on the goroutine that writes. It returns
// false where the kernel cannot; the pages are then faulted in as they are written, as always.
func Populate(b []byte) bool { return advise(b, unix.MADV_POPULATE_WRITE) }

// PopulateRead maps the whole pages inside b, a file's mapping (MapFile), into memory now, as reading them would
// (madvise MADV_POPULATE_READ, Linux 5.14), so that the reader takes no page faults there. It returns false where
// the kernel cannot, or where the file no longer holds those pages; nothing has changed then, and reading them
// faults them in as always.
func PopulateRead(b []byte) bool { return advise(b, unix.MADV_POPULATE_READ) }

// Release gives the whole pages inside b back to the kernel (madvise MADV_DONTNEED): they leave the resident set
// and read as zero when next touched, or read the file again in a file's mapping (MapFile). A caller that will
// not read b's bytes again (the unused room at the end of a large allocation) calls it instead of copying the rest
// into an allocation of the right size. It returns false where the kernel cannot; nothing has changed then.
func Release(b []byte) bool { return advise(b, unix.MADV_DONTNEED) }

// advise gives the kernel advice on the whole pages inside b; true when it took it, or when b holds no whole page.
func advise(b []byte, advice int) bool {
	w := wholePages(b)
	return len(w) == 0 || unix.Madvise(w, advice) == nil
}

// wholePages returns the whole pages inside b (madvise takes whole pages; the partial pages at either end are left
// as they are).
func wholePages(b []byte) []byte {
	pg := os.Getpagesize()
	if len(b) < pg {
		return nil
	}
	lo := (pg - int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))%uintptr(pg))) % pg
	hi := len(b) - (len(b)-lo)%pg
	if hi <= lo {
		return nil
	}
	return b[lo:hi]
}
