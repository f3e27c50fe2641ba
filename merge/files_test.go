package merge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
