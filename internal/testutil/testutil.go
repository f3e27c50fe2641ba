// Package testutil holds helpers shared by memscan's tests.
package testutil

import (
	"testing"

	"github.com/memscan/memscan/internal/realsnap"
)

// RepoRoot returns the module root (the directory holding go.mod).
func RepoRoot(t testing.TB) string {
	t.Helper()
	return realsnap.RepoRoot(t)
}

// SharedDir returns the path of the shared data folder that CI places beside the checkout (../shared), or skips
// the test with a clear message when it is absent, so that a fresh clone still passes.
func SharedDir(t testing.TB, sub ...string) string {
	t.Helper()
	return realsnap.SharedDir(t, sub...)
}
