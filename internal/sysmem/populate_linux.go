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
func Populate(b []byte) bool {
	pg := os.Getpagesize()
	if len(b) < pg {
		return true
	}
	// madvise takes whole pages; the partial pages at either end are left to the writer.
	lo := (pg - int(uintptr(unsafe.Pointer(unsafe.SliceData(b)))%uintptr(pg))) % pg
	hi := len(b) - (len(b)-lo)%pg
	if hi <= lo {
		return true
	}
	return unix.Madvise(b[lo:hi], unix.MADV_POPULATE_WRITE) == nil
}
