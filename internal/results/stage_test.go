package results

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/memscan/memscan/report"
)

// TestStagedRunDir checks that a run is visible in the results root only under its final name once committed:
// while written it is hidden, two committed in the same second get distinct names, and a discarded one (a
// write that failed) leaves nothing behind.
func TestStagedRunDir(t *testing.T) {
	root := filepath.Join(t.TempDir(), "results")
	names := func() []string {
		entries, err := os.ReadDir(root)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			out = append(out, e.Name())
		}
		return out
	}
	a, err := NewStagedRunDir(root, "iter1 rank0", fixedTime)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(a.Dir, FileSummary), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := names(); len(got) != 1 || got[0][0] != '.' {
		t.Errorf("while written, the root holds %q; want one hidden entry", got)
	}
	b, err := NewStagedRunDir(root, "iter1 rank0", fixedTime)
	if err != nil {
		t.Fatal(err)
	}
	dirA, err := a.Commit()
	if err != nil {
		t.Fatal(err)
	}
	dirB, err := b.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(dirA) != "20261114_143025_iter1_rank0" || filepath.Base(dirB) != "20261114_143025_iter1_rank0_2" {
		t.Errorf("committed as %s and %s", dirA, dirB)
	}
	if _, err := os.Stat(filepath.Join(dirA, FileSummary)); err != nil {
		t.Errorf("the committed run lost its file: %v", err)
	}
	if fi, err := os.Stat(dirA); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("committed run mode %v, %v; want 0755 like NewRunDir's", fi.Mode().Perm(), err)
	}

	// A write that fails (here: cancelled) is discarded: the root is as it was.
	c, err := NewStagedRunDir(root, "failed", fixedTime)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Write(ctx, c.Dir, &report.Run{}, WriteOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Write with a cancelled context: %v", err)
	}
	c.Discard()
	if got, want := names(), []string{"20261114_143025_iter1_rank0", "20261114_143025_iter1_rank0_2"}; !slices.Equal(got, want) {
		t.Errorf("after a discarded run the root holds %q, want %q", got, want)
	}
}
