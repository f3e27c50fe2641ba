package load_test

import (
	"os"
	"path/filepath"
	"reflect"
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

	d := load.Discover([]string{filepath.Join(dir, "run"), r2, filepath.Join(dir, "run", "iteration_1", "*.pickle")},
		load.DiscoverOptions{OutRoot: filepath.Join(dir, "elsewhere"), SkipDir: results.IsRunDir})
	files, failures := d.Files, d.Failures
	// Natural order: rank2 < rank3 (the link) < rank10, then step_..., tracer_... and train.log by letters.
	want := []string{r2, linked, r10, step, tracer, logf}
	if strings.Join(files, "\n") != strings.Join(want, "\n") {
		t.Errorf("discovered\n%s\nwant\n%s", strings.Join(files, "\n"), strings.Join(want, "\n"))
	}
	if len(failures) != 0 {
		t.Errorf("failures %+v", failures)
	}
}

// touchAll creates empty files at the slash-separated paths below dir and returns their full paths in order.
func touchAll(t *testing.T, dir string, rels ...string) []string {
	t.Helper()
	var out []string
	for _, rel := range rels {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// TestDiscoverCompressed: a folder's gzip-compressed snapshots, timelines and logs are found like uncompressed
// ones (a folder of *.pickle.gz used to yield nothing, with exit status 0), and a compressed file not named like
// an input is still skipped, and said to be.
func TestDiscoverCompressed(t *testing.T) {
	dir := t.TempDir()
	want := touchAll(t, dir,
		"rank0.pickle.gz", "rank1.pkl.gz", "rank2_memory_snapshot.pickle.GZ", "rank3_memory_timeline.json.gz", "train.log.gz")
	touchAll(t, dir, "checkpoint.tar.gz", "config.json.gz")
	d := load.Discover([]string{dir}, load.DiscoverOptions{})
	if strings.Join(d.Files, "\n") != strings.Join(want, "\n") {
		t.Errorf("discovered\n%s\nwant\n%s", strings.Join(d.Files, "\n"), strings.Join(want, "\n"))
	}
	wantSkip := []load.Skipped{{Dir: dir, Reason: load.SkipName, Count: 2, Examples: []string{"checkpoint.tar.gz", "config.json.gz"}}}
	if !reflect.DeepEqual(d.Skipped, wantSkip) {
		t.Errorf("skipped %+v, want %+v", d.Skipped, wantSkip)
	}
}

// TestDiscoverArgumentOrder: inputs come in the order of the arguments that named them, each directory's and
// glob's files in natural order among themselves, and a file named twice keeps its first place.
func TestDiscoverArgumentOrder(t *testing.T) {
	dir := t.TempDir()
	p := touchAll(t, dir, "b/rank10.pickle", "a/rank2.pickle", "a/rank1.pickle", "c/rank20.pickle", "c/rank3.pickle", "z.pickle")
	d := load.Discover([]string{p[0], filepath.Join(dir, "a"), filepath.Join(dir, "c", "*.pickle"), p[5], p[1]}, load.DiscoverOptions{})
	want := []string{p[0], p[2], p[1], p[4], p[3], p[5]}
	if strings.Join(d.Files, "\n") != strings.Join(want, "\n") {
		t.Errorf("discovered\n%s\nwant\n%s", strings.Join(d.Files, "\n"), strings.Join(want, "\n"))
	}
	if len(d.Failures) != 0 || len(d.Skipped) != 0 {
		t.Errorf("failures %+v, skipped %+v", d.Failures, d.Skipped)
	}
}

// TestDiscoverSaysWhatItSkipped: a walk reports, per reason, how many entries it passed over and the first few;
// hidden files say nothing, and a folder whose only files are skipped fails with the skip notes beside it.
func TestDiscoverSaysWhatItSkipped(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "run", "results")
	touchAll(t, dir,
		"run/README", "run/config.yaml", "run/model.pt", "run/notes.md", "run/.DS_Store",
		"run/.git/HEAD", "run/__pycache__/x.pyc",
		"run/20250101_000000_a/"+results.FileSummary, "run/20250101_000000_a/"+results.FileMsgpack,
		"run/rank0_memory_snapshot.pickle", "run/results/x/rank0.pickle", "only/model.pt")
	run := filepath.Join(dir, "run")
	d := load.Discover([]string{run, filepath.Join(dir, "only")}, load.DiscoverOptions{OutRoot: out, SkipDir: results.IsRunDir})
	if want := []string{filepath.Join(run, "rank0_memory_snapshot.pickle")}; !reflect.DeepEqual(d.Files, want) {
		t.Errorf("files %q, want %q", d.Files, want)
	}
	wantSkip := []load.Skipped{
		{Dir: run, Reason: load.SkipName, Count: 4, Examples: []string{"README", "config.yaml", "model.pt"}},
		{Dir: run, Reason: load.SkipOutput, Count: 2, Examples: []string{"20250101_000000_a", "results"}},
		{Dir: run, Reason: load.SkipHidden, Count: 2, Examples: []string{".git", "__pycache__"}},
		{Dir: filepath.Join(dir, "only"), Reason: load.SkipName, Count: 1, Examples: []string{"model.pt"}},
	}
	if !reflect.DeepEqual(d.Skipped, wantSkip) {
		t.Errorf("skipped\n%+v\nwant\n%+v", d.Skipped, wantSkip)
	}
	wantLines := []string{
		run + ": skipped 4 files not named like an input (name one to read it anyway): README, config.yaml, model.pt, ...",
		run + ": skipped 2 folders of memscan's own results: 20250101_000000_a, results",
		run + ": skipped 2 hidden or tool folders: .git, __pycache__",
		filepath.Join(dir, "only") + ": skipped 1 file not named like an input (name one to read it anyway): model.pt",
	}
	for i, s := range d.Skipped {
		if got := s.String(); i < len(wantLines) && got != wantLines[i] {
			t.Errorf("line %d:\n got %s\nwant %s", i, got, wantLines[i])
		}
	}
	if len(d.Failures) != 1 || d.Failures[0].File != filepath.Join(dir, "only") {
		t.Errorf("failures %+v, want the folder with no input", d.Failures)
	}
}
