//go:build !unix

package inputfile

import "os"

// openNonBlocking opens path read-only; platforms without O_NONBLOCK have no FIFOs that block an open.
func openNonBlocking(path string) (*os.File, error) { return os.Open(path) }
