// Package testutil holds helpers shared by memscan's tests.
package testutil

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// RepoRoot returns the module root (the directory holding go.mod).
func RepoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("testutil: cannot locate source file")
	}
	// This file is <root>/internal/testutil/testutil.go.
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// SharedDir returns the path of the shared data folder that CI places beside the checkout (../shared), or skips
// the test with a clear message when it is absent, so that a fresh clone still passes.
func SharedDir(t testing.TB, sub ...string) string {
	t.Helper()
	dir := os.Getenv("MEMSCAN_SHARED")
	if dir == "" {
		dir = filepath.Join(RepoRoot(t), "..", "shared")
	}
	p := filepath.Join(append([]string{dir}, sub...)...)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared test data not found at %s (set MEMSCAN_SHARED or place it beside the checkout): %v", p, err)
	}
	return p
}
