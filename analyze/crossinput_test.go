package analyze

import (
	"slices"
	"testing"
)

func TestParsePath(t *testing.T) {
	tests := []struct {
		path       string
		rank, iter int
	}{
		{"outputs/memory_snapshot/iteration_3/rank5_memory_snapshot.pickle", 5, 3},
		{"outputs/memory_snapshot/iteration_10_exit/rank0_memory_snapshot.pickle", 0, 10},
		{"profiling/memory_snapshot/step_000000000010/000007_step_10.pickle", 7, 10},
		{"profiling/memory_snapshot/step_000000000020_exit/000003_step_20.pickle", 3, 20},
		{"snapshots/rank3.pickle", 3, -1},
		{"snapshots/run_r12_mem.pickle", 12, -1},
		{`C:\runs\iter2\rank_1\snap.pickle`, 1, 2},
		{"snapshots/model_memory_usage_profile_grad.pickle", -1, -1},
		{"snapshots/crank9.pickle", -1, -1}, // "crank" is not a rank
		{"", -1, -1},
	}
	for _, tc := range tests {
		r, it := ParsePath(tc.path)
		if r != tc.rank || it != tc.iter {
			t.Errorf("ParsePath(%q) = rank %d iteration %d, want %d %d", tc.path, r, it, tc.rank, tc.iter)
		}
	}
}

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
