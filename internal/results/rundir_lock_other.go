//go:build !unix

package results

import "io"

// lockDir takes no lock where the platform has no flock; staging directories are then cleaned by age alone.
func lockDir(string) io.Closer { return nil }

func tryLockDir(string) (io.Closer, bool) { return nil, false }
