package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/merge"
)

// writeRankFiles writes n rank summaries as dir/taskTTT/rankRRRRRR.summary.msgpack, per ranks to a task folder,
// rank r reserving (r mod 97 + 1) GiB, and returns their paths in rank order.
func writeRankFiles(t *testing.T, dir string, n, per int) []string {
	t.Helper()
	paths := make([]string, n)
	for r := range n {
		sub := filepath.Join(dir, fmt.Sprintf("task%03d", r/per))
		if r%per == 0 {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		res := int64(r%97+1) << 30
		s := &merge.RankSummary{Kind: merge.SummaryKind, Version: merge.SummaryVersion, Rank: r, Iteration: 10, Stage: -1,
			File: fmt.Sprintf("dump/iteration_10/rank%d_memory_snapshot.pickle", r), Run: "dump/iteration_*/rank*_memory_snapshot.pickle",
			ReservedBytes: res, AllocatedBytes: res / 2, RequestedBytes: res / 2, PeakBytes: res / 2}
		paths[r] = filepath.Join(sub, fmt.Sprintf("rank%06d.summary.msgpack", r))
		f, err := os.Create(paths[r])
		if err != nil {
			t.Fatal(err)
		}
		if err := merge.WriteSummary(f, s); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return paths
}

// mergeJSON runs memscan merge and decodes its JSON report.
func mergeJSON(t *testing.T, wantCode int, args ...string) (*merge.CrossRank, string) {
	t.Helper()
	code, stdout, stderr := runCLI(t, append([]string{"merge", "--no-files", "--format", "json"}, args...)...)
	if code != wantCode {
		t.Fatalf("merge %v: exit %d, want %d; stderr %s", args, code, wantCode, stderr)
	}
	var c merge.CrossRank
	if err := json.Unmarshal([]byte(stdout), &c); err != nil {
		t.Fatal(err)
	}
	return &c, stderr
}

// TestMergeFilesFrom100k is the README's recipe at full size: 100,000 rank summaries in 1,000 task folders,
// merged from a list of their paths (more than an argument list holds), then again per group of folders with
// the groups' reports merged at the end. The flat merge's sums and p99 are worked out here from the generator's
// formula; the hierarchical merge must print the same report. A listed path that does not exist fails alone.
func TestMergeFilesFrom100k(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and merges 100,000 summary files")
	}
	const n, per = 100000, 100
	dir := t.TempDir()
	paths := writeRankFiles(t, dir, n, per)
	list := filepath.Join(dir, "ranks.txt")
	gone := filepath.Join(dir, "task999", "gone.summary.msgpack")
	// Windows line ends and blank lines read too.
	if err := os.WriteFile(list, []byte(strings.Join(paths, "\r\n")+"\r\n\n"+gone+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	flat, stderr := mergeJSON(t, exitPartial, "--files-from", list, "--world", fmt.Sprint(n), "--stages", "8")
	if !strings.Contains(stderr, gone) || !strings.Contains(stderr, "1 of 100001 files or folders could not be read") {
		t.Errorf("stderr %q does not name the missing file", stderr)
	}
	var sum int64
	res := make([]int64, n)
	for r := range n {
		res[r] = int64(r%97+1) << 30
		sum += res[r]
	}
	slices.Sort(res)
	if flat.Ranks != n || flat.Reserved.Sum != sum || flat.Reserved.P99 != res[(n-1)*99/100] || flat.Reserved.Median != res[(n-1)/2] {
		t.Errorf("ranks %d, sum %d (want %d), p99 %d (want %d)", flat.Ranks, flat.Reserved.Sum, sum, flat.Reserved.P99, res[(n-1)*99/100])
	}
	if rs := flat.RankSet; rs.Distinct != n || rs.MissingRanks != 0 || len(rs.Duplicates) != 0 || len(flat.Stages) != 8 {
		t.Errorf("rank set %+v, %d stages", rs, len(flat.Stages))
	}

	// Per group of 100 folders (a node's ranks), each written as a run; then the runs' reports merged.
	out := filepath.Join(dir, "merged")
	for g := range n / per / 100 {
		groupList := filepath.Join(dir, fmt.Sprintf("group%d.txt", g))
		if err := os.WriteFile(groupList, []byte(strings.Join(paths[g*per*100:(g+1)*per*100], "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		if code, _, stderr := runCLI(t, "merge", "--out", out, "--name", fmt.Sprintf("group%d", g), "--format", "json", "--files-from", groupList); code != exitOK {
			t.Fatalf("group %d: exit %d: %s", g, code, stderr)
		}
	}
	tree, _ := mergeJSON(t, exitOK, "--world", fmt.Sprint(n), "--stages", "8", out)
	a, _ := json.Marshal(flat)
	b, _ := json.Marshal(tree)
	if string(a) != string(b) {
		t.Errorf("the merge of the groups' reports differs from the flat merge (%d vs %d bytes of JSON)", len(a), len(b))
	}
}

// TestSummaryOnlyTwoRuns: two runs of one iteration summarized into one folder. Their inputs share a base name
// (runA/… and runB/…/iteration_2/rank0_memory_snapshot.pickle), which used to write one summary over the other;
// now both are kept, and the merge names the two runs instead of counting rank 0 twice in silence.
func TestSummaryOnlyTwoRuns(t *testing.T) {
	dir := t.TempDir()
	src := fixture(t, "testdata/example/rank0_memory_snapshot.pickle")
	var inputs []string
	for _, run := range []string{"runA", "runB"} {
		for r := range 2 {
			p := filepath.Join(dir, run, "iteration_2", fmt.Sprintf("rank%d_memory_snapshot.pickle", r))
			copyFile(t, src, p)
			inputs = append(inputs, p)
		}
	}
	sums := filepath.Join(dir, "summaries")
	if code, _, stderr := runCLI(t, append([]string{"analyze", "--summary-only", "--quiet", "--out", sums}, inputs...)...); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	entries, err := os.ReadDir(sums)
	if err != nil || len(entries) != 4 {
		t.Fatalf("%d summaries for 4 inputs (%v)", len(entries), err)
	}
	c, _ := mergeJSON(t, exitOK, sums)
	runs := []merge.RunCount{
		{Run: filepath.Join(dir, "runA", "iteration_*", "rank*_memory_snapshot.pickle"), Summaries: 2},
		{Run: filepath.Join(dir, "runB", "iteration_*", "rank*_memory_snapshot.pickle"), Summaries: 2},
	}
	if c.Ranks != 4 || c.RankSet.Distinct != 2 || !slices.Equal(c.RankSet.Runs, runs) || len(c.RankSet.Duplicates) != 0 {
		t.Errorf("%d summaries of %d ranks, runs %+v (want %+v)", c.Ranks, c.RankSet.Distinct, c.RankSet.Runs, runs)
	}
	if !slices.ContainsFunc(c.Recommendations, func(f findings.Finding) bool { return f.ID == findings.MixedRuns }) {
		t.Errorf("no mixed-runs finding: %+v", c.Recommendations)
	}
	// Summarizing run A again replaces its own two summaries.
	if code, _, stderr := runCLI(t, append([]string{"analyze", "--summary-only", "--quiet", "--out", sums}, inputs[:2]...)...); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if again, _ := os.ReadDir(sums); len(again) != 4 {
		t.Errorf("%d summaries after summarizing run A again, want 4", len(again))
	}
}

// TestMergeDuplicateText: a summary given twice and a missing rank are named in the text report, with the file
// to remove.
func TestMergeDuplicateText(t *testing.T) {
	dir := t.TempDir()
	paths := writeRankFiles(t, dir, 6, 6)
	copyFile(t, paths[2], filepath.Join(dir, "copy", "rank2.summary.msgpack"))
	if err := os.Remove(paths[4]); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "merge", "--no-files", "--world", "8", dir)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"Cross-rank memory report: 6 summaries of 5 ranks",
		"Rank set: world 8 (--world); 5 distinct ranks; 3 missing: 4, 6-7",
		"rank 2 of iteration 10 ×2: " + filepath.Join(dir, "copy", "rank2.summary.msgpack") + ", " + paths[2],
		"Some ranks are given more than once",
		"Some ranks have no summary: 3 of the world of 8 ranks have no summary: 4, 6-7",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
}
