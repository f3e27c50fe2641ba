package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/merge"
	"github.com/memscan/memscan/internal/results"
)

// writeSummaries writes n rank summaries under dir/ranks/ with reserved = (rank+1) GiB, so the expected sum,
// max and stage split are simple formulas: sum = n(n+1)/2 GiB, max at rank n-1.
func writeSummaries(t *testing.T, dir string, n int) {
	t.Helper()
	sub := filepath.Join(dir, "ranks")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for r := range n {
		s := &merge.RankSummary{Kind: merge.SummaryKind, Version: merge.SummaryVersion,
			File: fmt.Sprintf("iteration_1/rank%d_memory_snapshot.pickle", r), Rank: r, Iteration: 1, Stage: -1,
			ReservedBytes: int64(r+1) << 30, AllocatedBytes: int64(r+1) << 29, RequestedBytes: int64(r+1) << 29,
			PeakBytes: int64(r+1) << 29}
		f, err := os.Create(filepath.Join(sub, fmt.Sprintf("rank%d.msgpack", r)))
		if err != nil {
			t.Fatal(err)
		}
		if err := merge.WriteSummary(f, s); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
}

func TestMergeCLI(t *testing.T) {
	dir := t.TempDir()
	const n = 16
	writeSummaries(t, dir, n)
	out := filepath.Join(dir, "results")
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   []string
		stderr   string
		jsonRank int
	}{
		{name: "dir text", args: []string{"merge", "--out", out, "--stages", "4", "--jobs", "3", filepath.Join(dir, "ranks")}, code: exitOK,
			stdout: []string{"Cross-rank memory report: 16 ranks", "Per pipeline stage:", "Outlier ranks"}, stderr: "wrote "},
		{name: "json no write", args: []string{"merge", "--no-files", "--format", "json", filepath.Join(dir, "ranks")}, code: exitOK,
			jsonRank: n},
		{name: "bad format", args: []string{"merge", "--format", "xml", dir}, code: exitUsage, stderr: "--format must be text or json"},
		{name: "no args", args: []string{"merge"}, code: exitUsage, stderr: "give summary files"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, stderr)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout)
				}
			}
			if tc.stderr != "" && !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr %q lacks %q", stderr, tc.stderr)
			}
			if tc.jsonRank > 0 {
				var c merge.CrossRank
				if err := json.Unmarshal([]byte(stdout), &c); err != nil {
					t.Fatal(err)
				}
				// Sum of (r+1) GiB over r < 16 = 136 GiB; the largest is rank 15.
				if c.Ranks != tc.jsonRank || c.Reserved.Sum != 136<<30 || c.Reserved.MaxRank != n-1 {
					t.Errorf("ranks %d sum %d max rank %d", c.Ranks, c.Reserved.Sum, c.Reserved.MaxRank)
				}
			}
		})
	}
	// The run directory holds all three renderings and latest points at it.
	for _, f := range []string{results.FileCrossRankText, results.FileCrossRankJSON, results.FileCrossRankMsgpack} {
		if _, err := os.Stat(filepath.Join(out, "latest", f)); err != nil {
			t.Errorf("run dir: %v", err)
		}
	}
}

// TestMergeCLIPartial checks that an unreadable file is reported and the rest merged, with exit status 3.
func TestMergeCLIPartial(t *testing.T) {
	dir := t.TempDir()
	writeSummaries(t, dir, 4)
	if err := os.WriteFile(filepath.Join(dir, "ranks", "broken.msgpack"), []byte("\xc1garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "merge", "--no-files", filepath.Join(dir, "ranks"))
	if code != exitPartial {
		t.Fatalf("exit %d, want %d; stderr %s", code, exitPartial, stderr)
	}
	if !strings.Contains(stderr, "broken.msgpack") || !strings.Contains(stdout, "4 ranks") {
		t.Errorf("stdout %q stderr %q", stdout, stderr)
	}
}

// TestMergeCLIIterations: a dump folder holding two iterations of 8 ranks. Merged whole, the report says it mixes
// iterations (16 summaries, not 16 ranks); --iteration 2 keeps 8 ranks, and --stages 2 then splits them 4 + 4,
// the world being the highest rank + 1 = 8 rather than the 16 files.
func TestMergeCLIIterations(t *testing.T) {
	dir := t.TempDir()
	for it := 1; it <= 2; it++ {
		for r := range 8 {
			s := &merge.RankSummary{Kind: merge.SummaryKind, Version: merge.SummaryVersion,
				File: fmt.Sprintf("iteration_%d/rank%d_memory_snapshot.pickle", it, r), Rank: r, Iteration: it, Stage: -1,
				ReservedBytes: int64(it) << 30, AllocatedBytes: int64(it) << 29, RequestedBytes: int64(it) << 29}
			f, err := os.Create(filepath.Join(dir, fmt.Sprintf("iter%d_rank%d.msgpack", it, r)))
			if err != nil {
				t.Fatal(err)
			}
			if err := merge.WriteSummary(f, s); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
	}
	code, stdout, stderr := runCLI(t, "merge", "--no-files", dir)
	if code != exitOK || !strings.Contains(stdout, "16 summaries from 2 iterations (1, 2)") || !strings.Contains(stdout, "merge --iteration N") {
		t.Errorf("exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}

	code, stdout, stderr = runCLI(t, "merge", "--no-files", "--format", "json", "--iteration", "2", "--stages", "2", dir)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var c merge.CrossRank
	if err := json.Unmarshal([]byte(stdout), &c); err != nil {
		t.Fatal(err)
	}
	if c.Ranks != 8 || c.Reserved.Sum != 8*(2<<30) || len(c.Iterations) != 0 {
		t.Errorf("ranks %d, reserved sum %d, iterations %v; want 8 ranks of iteration 2 (16 GiB)", c.Ranks, c.Reserved.Sum, c.Iterations)
	}
	if len(c.Stages) != 2 || c.Stages[0].Ranks != 4 || c.Stages[1].Ranks != 4 {
		t.Errorf("stages %+v; want 2 stages of 4 ranks", c.Stages)
	}
	for _, r := range c.Recommendations {
		if r.ID == "mixed-iterations" {
			t.Errorf("one iteration merged, yet %+v", r)
		}
	}

	if code, _, stderr = runCLI(t, "merge", "--no-files", "--iteration", "5", dir); code != exitFailed || !strings.Contains(stderr, "no summary of iteration 5") {
		t.Errorf("--iteration 5: exit %d, stderr %q", code, stderr)
	}
}

// TestMergeHelp: help goes to stdout with exit 0, as for every other command.
func TestMergeHelp(t *testing.T) {
	code, stdout, stderr := runCLI(t, "merge", "--help")
	if code != exitOK || stderr != "" || !strings.Contains(stdout, "Usage: memscan merge") || !strings.Contains(stdout, "--iteration") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestMergeCLIUnknownIteration: summaries whose path named no iteration (−1) can be merged on their own with
// --iteration none; -1 keeps meaning "all"; a bad value is a usage error.
func TestMergeCLIUnknownIteration(t *testing.T) {
	dir := t.TempDir()
	for i, it := range []int{-1, -1, -1, 3, 3} {
		s := &merge.RankSummary{Kind: merge.SummaryKind, Version: merge.SummaryVersion,
			File: fmt.Sprintf("rank%d.pickle", i), Rank: i, Iteration: it, Stage: -1,
			ReservedBytes: int64(i+1) << 30, AllocatedBytes: 1 << 29, RequestedBytes: 1 << 29}
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("s%d.msgpack", i)))
		if err != nil {
			t.Fatal(err)
		}
		if err := merge.WriteSummary(f, s); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	for _, tc := range []struct {
		arg      string
		ranks    int
		reserved int64 // sum of (i+1) GiB over the kept summaries
	}{
		{"none", 3, (1 + 2 + 3) << 30},
		{"3", 2, (4 + 5) << 30},
		{"all", 5, 15 << 30},
		{"-1", 5, 15 << 30},
	} {
		code, stdout, stderr := runCLI(t, "merge", "--no-files", "--format", "json", "--iteration", tc.arg, dir)
		if code != exitOK {
			t.Fatalf("--iteration %s: exit %d: %s", tc.arg, code, stderr)
		}
		var c merge.CrossRank
		if err := json.Unmarshal([]byte(stdout), &c); err != nil {
			t.Fatal(err)
		}
		if c.Ranks != tc.ranks || c.Reserved.Sum != tc.reserved {
			t.Errorf("--iteration %s: %d ranks, reserved %d; want %d and %d", tc.arg, c.Ranks, c.Reserved.Sum, tc.ranks, tc.reserved)
		}
	}
	code, stdout, _ := runCLI(t, "merge", "--no-files", dir)
	if code != exitOK || !strings.Contains(stdout, "none: iteration unknown") {
		t.Errorf("mixed report does not point at --iteration none (exit %d):\n%s", code, stdout)
	}
	if code, _, stderr := runCLI(t, "merge", "--no-files", "--iteration", "x", dir); code != exitUsage || !strings.Contains(stderr, "--iteration") {
		t.Errorf("--iteration x: exit %d, stderr %q", code, stderr)
	}
	if code, stdout, _ := runCLI(t, "merge", "--help"); code != exitOK || !strings.Contains(stdout, "none") {
		t.Errorf("--help does not document --iteration none")
	}
}
