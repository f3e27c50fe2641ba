//go:build unix

package inputfile

import (
	"os"
	"syscall"
)

// openNonBlocking opens path read-only with O_NONBLOCK: opening a FIFO that has no writer then returns at once
// (a blocking open waits for a writer, forever if none comes). On a regular file the flag changes nothing.
func openNonBlocking(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
}
