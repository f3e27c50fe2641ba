// Package testutil holds helpers shared by memscan's tests.
package testutil

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/memscan/memscan/internal/gen"
	"github.com/memscan/memscan/internal/realsnap"
	"github.com/memscan/memscan/internal/snapbuild"
	"github.com/memscan/memscan/load"
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

// DecodeGPURun decodes one of the shared H200 runs (../shared/gpu_runs), skipping the test when the shared data is
// absent.
func DecodeGPURun(t testing.TB, name string) *load.Input {
	t.Helper()
	in, err := load.DecodeFile(context.Background(), filepath.Join(realsnap.SharedDir(t, "gpu_runs"), name))
	if err != nil {
		t.Fatal(err)
	}
	return in
}

// Input wraps a built snapshot as a decoded input named path.
func Input(b *snapbuild.SnapBuilder, path string) *load.Input {
	return &load.Input{Path: path, Format: "pickle-v4", Snapshot: b.S}
}

// Generated writes the snapshot cfg describes (package gen) and decodes it, as memscan reads a file.
func Generated(t testing.TB, cfg gen.Config) *load.Input {
	t.Helper()
	var buf bytes.Buffer
	if _, err := gen.Write(&buf, cfg); err != nil {
		t.Fatal(err)
	}
	in, err := load.Decode(context.Background(), "gen.pickle", &buf)
	if err != nil {
		t.Fatal(err)
	}
	return in
}
