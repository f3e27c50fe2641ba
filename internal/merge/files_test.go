package merge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestMergeFilesFailureOrder: with several workers, unreadable files are reported in the order of the file list
// on every run, and the good files still merge (ranks 0..5 at 1..6 GiB reserved, so the sum is 21 GiB).
func TestMergeFilesFailureOrder(t *testing.T) {
	dir := t.TempDir()
	var files, bad []string
	for i := range 12 {
		p := filepath.Join(dir, fmt.Sprintf("f%02d.summary.msgpack", i))
		if i%2 == 1 {
			if err := os.WriteFile(p, []byte("not msgpack"), 0o644); err != nil {
				t.Fatal(err)
			}
			bad = append(bad, p)
		} else {
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			s := &RankSummary{Kind: SummaryKind, Version: SummaryVersion, File: p, Rank: i / 2, Iteration: 1, Stage: -1,
				ReservedBytes: int64(i/2+1) << 30}
			if err := WriteSummary(f, s); err != nil {
				t.Fatal(err)
			}
			f.Close()
		}
		files = append(files, p)
	}
	for run := range 20 {
		res, failures, err := MergeFiles(context.Background(), files, FilesOptions{Jobs: 4, Iterations: AllIterations})
		if err != nil {
			t.Fatal(err)
		}
		if len(failures) != len(bad) {
			t.Fatalf("run %d: %d failures, want %d", run, len(failures), len(bad))
		}
		for i, err := range failures {
			if !strings.Contains(err.Error(), bad[i]) {
				t.Fatalf("run %d: failure %d is %v, want one naming %s", run, i, err, bad[i])
			}
		}
		if res.Ranks != 6 || res.Reserved.Sum != 21<<30 {
			t.Fatalf("run %d: %d ranks, reserved sum %d; want 6 and %d", run, res.Ranks, res.Reserved.Sum, int64(21)<<30)
		}
	}
}

func TestParseIterationFilter(t *testing.T) {
	tests := []struct {
		in    string
		keeps []int
		drops []int
		err   bool
	}{
		{"all", []int{-1, 0, 7}, nil, false},
		{"-1", []int{-1, 3}, nil, false},
		{"none", []int{-1}, []int{0, 1}, false},
		{" 5 ", []int{5}, []int{-1, 4}, false},
		{"x", nil, nil, true},
		{"-2", nil, nil, true},
	}
	for _, tc := range tests {
		f, err := ParseIterationFilter(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("%q: err %v", tc.in, err)
			continue
		}
		for _, it := range tc.keeps {
			if !f.Keeps(it) {
				t.Errorf("%q drops iteration %d", tc.in, it)
			}
		}
		for _, it := range tc.drops {
			if f.Keeps(it) {
				t.Errorf("%q keeps iteration %d", tc.in, it)
			}
		}
	}
}

// TestMergeFilesDerivedWorld: with --stages and no --world the world is the highest rank + 1 among the summaries
// the iteration filter keeps, whatever the number of workers; the report is the one a merge given that world
// writes. The folder holds ranks 0-11 of iteration 1 and ranks 0-7 of iteration 2.
func TestMergeFilesDerivedWorld(t *testing.T) {
	var sums []*RankSummary
	for it, ranks := range map[int]int{1: 12, 2: 8} {
		for r := range ranks {
			sums = append(sums, &RankSummary{Kind: SummaryKind, Version: SummaryVersion, Rank: r, Iteration: it, Stage: -1,
				File: fmt.Sprintf("iteration_%d/rank%d_memory_snapshot.pickle", it, r), ReservedBytes: int64(r+1) << 30})
		}
	}
	files := writeSummaryFiles(t, t.TempDir(), sums)
	slices.Sort(files)
	tests := []struct {
		iterations IterationFilter
		world      int
		// stageRanks is each stage's rank count: two stages of world/2 ranks.
		stageRanks []int
	}{
		{IterationFilter{want: 2}, 8, []int{4, 4}},
		{IterationFilter{want: 1}, 12, []int{6, 6}},
		{AllIterations, 12, []int{6 + 6, 6 + 2}}, // iteration 2's ranks 0-5 in stage 0, 6-7 in stage 1
	}
	for _, tc := range tests {
		for _, jobs := range []int{1, 4} {
			name := fmt.Sprintf("iteration %s, %d jobs", tc.iterations, jobs)
			got, failures, err := MergeFiles(context.Background(), files, FilesOptions{Options: Options{Stages: 2}, Jobs: jobs, Iterations: tc.iterations})
			if err != nil || len(failures) > 0 {
				t.Fatalf("%s: %v %v", name, err, failures)
			}
			var ranks []int
			for _, st := range got.Stages {
				ranks = append(ranks, st.Ranks)
			}
			if !slices.Equal(ranks, tc.stageRanks) {
				t.Errorf("%s: stage rank counts %v, want %v", name, ranks, tc.stageRanks)
			}
			for _, r := range got.Rows {
				if want := r.Rank / (tc.world / 2); r.Stage != want {
					t.Errorf("%s: rank %d of iteration %d in stage %d, want %d", name, r.Rank, r.Iteration, r.Stage, want)
				}
			}
			given, _, err := MergeFiles(context.Background(), files, FilesOptions{Options: Options{Stages: 2, World: tc.world}, Jobs: 1, Iterations: tc.iterations})
			if err != nil || !reflect.DeepEqual(got, asIfGiven(got, given)) {
				t.Errorf("%s: report differs from the merge given world %d (%v)", name, tc.world, err)
			}
		}
	}
}
