package load_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/memscan/memscan/load"
)

// TestDiscoverFollowsLinks checks discovery through symbolic links: a rank folder that is a link (the report got
// "no snapshot files found" for one), memscan's own `latest`, a link loop that must end, and a broken link named
// like a snapshot, which is a failure rather than silence.
func TestDiscoverFollowsLinks(t *testing.T) {
	dir := t.TempDir()
	touch := func(rel string) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, rel string) {
		if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(rel))); err != nil {
			t.Fatal(err)
		}
	}
	touch("storage/rank0/rank0_memory_snapshot.pickle")
	touch("storage/rank1/rank1_memory_snapshot.pickle")
	if err := os.MkdirAll(filepath.Join(dir, "run/iteration_1"), 0o755); err != nil {
		t.Fatal(err)
	}
	link(filepath.Join(dir, "storage/rank0"), "run/iteration_1/rank0")
	link(filepath.Join(dir, "storage/rank1"), "run/iteration_1/rank1")
	link("..", "run/iteration_1/loop")
	link(filepath.Join(dir, "gone.pickle"), "run/iteration_1/rank2_memory_snapshot.pickle")
	link(filepath.Join(dir, "gone.yaml"), "run/iteration_1/config.yaml") // not an input's name: not reported
	link("run", "latest")                                                // relative, as memscan writes it

	for _, arg := range []string{filepath.Join(dir, "run"), filepath.Join(dir, "latest")} {
		t.Run(filepath.Base(arg), func(t *testing.T) {
			d := load.Discover([]string{arg}, load.DiscoverOptions{})
			files, failures := d.Files, d.Failures
			want := []string{
				filepath.Join(arg, "iteration_1/rank0/rank0_memory_snapshot.pickle"),
				filepath.Join(arg, "iteration_1/rank1/rank1_memory_snapshot.pickle"),
			}
			if !slices.Equal(files, want) {
				t.Errorf("files %q, want %q", files, want)
			}
			broken := filepath.Join(arg, "iteration_1/rank2_memory_snapshot.pickle")
			if len(failures) != 1 || failures[0].File != broken || failures[0].Error != "cannot read: no such file or directory" {
				t.Errorf("failures %+v, want one for %s", failures, broken)
			}
		})
	}
}
