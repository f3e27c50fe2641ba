//go:build unix

package results

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// lockDir takes an exclusive lock on the directory dir for as long as the returned file stays open: the kernel
// drops it when the process ends, however it ends. nil where the file system takes no locks.
func lockDir(dir string) io.Closer {
	f, err := os.Open(dir)
	if err != nil {
		return nil
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil
	}
	return f
}

// tryLockDir tries to lock dir without waiting: held is the lock when taken (no live run holds dir); lockable
// is false where the file system takes no locks at all, so that a held lock proves nothing.
func tryLockDir(dir string) (held io.Closer, lockable bool) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, false
	}
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	switch {
	case err == nil:
		return f, true
	case errors.Is(err, syscall.EWOULDBLOCK):
		f.Close()
		return nil, true
	}
	f.Close()
	return nil, false
}
