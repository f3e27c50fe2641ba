package analyze

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/report"
)

func rep(file string, rank, iter int, reserved, allocated int64) *report.Report {
	part := &report.SnapshotReport{}
	part.ReservedBytes, part.AllocatedBytes = reserved, allocated
	return &report.Report{Header: report.Header{File: file, Rank: rank, Iteration: iter}, Part: part}
}

func TestCrossInputs(t *testing.T) {
	if CrossInputs(nil) != nil {
		t.Fatal("empty input should give nil")
	}
	reports := []*report.Report{
		rep("i1/rank3", 3, 1, 120*MiB, 60*MiB),
		rep("i1/rank1", 1, 1, 100*MiB, 50*MiB),
		rep("i1/rank0", 0, 1, 100*MiB, 50*MiB),
		rep("i1/rank2", 2, 1, 110*MiB, 55*MiB), // exactly 10 % above the median: not an outlier
	}
	reports[2].Peak = &report.Peak{Bytes: 70 * MiB}
	c := CrossInputs(reports)
	files := []string{}
	for _, r := range c.Rows {
		files = append(files, r.File)
	}
	if !slices.Equal(files, []string{"i1/rank0", "i1/rank1", "i1/rank2", "i1/rank3"}) || c.Rows[0].PeakBytes != 70*MiB {
		t.Errorf("rows %+v", c.Rows)
	}
	// reserved {100,100,110,120} MiB: median at index ⌊3·50/100⌋ = 1, 100 MiB (merge's rule), max 120 MiB,
	// imbalance 120/100 − 1 = 20 %; allocated {50,50,55,60}: median 50 MiB.
	if c.MaxReservedBytes != 120*MiB || c.MedianReservedBytes != 100*MiB || c.MedianAllocatedBytes != 50*MiB {
		t.Errorf("max %d median %d median alloc %d", c.MaxReservedBytes, c.MedianReservedBytes, c.MedianAllocatedBytes)
	}
	if want := 20.0; c.ImbalancePct < want-1e-9 || c.ImbalancePct > want+1e-9 {
		t.Errorf("imbalance %v, want %v", c.ImbalancePct, want)
	}
	// Outlier: > 100 × 1.1 = 110 MiB → rank 3 only (rank 2, at 110 exactly, is not above).
	if !slices.Equal(c.OutlierFiles, []string{"i1/rank3"}) {
		t.Errorf("outliers %v", c.OutlierFiles)
	}
	if len(c.Recommendations) != 1 || c.Recommendations[0].ID != "rank-imbalance" {
		t.Errorf("recommendations %+v", c.Recommendations)
	}
}

func TestCrossInputsGrowthAcrossIterations(t *testing.T) {
	tests := []struct {
		name  string
		alloc []int64
		fire  bool
	}{
		{"grows", []int64{10 * MiB, 12 * MiB, 14 * MiB}, true},
		{"drops once", []int64{10 * MiB, 14 * MiB, 12 * MiB}, false},
		{"grows too little", []int64{10 * MiB, 10*MiB + 1000, 10*MiB + 2000}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var rs []*report.Report
			for i, a := range tc.alloc {
				rs = append(rs, rep("iteration_"+string(rune('1'+i))+"/rank0", 0, i+1, 100*MiB, a))
			}
			c := CrossInputs(rs)
			fired := slices.ContainsFunc(c.Recommendations, func(r findings.Finding) bool { return r.ID == "possible-leak-across-iterations" })
			if fired != tc.fire {
				t.Errorf("fired %v, want %v: %+v", fired, tc.fire, c.Recommendations)
			}
		})
	}
}

// TestCrossInputsMixedKinds checks that inputs without allocator totals (tracer files, logs, profiler timelines)
// keep their own peak in the row and stay out of the reserved/allocated statistics, which compare snapshots.
func TestCrossInputsMixedKinds(t *testing.T) {
	tracer := &report.Report{Header: report.Header{File: "tracer_rank2.json", Rank: 2, Iteration: -1}, Part: &report.TracerReport{Tracer: &report.TracerView{}, PeakBytes: 12 * MiB, ListedBytes: 9 * MiB}}
	log := &report.Report{Header: report.Header{File: "train.log", Rank: -1, Iteration: -1}, Part: &report.LogReport{Log: &report.LogView{PeakAllocatedBytes: 30 * MiB, PeakReservedBytes: -1}}}
	noAlloc := &report.Report{Header: report.Header{File: "ds.log", Rank: -1, Iteration: -1}, Part: &report.LogReport{Log: &report.LogView{PeakAllocatedBytes: -1, PeakReservedBytes: 40 * MiB}}}
	tl := &report.Report{Header: report.Header{File: "prof.json", Rank: -1, Iteration: -1}, Part: &report.TimelineReport{MemoryTimeline: &report.TimelineView{PeakBytes: 5 * MiB}}}
	snaps := []*report.Report{rep("rank0.pickle", 0, -1, 100*MiB, 50*MiB), rep("rank1.pickle", 1, -1, 200*MiB, 80*MiB)}
	c := CrossInputs(append(snaps, tracer, log, noAlloc, tl))
	byFile := map[string]report.CrossRow{}
	for _, r := range c.Rows {
		byFile[r.File] = r
	}
	tests := []struct {
		file            string
		kind            string
		totals          bool
		peak, listed    int64
		reserved, alloc int64
	}{
		{"rank0.pickle", report.KindSnapshot, true, 0, 0, 100 * MiB, 50 * MiB},
		{"tracer_rank2.json", report.KindTracer, false, 12 * MiB, 9 * MiB, 0, 0},
		{"train.log", report.KindLog, false, 30 * MiB, 0, 0, 0},
		{"ds.log", report.KindLog, false, 0, 0, 0, 0}, // the dialect printed no allocated measure: no peak, not −1
		{"prof.json", report.KindTimeline, false, 5 * MiB, 0, 0, 0},
	}
	for _, tc := range tests {
		r := byFile[tc.file]
		if r.Kind != tc.kind || r.HasAllocatorTotals() != tc.totals || r.PeakBytes != tc.peak || r.ListedBytes != tc.listed ||
			r.ReservedBytes != tc.reserved || r.AllocatedBytes != tc.alloc {
			t.Errorf("%s: row %+v", tc.file, r)
		}
	}
	// Only the two snapshots count: median 100 MiB (the lower of two), not the median of 0, 0, 0, 0, 100, 200.
	if c.MaxReservedBytes != 200*MiB || c.MedianReservedBytes != 100*MiB || c.MedianAllocatedBytes != 50*MiB {
		t.Errorf("max %d median %d median allocated %d", c.MaxReservedBytes, c.MedianReservedBytes, c.MedianAllocatedBytes)
	}
	// 200 > 100 × 1.1: rank 1 is the one outlier; the zero-reserved inputs are never judged.
	if !slices.Equal(c.OutlierFiles, []string{"rank1.pickle"}) {
		t.Errorf("outliers %v", c.OutlierFiles)
	}

	only := CrossInputs([]*report.Report{tracer, log})
	if only.MaxReservedBytes != 0 || only.MedianReservedBytes != 0 || only.ImbalancePct != 0 || len(only.OutlierFiles) != 0 {
		t.Errorf("no snapshot: %+v", only)
	}
}

// TestCrossInputsImbalancePerIteration: ranks are compared within an iteration. Two steps of two ranks each:
// step 10 holds {100, 150} MiB (median 100, the lower of two, imbalance 50 %), step 20 holds {100, 300} MiB
// (median 100, imbalance 200 %). Pooled over both steps the median would be 100 MiB of four values and the
// imbalance that of no step; the reported statistics are step 20's, the same step the rank-imbalance finding names.
func TestCrossInputsImbalancePerIteration(t *testing.T) {
	c := CrossInputs([]*report.Report{
		rep("step10/rank0", 0, 10, 100*MiB, 10*MiB),
		rep("step10/rank1", 1, 10, 150*MiB, 10*MiB),
		rep("step20/rank0", 0, 20, 100*MiB, 10*MiB),
		rep("step20/rank1", 1, 20, 300*MiB, 30*MiB),
	})
	if c.Iterations != 2 || c.ImbalanceIteration != 20 {
		t.Errorf("iterations %d, imbalance iteration %d; want 2 and 20", c.Iterations, c.ImbalanceIteration)
	}
	if c.MaxReservedBytes != 300*MiB || c.MedianReservedBytes != 100*MiB || c.MaxAllocatedBytes != 30*MiB || c.MedianAllocatedBytes != 10*MiB {
		t.Errorf("max %d median %d, allocated max %d median %d", c.MaxReservedBytes, c.MedianReservedBytes, c.MaxAllocatedBytes, c.MedianAllocatedBytes)
	}
	if want := 200.0; c.ImbalancePct < want-1e-9 || c.ImbalancePct > want+1e-9 {
		t.Errorf("imbalance %v, want %v", c.ImbalancePct, want)
	}
	if len(c.Recommendations) == 0 || c.Recommendations[0].ID != "rank-imbalance" || c.Recommendations[0].Value != c.ImbalancePct {
		t.Fatalf("recommendations %+v; want rank-imbalance with the reported %v %%", c.Recommendations, c.ImbalancePct)
	}
	if ev := c.Recommendations[0].Evidence; !strings.Contains(ev, "(rank 1, iteration 20)") || !strings.Contains(ev, "of iteration 20") {
		t.Errorf("evidence %q", ev)
	}
}

// TestCrossInputsRankSet: inputs are compared as ranks only when they are the ranks of one run, each named once
// per iteration; otherwise the rows stay a plain table, with the reason, and no imbalance or outlier is judged.
// Thirteen unrelated snapshots whose paths name no rank (one ten times larger) used to get "rank imbalance 708 %".
func TestCrossInputsRankSet(t *testing.T) {
	var unrelated []*report.Report
	for i := range 13 {
		res := int64(10+i) * MiB
		if i == 5 {
			res = 1000 * MiB
		}
		unrelated = append(unrelated, rep(fmt.Sprintf("repo%d__memory_snapshot.pickle", i), -1, -1, res, res/2))
	}
	tests := []struct {
		name    string
		reports []*report.Report
		problem string // "" for a rank set
	}{
		{"unrelated snapshots", unrelated, "the paths of 13 of the 13 snapshots name no rank"},
		{"one unnamed among ranks", []*report.Report{rep("d/rank0.pickle", 0, -1, 100*MiB, 0), rep("d/rank1.pickle", 1, -1, 300*MiB, 0), rep("d/other.pickle", -1, -1, 100*MiB, 0)},
			"the paths of 1 of the 3 snapshots name no rank"},
		{"a rank twice in one run", []*report.Report{rep("d/iteration_1/rank0.pickle", 0, 1, 100*MiB, 0), rep("d/iteration_1/rank1.pickle", 1, 1, 300*MiB, 0),
			rep("d/iteration_1/copy/rank1.pickle", 1, 1, 300*MiB, 0)}, ""},
		{"two runs of one iteration", []*report.Report{rep("runA/iteration_1/rank0.pickle", 0, 1, 100*MiB, 0), rep("runA/iteration_1/rank1.pickle", 1, 1, 300*MiB, 0),
			rep("runB/iteration_1/rank0.pickle", 0, 1, 100*MiB, 0), rep("runB/iteration_1/rank1.pickle", 1, 1, 100*MiB, 0)},
			"rank 0 of iteration 1 comes from 2 runs (runA/iteration_*/rank*.pickle, runB/iteration_*/rank*.pickle)"},
		// Compared, but within each iteration: one rank each, so no imbalance (the step-to-step growth is a leak check).
		{"one rank per iteration", []*report.Report{rep("d/iteration_1/rank0.pickle", 0, 1, 100*MiB, 0), rep("d/iteration_2/rank0.pickle", 0, 2, 100*MiB, 0),
			rep("d/iteration_2/rank1.pickle", 1, 2, 300*MiB, 0)}, ""},
		{"ranks of one run", []*report.Report{rep("d/rank0.pickle", 0, -1, 100*MiB, 0), rep("d/rank1.pickle", 1, -1, 300*MiB, 0)}, ""},
	}
	// The copy in a folder of its own is the same run by its path only when the folder is blanked too: it is not,
	// so its rank 1 comes from a second run.
	tests[2].problem = "rank 1 of iteration 1 comes from 2 runs (d/iteration_*/copy/rank*.pickle, d/iteration_*/rank*.pickle)"
	tests = append(tests, struct {
		name    string
		reports []*report.Report
		problem string
	}{"a rank given twice", []*report.Report{rep("d/rank0.pickle", 0, -1, 100*MiB, 0), rep("d/rank1.pickle", 1, -1, 300*MiB, 0), rep("d/rank1.pickle", 1, -1, 300*MiB, 0)},
		"rank 1 is given by 2 snapshots (d/rank1.pickle, d/rank1.pickle)"})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := CrossInputs(tc.reports)
			if !strings.HasPrefix(c.NotRankSet, tc.problem) || (tc.problem == "") != (c.NotRankSet == "") {
				t.Fatalf("not a rank set: %q, want %q…", c.NotRankSet, tc.problem)
			}
			judged := c.ImbalancePct != 0 || len(c.OutlierFiles) > 0 || slices.ContainsFunc(c.Recommendations, func(f findings.Finding) bool { return f.ID == findings.RankImbalance })
			if tc.problem != "" && (judged || c.MedianReservedBytes != 0) {
				t.Errorf("compared as ranks anyway: imbalance %v, outliers %v, %+v", c.ImbalancePct, c.OutlierFiles, c.Recommendations)
			}
			if tc.problem == "" && c.ImbalancePct != 200 {
				t.Errorf("rank set: imbalance %v, want 300/100 − 1 = 200 %%", c.ImbalancePct)
			}
			if len(c.Rows) != len(tc.reports) {
				t.Errorf("%d rows for %d inputs: the table lists every input", len(c.Rows), len(tc.reports))
			}
		})
	}
}
