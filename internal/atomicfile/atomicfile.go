// Package atomicfile writes files so that no reader ever sees a partial one: the content goes to a temporary
// file beside the target and is renamed over it only when complete. A full disk, a crash or a kill then leaves
// the previous file (or none), never a truncated one, and two writers of one path leave one whole file.
package atomicfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// Error is a failure to write a file or to make the directory it goes in: what was being done ("writing" when
// empty), the path (when Err does not already name it) and why.
type Error struct {
	Op   string
	Path string
	Err  error
}

func (e *Error) Error() string {
	op := e.Op
	if op == "" {
		op = "writing"
	}
	if e.Path == "" {
		return fmt.Sprintf("%s: %v", op, e.Err)
	}
	return fmt.Sprintf("%s %s: %v", op, e.Path, e.Err)
}
func (e *Error) Unwrap() error { return e.Err }

// Write fills path through fill (buffered) by way of a temporary file in path's directory, renamed over path
// when fill and the writes succeeded; on any failure the temporary file is removed and path is untouched. The
// file gets mode 0644 less the umask, as os.WriteFile would give it. Every failure is an *Error.
func Write(path string, fill func(io.Writer) error) error {
	f, err := create(path)
	if err != nil {
		return newError(path, err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return newError(path, err)
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	if err := fill(bw); err != nil {
		return fail(err)
	}
	if err := bw.Flush(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return newError(path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return newError(path, err)
	}
	return nil
}

// newError words a failure to write path: the operating system's reason without the temporary file's name,
// which would only confuse ("writing out/report.json: no space left on device").
func newError(path string, err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &le):
		err = le.Err
	}
	return &Error{Path: path, Err: err}
}

// WriteBytes writes data to path atomically (see Write).
func WriteBytes(path string, data []byte) error {
	return Write(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// create makes a new hidden file beside path, exclusively, with the mode os.WriteFile would use.
func create(path string) (*os.File, error) {
	dir, base := filepath.Split(path)
	for range 100 {
		name := filepath.Join(dir, "."+base+"."+strconv.FormatUint(rand.Uint64(), 36)+".tmp")
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("no free temporary name beside %s", path)
}
