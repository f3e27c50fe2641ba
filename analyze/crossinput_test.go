package analyze

import (
	"slices"
	"testing"
)

func rep(file string, rank, iter int, reserved, allocated int64) *Report {
	r := &Report{File: file, Rank: rank, Iteration: iter}
	r.ReservedBytes, r.AllocatedBytes = reserved, allocated
	return r
}

func TestCrossInputs(t *testing.T) {
	if CrossInputs(nil) != nil {
		t.Fatal("empty input should give nil")
	}
	reports := []*Report{
		rep("i1/rank3", 3, 1, 120*MiB, 60*MiB),
		rep("i1/rank1", 1, 1, 100*MiB, 50*MiB),
		rep("i1/rank0", 0, 1, 100*MiB, 50*MiB),
		rep("i1/rank2", 2, 1, 110*MiB, 55*MiB), // exactly 10 % above the median: not an outlier
	}
	reports[2].Peak = &Peak{Bytes: 70 * MiB}
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
			var rs []*Report
			for i, a := range tc.alloc {
				rs = append(rs, rep("iteration_"+string(rune('1'+i))+"/rank0", 0, i+1, 100*MiB, a))
			}
			c := CrossInputs(rs)
			fired := slices.ContainsFunc(c.Recommendations, func(r Recommendation) bool { return r.ID == "possible-leak-across-iterations" })
			if fired != tc.fire {
				t.Errorf("fired %v, want %v: %+v", fired, tc.fire, c.Recommendations)
			}
		})
	}
}

// TestCrossInputsMixedKinds checks that inputs without allocator totals (tracer files, logs, profiler timelines)
// keep their own peak in the row and stay out of the reserved/allocated statistics, which compare snapshots.
func TestCrossInputsMixedKinds(t *testing.T) {
	tracer := &Report{File: "tracer_rank2.json", Rank: 2, Iteration: -1, Tracer: &TracerView{}, PeakBytes: 12 * MiB, ListedBytes: 9 * MiB}
	log := &Report{File: "train.log", Rank: -1, Iteration: -1, Log: &LogView{PeakAllocatedBytes: 30 * MiB, PeakReservedBytes: -1}}
	noAlloc := &Report{File: "ds.log", Rank: -1, Iteration: -1, Log: &LogView{PeakAllocatedBytes: -1, PeakReservedBytes: 40 * MiB}}
	tl := &Report{File: "prof.json", Rank: -1, Iteration: -1, MemoryTimeline: &TimelineView{PeakBytes: 5 * MiB}}
	snaps := []*Report{rep("rank0.pickle", 0, -1, 100*MiB, 50*MiB), rep("rank1.pickle", 1, -1, 200*MiB, 80*MiB)}
	c := CrossInputs(append(snaps, tracer, log, noAlloc, tl))
	byFile := map[string]CrossRow{}
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
		{"rank0.pickle", KindSnapshot, true, 0, 0, 100 * MiB, 50 * MiB},
		{"tracer_rank2.json", KindTracer, false, 12 * MiB, 9 * MiB, 0, 0},
		{"train.log", KindLog, false, 30 * MiB, 0, 0, 0},
		{"ds.log", KindLog, false, 0, 0, 0, 0}, // the dialect printed no allocated measure: no peak, not −1
		{"prof.json", KindTimeline, false, 5 * MiB, 0, 0, 0},
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

	only := CrossInputs([]*Report{tracer, log})
	if only.MaxReservedBytes != 0 || only.MedianReservedBytes != 0 || only.ImbalancePct != 0 || len(only.OutlierFiles) != 0 {
		t.Errorf("no snapshot: %+v", only)
	}
}
