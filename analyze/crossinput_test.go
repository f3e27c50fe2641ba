package analyze

import (
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
	// reserved {100,100,110,120} MiB: median (100+110)/2 = 105 MiB, max 120 MiB, imbalance 120/105 − 1.
	if c.MaxReservedBytes != 120*MiB || c.MedianReservedBytes != 105*MiB || c.MedianAllocatedBytes != 105*MiB/2 {
		t.Errorf("max %d median %d median alloc %d", c.MaxReservedBytes, c.MedianReservedBytes, c.MedianAllocatedBytes)
	}
	if want := (120.0/105 - 1) * 100; c.ImbalancePct < want-1e-9 || c.ImbalancePct > want+1e-9 {
		t.Errorf("imbalance %v, want %v", c.ImbalancePct, want)
	}
	// Outlier: > 105 × 1.1 = 115.5 MiB → rank 3 only.
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
	// Only the two snapshots count: median (100+200)/2 = 150 MiB, not the median of 0, 0, 0, 0, 100, 200.
	if c.MaxReservedBytes != 200*MiB || c.MedianReservedBytes != 150*MiB || c.MedianAllocatedBytes != 65*MiB {
		t.Errorf("max %d median %d median allocated %d", c.MaxReservedBytes, c.MedianReservedBytes, c.MedianAllocatedBytes)
	}
	// 200 > 150 × 1.1: rank 1 is the one outlier; the zero-reserved inputs are never judged.
	if !slices.Equal(c.OutlierFiles, []string{"rank1.pickle"}) {
		t.Errorf("outliers %v", c.OutlierFiles)
	}

	only := CrossInputs([]*report.Report{tracer, log})
	if only.MaxReservedBytes != 0 || only.MedianReservedBytes != 0 || only.ImbalancePct != 0 || len(only.OutlierFiles) != 0 {
		t.Errorf("no snapshot: %+v", only)
	}
}

// TestCrossInputsImbalancePerIteration: ranks are compared within an iteration. Two steps of two ranks each:
// step 10 holds {100, 150} MiB (median 125, imbalance 150/125 − 1 = 20 %), step 20 holds {100, 300} MiB (median
// 200, imbalance 50 %). Pooled over both steps the median would be 125 MiB and the imbalance 140 %, a number that
// describes no step; the reported statistics are step 20's, the same step the rank-imbalance finding names.
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
	if c.MaxReservedBytes != 300*MiB || c.MedianReservedBytes != 200*MiB || c.MaxAllocatedBytes != 30*MiB || c.MedianAllocatedBytes != 20*MiB {
		t.Errorf("max %d median %d, allocated max %d median %d", c.MaxReservedBytes, c.MedianReservedBytes, c.MaxAllocatedBytes, c.MedianAllocatedBytes)
	}
	if want := 50.0; c.ImbalancePct < want-1e-9 || c.ImbalancePct > want+1e-9 {
		t.Errorf("imbalance %v, want %v", c.ImbalancePct, want)
	}
	if len(c.Recommendations) == 0 || c.Recommendations[0].ID != "rank-imbalance" || c.Recommendations[0].Value != c.ImbalancePct {
		t.Fatalf("recommendations %+v; want rank-imbalance with the reported %v %%", c.Recommendations, c.ImbalancePct)
	}
	if ev := c.Recommendations[0].Evidence; !strings.Contains(ev, "(rank 1, iteration 20)") || !strings.Contains(ev, "of iteration 20") {
		t.Errorf("evidence %q", ev)
	}
}

// TestCrossInputsUnknownRank: inputs whose paths tell no rank or iteration are named without "rank -1".
func TestCrossInputsUnknownRank(t *testing.T) {
	c := CrossInputs([]*report.Report{rep("a.pickle", -1, -1, 100*MiB, 0), rep("b.pickle", -1, -1, 200*MiB, 0), rep("c.pickle", -1, -1, 100*MiB, 0)})
	if len(c.Recommendations) != 1 {
		t.Fatalf("recommendations %+v", c.Recommendations)
	}
	if ev := c.Recommendations[0].Evidence; strings.Contains(ev, "-1") || !strings.HasPrefix(ev, "b.pickle reserves 200.0 MiB") {
		t.Errorf("evidence %q", ev)
	}
}
