// Package inputfile is the one way memscan opens a file it reads (an input, a config, a run's report, a rank
// summary): a regular file only, opened without ever blocking (a FIFO without a writer blocked the open for
// ever, SIGINT included), and read whole only through a limit of max+1 bytes (a device such as /dev/zero has
// no size and never ends).
//
// It is a leaf: it imports only the standard library and units, so that the decoders and the packages that
// must not reach them (merge, compare) open files alike.
package inputfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/memscan/memscan/internal/units"
)

// ErrNotRegular is wrapped by the error for a path that names a named pipe, a device, a socket or a directory
// where memscan reads a file: reading a pipe can block forever and a device (/dev/zero) never ends.
var ErrNotRegular = errors.New("not a regular file")

// NotRegularError names what a path was instead of a regular file.
type NotRegularError struct {
	Path string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s: %s, not a regular file", e.Path, describeMode(e.Mode))
}

func (e *NotRegularError) Unwrap() error { return ErrNotRegular }

func describeMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a directory"
	}
	return "not a plain file (" + m.Type().String() + ")"
}

// OpenRegular opens path for reading if it is a regular file (after symbolic links), and fails with a
// *NotRegularError otherwise. The open itself never blocks: where the platform allows it, the file is opened
// non-blocking, so a FIFO without a writer is refused at once instead of hanging the open.
func OpenRegular(path string) (*os.File, fs.FileInfo, error) {
	f, err := openNonBlocking(path)
	if err != nil {
		// A socket cannot be opened at all (ENXIO): say what it is rather than "no such device or address".
		if fi, serr := os.Stat(path); serr == nil && !fi.Mode().IsRegular() {
			return nil, nil, &NotRegularError{Path: path, Mode: fi.Mode()}
		}
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, &NotRegularError{Path: path, Mode: fi.Mode()}
	}
	return f, fi, nil
}

// FileTooLargeError is a file past the size limit of what it holds (a config file, a rule file).
type FileTooLargeError struct {
	Path  string
	What  string // "a static config", "a rule file", ...
	Limit int64
	// Size is the file's size when its metadata tells it, −1 when the file only proved larger by reading.
	Size int64
}

func (e *FileTooLargeError) Error() string {
	if e.Size >= 0 {
		return fmt.Sprintf("%s: %s is larger than the %s limit for %s", e.Path, SizeWords(e.Size), SizeWords(e.Limit), e.What)
	}
	return fmt.Sprintf("%s: larger than the %s limit for %s", e.Path, SizeWords(e.Limit), e.What)
}

func (e *FileTooLargeError) Unwrap() error { return ErrTooLarge }

// ErrTooLarge is wrapped by a *FileTooLargeError.
var ErrTooLarge = errors.New("file larger than its limit")

// SizeWords renders a byte count readably and exactly, as size limits are worded.
func SizeWords(n int64) string { return fmt.Sprintf("%s (%d bytes)", units.Bytes(n), n) }

// ReadFile reads a whole regular file of at most limit bytes; what names the kind of file in the size error.
// It reads through a limit of limit+1 bytes whatever the file's metadata says, since a size of 0 proves
// nothing (files in /proc, a file that grows while read), and refuses at once a file whose size is already
// over the limit, so a sparse 3 GB file costs nothing.
func ReadFile(path, what string, limit int64) ([]byte, error) {
	f, fi, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi.Size() > limit {
		return nil, &FileTooLargeError{Path: path, What: what, Limit: limit, Size: fi.Size()}
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, &FileTooLargeError{Path: path, What: what, Limit: limit, Size: -1}
	}
	return data, nil
}
