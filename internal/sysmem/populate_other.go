//go:build !linux

package sysmem

// Populate is a no-op here: only Linux can back pages ahead of their first write (see the Linux version). It
// returns false, so that callers stop asking.
func Populate(b []byte) bool { return false }

// PopulateRead is a no-op here (see the Linux version): it returns false.
func PopulateRead(b []byte) bool { return false }

// Release is a no-op here (see the Linux version): it returns false, and the caller copies instead.
func Release(b []byte) bool { return false }
