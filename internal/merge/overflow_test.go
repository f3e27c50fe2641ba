package merge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/memscan/memscan/report"
)

// TestMergeOverflow checks that byte counts whose sum over the ranks would pass 2^63−1 stop the merge with an
// error naming the field (a wrapped sum would print a negative or plausible wrong total), both when one
// summary is added and when partial merges are joined, and that sums that fit are exact. A stage's sums are
// checked where they are formed: at Add when the world is given, when the result is taken when it is derived.
func TestMergeOverflow(t *testing.T) {
	sum := func(rank int, reserved int64, cats ...report.CategoryStat) *RankSummary {
		return &RankSummary{Kind: SummaryKind, Version: SummaryVersion, File: fmt.Sprintf("rank%d_memory_snapshot.pickle", rank),
			Rank: rank, Stage: -1, ReservedBytes: reserved, Categories: cats}
	}
	allocated := func(s *RankSummary) *RankSummary { s.AllocatedBytes, s.ReservedBytes = s.ReservedBytes, 0; return s }
	const e62 = int64(1) << 62
	// Ranks 0 and 1 hold 2^62 each and rank 2 −2^62: added in this order no total passes 2^63−1, but with two
	// stages ranks 0 and 1 share stage 0 (world 3 or 4: two ranks per stage), whose sum does.
	stagePasses := []*RankSummary{sum(0, e62), sum(2, -e62), sum(1, e62)}
	// Stage 0 is ranks 0-2 of 6: its partial sum passes the bound after rank 1 in this order, its total does not.
	stageFits := []*RankSummary{sum(0, e62), sum(3, -e62), sum(1, e62), sum(2, -e62), sum(4, 0), sum(5, 0)}
	given, derived := Options{Stages: 2, World: 4}, Options{Stages: 2}
	tests := []struct {
		name  string
		opts  Options
		sums  []*RankSummary
		split bool // add the second half to another merger and join the two
		want  string
		// With want "": the reserved sum and the stages' reserved sums.
		reserved      int64
		stageReserved []int64
	}{
		{"reserved by Add", Options{}, []*RankSummary{sum(0, e62), sum(1, e62-1), sum(2, 1)}, false,
			"rank2_memory_snapshot.pickle: reserved_bytes: the sum over ranks passes 9223372036854775807 bytes", 0, nil},
		{"reserved by Merge", Options{}, []*RankSummary{sum(0, e62), sum(1, e62)}, true,
			"rank summaries: reserved_bytes: the sum over ranks passes", 0, nil},
		{"a category", Options{}, []*RankSummary{sum(0, 1, report.CategoryStat{Name: "weights", Bytes: e62}), sum(1, 1, report.CategoryStat{Name: "weights", Bytes: e62})}, false,
			"rank1_memory_snapshot.pickle: categories[weights].bytes: the sum over ranks passes", 0, nil},
		{"sums that fit", Options{}, []*RankSummary{sum(0, e62), sum(1, e62-1)}, true, "", e62 + (e62 - 1), nil},
		{"a stage by Add, world given", given, stagePasses, false,
			"rank1_memory_snapshot.pickle: stages[0].reserved_bytes: the sum over ranks passes", 0, nil},
		{"a stage by Merge, world given", given, stagePasses, true,
			"rank summaries: stages[0].reserved_bytes: the sum over ranks passes", 0, nil},
		{"a stage in Result, world derived", derived, stagePasses, false,
			"rank summaries: stages[0].reserved_bytes: the sum over ranks passes", 0, nil},
		{"a stage in Result after Merge, world derived", derived, stagePasses, true,
			"rank summaries: stages[0].reserved_bytes: the sum over ranks passes", 0, nil},
		{"a stage's allocated bytes, world derived", derived, []*RankSummary{allocated(sum(0, e62)), allocated(sum(2, -e62)), allocated(sum(1, e62))}, false,
			"rank summaries: stages[0].allocated_bytes: the sum over ranks passes", 0, nil},
		{"a stage whose total fits, world derived", derived, stageFits, false, "", 0, []int64{e62, -e62}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, other := New(tc.opts), New(tc.opts)
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
				c := m.Result()
				var stages []int64
				for _, st := range c.Stages {
					stages = append(stages, st.ReservedBytes)
				}
				if c.Reserved.Sum != tc.reserved || !slices.Equal(stages, tc.stageReserved) {
					t.Errorf("reserved sum %d, stages %v; want %d, %v", c.Reserved.Sum, stages, tc.reserved, tc.stageReserved)
				}
				return
			}
			var oe *OverflowError
			if !errors.As(err, &oe) || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q…", err, tc.want)
			}
		})
	}

	// Through MergeFiles, a summary is validated before it is added: 2^62 bytes is past a rank's bound (16 TiB),
	// so each such file fails alone, names the field, and the others merge; no sum over fewer than 2^19 valid
	// summaries can pass 2^63 − 1.
	sums := []*RankSummary{sum(0, e62), sum(1, e62), sum(2, 1<<40)}
	files := writeSummaryFiles(t, t.TempDir(), sums)
	for _, jobs := range []int{1, 3} {
		res, failures, err := MergeFiles(context.Background(), files, FilesOptions{Options: derived, Jobs: jobs, Iterations: AllIterations})
		if err != nil || len(failures) != 2 || res.Ranks != 1 || res.Reserved.Sum != 1<<40 {
			t.Fatalf("MergeFiles with %d jobs: err %v, failures %v, %+v", jobs, err, failures, res)
		}
		for i, f := range failures {
			if want := files[i] + ": rank summary: reserved_bytes: 4611686018427387904: a rank's byte count must be 0 to 17592186044416"; !strings.HasPrefix(f.Error(), want) {
				t.Errorf("failure %d: %v, want %q…", i, f, want)
			}
		}
	}
}
