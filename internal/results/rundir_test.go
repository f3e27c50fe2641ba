package results

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"
)

var fixedTime = time.Date(2026, 11, 14, 14, 30, 25, 0, time.UTC)

func TestNewRunDirCollision(t *testing.T) {
	root := filepath.Join(t.TempDir(), "results")
	want := []string{"20261114_143025_iter1_rank0", "20261114_143025_iter1_rank0_2", "20261114_143025_iter1_rank0_3"}
	for _, w := range want {
		dir, err := NewRunDir(root, "iter1_rank0", fixedTime)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(dir) != w {
			t.Errorf("NewRunDir = %s, want %s", filepath.Base(dir), w)
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Errorf("%s was not created as a directory: %v", dir, err)
		}
	}
}

func TestNewRunDirConcurrent(t *testing.T) {
	root := t.TempDir()
	const n = 16
	dirs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			dirs[i], errs[i] = NewRunDir(root, "same", fixedTime)
		})
	}
	close(start)
	wg.Wait()
	seen := map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if seen[dirs[i]] {
			t.Errorf("two runs got the same directory %s", dirs[i])
		}
		seen[dirs[i]] = true
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != n {
		t.Errorf("%d directories created, want %d", len(entries), n)
	}
}

func TestNewRunDirSanitizesName(t *testing.T) {
	dir, err := NewRunDir(t.TempDir(), "../../etc/passwd x", fixedTime)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := filepath.Base(dir), "20261114_143025_etc_passwd_x"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestUpdateLatest(t *testing.T) {
	root := t.TempDir()
	a, _ := NewRunDir(root, "a", fixedTime)
	b, _ := NewRunDir(root, "b", fixedTime.Add(time.Second))
	for _, dir := range []string{a, b} {
		if err := UpdateLatest(root, dir); err != nil {
			t.Fatal(err)
		}
		target, err := os.Readlink(filepath.Join(root, LatestName))
		if err != nil {
			t.Fatal(err)
		}
		if target != filepath.Base(dir) {
			t.Errorf("latest -> %s, want the relative %s", target, filepath.Base(dir))
		}
		if _, err := os.Stat(filepath.Join(root, LatestName, ".")); err != nil {
			t.Errorf("latest does not resolve: %v", err)
		}
	}
	// No temporary links are left behind.
	entries, _ := os.ReadDir(root)
	if len(entries) != 3 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("root holds %v, want the two runs and latest", names)
	}
}

func TestUpdateLatestConcurrent(t *testing.T) {
	root := t.TempDir()
	var dirs []string
	for i := range 8 {
		d, err := NewRunDir(root, "r", fixedTime.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(dirs))
	for i, d := range dirs {
		wg.Go(func() { errs[i] = UpdateLatest(root, d) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	target, err := os.Readlink(filepath.Join(root, LatestName))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range dirs {
		found = found || filepath.Base(d) == target
	}
	if !found {
		t.Errorf("latest -> %s, not one of the runs", target)
	}
}

func TestUpdateLatestRefusesRealDirectory(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, LatestName), 0o755); err != nil {
		t.Fatal(err)
	}
	d, _ := NewRunDir(root, "x", fixedTime)
	if err := UpdateLatest(root, d); err == nil {
		t.Error("UpdateLatest replaced a real directory named latest")
	}
}

func TestRunName(t *testing.T) {
	tests := []struct {
		name  string
		paths []string
		want  string
	}{
		{"none", nil, "run"},
		{"iteration layout", []string{"outputs/memory_snapshot/iteration_1/rank0_memory_snapshot.pickle"}, "iter1_rank0"},
		{"step layout", []string{"snap/step_000000000010/000007_step_10.pickle"}, "step10_rank7"},
		{"step file without step dir", []string{"000003_step_20.pickle"}, "step20_rank3"},
		{"plain file", []string{"/data/Constructor-Sun__code_location__memory_snapshot.pickle"}, "Constructor-Sun__code_location__memory_snapshot"},
		{"short rank form, as the report reads it", []string{"tracer/run_r1_small.json"}, "rank1"},
		{"rank in file only", []string{"dump/rank12_memory_snapshot.pickle"}, "rank12"},
		{"gz timeline", []string{"prof/trace.memory_timeline.json.gz"}, "trace.memory_timeline"},
		{"odd characters", []string{"my run (copy)/snap shot#1.pickle"}, "snap_shot_1"},
		{"eight ranks", ranks("iteration_1/rank%d_memory_snapshot.pickle", 8), "iter1_8ranks"},
		{"steps of one rank", []string{"step_000000000010/000000_step_10.pickle", "step_000000000020/000000_step_20.pickle"}, "step10-20_rank0"},
		{"ranks and iterations", []string{"iteration_1/rank0_memory_snapshot.pickle", "iteration_1/rank1_memory_snapshot.pickle",
			"iteration_3/rank0_memory_snapshot.pickle", "iteration_3/rank1_memory_snapshot.pickle"}, "iter1-3_2ranks"},
		{"ranks without iterations", []string{"rank0.pickle", "rank1.pickle", "rank2.pickle"}, "3ranks"},
		{"common stem", []string{"a/snapshot_before.pickle", "b/snapshot_after.pickle"}, "snapshot_2inputs"},
		{"nothing in common", []string{"x.pickle", "y.pickle"}, "2inputs"},
		{"mixed layouts", []string{"iteration_1/rank0_memory_snapshot.pickle", "other.pickle"}, "2inputs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RunName(tt.paths); got != tt.want {
				t.Errorf("RunName(%q) = %q, want %q", tt.paths, got, tt.want)
			}
		})
	}
}

func ranks(format string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, filepath.FromSlash(fmt.Sprintf(format, i)))
	}
	return out
}

func TestSanitizeName(t *testing.T) {
	tests := []struct{ in, want string }{
		{"iter1_rank0", "iter1_rank0"},
		{"a b/c", "a_b_c"},
		{"...", "run"},
		{"", "run"},
		{"latest", "run"},
		{"été", "t"},
		{string(make([]byte, 200)), "run"},
	}
	for _, tt := range tests {
		if got := SanitizeName(tt.in); got != tt.want {
			t.Errorf("SanitizeName(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	long := SanitizeName(string(bytesOf('a', 300)))
	if len(long) != maxNameLen {
		t.Errorf("long name kept %d characters, want %d", len(long), maxNameLen)
	}
}

func bytesOf(c byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return b
}

// TestSummaryName: a summary's name adds only what the directories say and the base name does not, then a
// digest of the input's absolute path: inputs of one base name in two folders (two runs of one iteration) get
// two names, and the same input, however it is spelled, gets its own name again.
func TestSummaryName(t *testing.T) {
	digest := regexp.MustCompile(`^(.*)\.([0-9a-f]{16})\.summary\.msgpack$`)
	for _, tc := range []struct{ path, want string }{
		{"dump/iteration_2/rank0_memory_snapshot.pickle", "iter2_rank0_memory_snapshot.pickle"},
		{"rank3_memory_snapshot.pickle", "rank3_memory_snapshot.pickle"},
		{"snapshots/rank_5/snap.pickle.gz", "rank5_snap.pickle.gz"},
		{"step_000000000010/000007_step_10.pickle", "000007_step_10.pickle"}, // the base name says both
		{"llama1b-bf16-b4-s2048-snap.pickle.gz", "llama1b-bf16-b4-s2048-snap.pickle.gz"},
	} {
		m := digest.FindStringSubmatch(SummaryName(tc.path))
		if m == nil || m[1] != tc.want {
			t.Errorf("SummaryName(%q) = %q, want %q.<16 hex digits>.summary.msgpack", tc.path, SummaryName(tc.path), tc.want)
		}
	}
	a, b := SummaryName("runA/iteration_2/rank0_memory_snapshot.pickle"), SummaryName("runB/iteration_2/rank0_memory_snapshot.pickle")
	if a == b {
		t.Errorf("two runs' rank 0 of iteration 2 share the summary name %s", a)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	if abs := SummaryName(filepath.Join(wd, "runA", ".", "iteration_2", "rank0_memory_snapshot.pickle")); abs != a {
		t.Errorf("one input, two spellings: %s and %s", a, abs)
	}
}
