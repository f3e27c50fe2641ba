package merge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscan/memscan/analyze"
)

// TestMergeOverflow checks that byte counts whose sum over the ranks would pass 2^63−1 stop the merge with an
// error naming the field (a wrapped sum would print a negative or plausible wrong total), both when one
// summary is added and when partial merges are joined, and that sums that fit are exact.
func TestMergeOverflow(t *testing.T) {
	sum := func(rank int, reserved int64, cats ...analyze.CategoryStat) *RankSummary {
		return &RankSummary{Kind: SummaryKind, Version: SummaryVersion, File: fmt.Sprintf("rank%d_memory_snapshot.pickle", rank),
			Rank: rank, Stage: -1, ReservedBytes: reserved, Categories: cats}
	}
	const e62 = int64(1) << 62
	tests := []struct {
		name  string
		sums  []*RankSummary
		split bool // add the second half to another merger and join the two
		want  string
	}{
		{"reserved by Add", []*RankSummary{sum(0, e62), sum(1, e62-1), sum(2, 1)}, false,
			"rank2_memory_snapshot.pickle: reserved_bytes: the sum over ranks passes 9223372036854775807 bytes"},
		{"reserved by Merge", []*RankSummary{sum(0, e62), sum(1, e62)}, true,
			"rank summaries: reserved_bytes: the sum over ranks passes"},
		{"a category", []*RankSummary{sum(0, 1, analyze.CategoryStat{Name: "weights", Bytes: e62}), sum(1, 1, analyze.CategoryStat{Name: "weights", Bytes: e62})}, false,
			"rank1_memory_snapshot.pickle: categories[weights].bytes: the sum over ranks passes"},
		{"sums that fit", []*RankSummary{sum(0, e62), sum(1, e62-1)}, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, other := New(Options{}), New(Options{})
			for i, s := range tc.sums {
				if tc.split && i >= len(tc.sums)/2 {
					other.Add(s)
				} else {
					m.Add(s)
				}
			}
			if tc.split {
				m.Merge(other)
			}
			err := m.Err()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got, want := m.Result().Reserved.Sum, e62+(e62-1); got != want {
					t.Errorf("reserved sum %d, want %d", got, want)
				}
				return
			}
			var oe *OverflowError
			if !errors.As(err, &oe) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q…", err, tc.want)
			}
		})
	}

	// Through MergeFiles, the error names the summary file and ends the merge.
	dir := t.TempDir()
	var files []string
	for r := range 2 {
		p := filepath.Join(dir, fmt.Sprintf("rank%d.summary.msgpack", r))
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := WriteSummary(f, sum(r, e62)); err != nil {
			t.Fatal(err)
		}
		f.Close()
		files = append(files, p)
	}
	_, _, err := MergeFiles(context.Background(), files, FilesOptions{Jobs: 1, Iterations: AllIterations})
	if err == nil || !strings.HasPrefix(err.Error(), files[1]+": rank1_memory_snapshot.pickle: reserved_bytes: the sum over ranks passes") {
		t.Errorf("MergeFiles: err = %v", err)
	}
}
