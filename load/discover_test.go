package load_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/results"
	"github.com/memscan/memscan/load"
)

func TestDiscoverInputs(t *testing.T) {
	dir := t.TempDir()
	touch := func(rel string) string {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("x"), 0o644)
		return p
	}
	r2 := touch("run/iteration_1/rank2_memory_snapshot.pickle")
	r10 := touch("run/iteration_1/rank10_memory_snapshot.pickle")
	step := touch("run/step_000000000010/000003_step_10.pickle")
	tracer := touch("run/tracer_rank0.json")
	logf := touch("run/train.log")
	linked := filepath.Join(dir, "run", "iteration_1", "rank3_memory_snapshot.pickle")
	if err := os.Symlink(r2, linked); err != nil {
		t.Fatal(err)
	}
	os.Symlink(filepath.Join(dir, "run"), filepath.Join(dir, "run", "loop_snapshot")) // a link to a directory is not followed
	touch("run/config.json")
	touch("run/model.pt")
	touch("run/.hidden/rank0_memory_snapshot.pickle")
	touch("run/results/20250101_000000_a/" + results.FileSummary)
	touch("run/results/20250101_000000_a/" + results.FileMsgpack)
	touch("run/results/20250101_000000_a/rank0_memory_snapshot.pickle")
	// merge and compare run directories are outputs too (their JSON names hold "rank" and "memory" hints).
	touch("run/results/20250101_000001_merge/" + results.FileCrossRankJSON)
	touch("run/results/20250101_000001_merge/" + results.FileCrossRankMsgpack)
	touch("run/results/20250101_000001_merge/rank_memory_cross_rank.json")
	touch("run/results/20250101_000002_cmp/" + results.FileCompareJSON)
	touch("run/results/20250101_000002_cmp/" + results.FileCompareMarkdown)
	touch("run/results/20250101_000002_cmp/rank0_memory_snapshot.json")

	files, failures := load.Discover([]string{filepath.Join(dir, "run"), r2, filepath.Join(dir, "run", "iteration_1", "*.pickle")},
		load.DiscoverOptions{OutRoot: filepath.Join(dir, "elsewhere"), SkipDir: results.IsRunDir})
	// Natural order: rank2 < rank3 (the link) < rank10, then step_..., tracer_... and train.log by letters.
	want := []string{r2, linked, r10, step, tracer, logf}
	if strings.Join(files, "\n") != strings.Join(want, "\n") {
		t.Errorf("discovered\n%s\nwant\n%s", strings.Join(files, "\n"), strings.Join(want, "\n"))
	}
	if len(failures) != 0 {
		t.Errorf("failures %+v", failures)
	}
}
