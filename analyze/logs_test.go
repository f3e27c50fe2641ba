package analyze

import (
	"context"
	"math"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/report"
)

func analyzeLogFixture(t *testing.T, name string) *report.Report {
	t.Helper()
	in, err := load.DecodeFile(context.Background(), filepath.Join("..", "trainlog", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	r, err := AnalyzeLog(context.Background(), in, RuntimeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The byte values below are the fixture's MiB/GiB numbers converted as in snapshot/logs_test.go.
func TestAnalyzeMegatronLog(t *testing.T) {
	r := analyzeLogFixture(t, "megatron.log")
	lp := partOf[*report.LogReport](t, r)
	v := lp.Log
	if r.Format != "megatron-log" || v.Dialect != "megatron" || v.Records != 4 || r.Rank != -1 {
		t.Fatalf("format %q dialect %q records %d rank %d", r.Format, v.Dialect, v.Records, r.Rank)
	}
	want := []report.LogRankRow{
		// rank 0: max allocated 2623.578… MiB, reserved 2648 MiB at iteration 2.
		{Rank: 0, Records: 2, FirstIteration: 1, LastIteration: 2, MaxAllocated: 2751021568, MaxReserved: 2776629248, LastAllocated: 1617284096, LastReserved: 2776629248},
		// rank 1: "max cached: 2700.00" → 2831155200.
		{Rank: 1, Records: 2, FirstIteration: 1, LastIteration: 2, MaxAllocated: 2621440000, MaxReserved: 2831155200, LastAllocated: 1572864000, LastReserved: 2726297600},
	}
	if !reflect.DeepEqual(v.Ranks, want) {
		t.Errorf("ranks = %+v\nwant %+v", v.Ranks, want)
	}
	if v.PeakAllocatedBytes != 2751021568 || v.PeakReservedBytes != 2831155200 || v.PeakRank != 1 || v.PeakIteration != 2 {
		t.Errorf("peak alloc %d reserved %d at rank %d iteration %d", v.PeakAllocatedBytes, v.PeakReservedBytes, v.PeakRank, v.PeakIteration)
	}
	// Median of two by units.PercentileIndex: index ⌊(2−1)·50/100⌋ = 0, the lower value, 2776629248.
	if want := (2831155200.0/2776629248 - 1) * 100; math.Abs(v.ReservedImbalancePct-want) > 1e-9 {
		t.Errorf("imbalance %v, want %v", v.ReservedImbalancePct, want)
	}
	// Measured 2751021568 against the theoretical total 1800.41 MiB = 1887866716.
	if v.Theoretical == nil || v.TheoryGapPct == nil || math.Abs(*v.TheoryGapPct-(2751021568.0/1887866716-1)*100) > 1e-9 {
		t.Errorf("theory %+v gap %v", v.Theoretical, v.TheoryGapPct)
	}
	if len(v.Series) != 2 || !v.Series[0].XIsIteration || !reflect.DeepEqual(v.Series[0].X, []int{1, 2}) ||
		!reflect.DeepEqual(v.Series[1].MaxReserved, []int64{734003200, 2831155200}) {
		t.Errorf("series = %+v", v.Series)
	}
}

func TestAnalyzeDeepSpeedLog(t *testing.T) {
	v := partOf[*report.LogReport](t, analyzeLogFixture(t, "deepspeed.log")).Log
	// Ranks ascending with lines that name no rank last; the unranked series has no iteration on every line,
	// so it is indexed by record.
	if len(v.Ranks) != 2 || v.Ranks[0].Rank != 3 || v.Ranks[1].Rank != -1 || v.Ranks[1].Records != 2 {
		t.Fatalf("ranks = %+v", v.Ranks)
	}
	if s := v.Series[1]; s.XIsIteration || !reflect.DeepEqual(s.X, []int{0, 1}) {
		t.Errorf("series = %+v", s)
	}
	// Max_CA 22 GB on the unranked line is the peak.
	if v.PeakReservedBytes != 23622320128 || v.PeakRank != -1 || v.PeakAllocatedBytes != 21743271936 {
		t.Errorf("peak reserved %d rank %d alloc %d", v.PeakReservedBytes, v.PeakRank, v.PeakAllocatedBytes)
	}
}

func TestAnalyzeTorchtitanLog(t *testing.T) {
	v := partOf[*report.LogReport](t, analyzeLogFixture(t, "torchtitan.log")).Log
	if len(v.Ranks) != 2 || v.Ranks[0].MaxReserved != 22011707392 || v.Ranks[0].LastIteration != 10 || v.Ranks[0].MaxAllocated != -1 ||
		v.Ranks[0].LastAllocated != -1 || v.Ranks[0].LastReserved != 22011707392 {
		t.Errorf("ranks = %+v", v.Ranks)
	}
	if v.CapacityBytes != 84943715697 || v.PeakReservedBytes != 22011707392 || v.PeakAllocatedBytes != -1 || v.PeakIteration != 10 {
		t.Errorf("capacity %d peak reserved %d alloc %d iteration %d", v.CapacityBytes, v.PeakReservedBytes, v.PeakAllocatedBytes, v.PeakIteration)
	}
}

func TestLogRecommendations(t *testing.T) {
	v := &report.LogView{CapacityBytes: 100 << 30, PeakReservedBytes: 95 << 30, PeakAllocatedBytes: 60 << 30, ReservedImbalancePct: 3}
	recs := logRecommendations(v)
	var ids []string
	for _, r := range recs {
		ids = append(ids, string(r.ID))
	}
	// 95 % of capacity ≥ 90; (95 − 60)/95 = 36.8 % cache ≥ 20; imbalance 3 % < 10.
	if !reflect.DeepEqual(ids, []string{"log-near-capacity", "log-reserved-slack"}) {
		t.Errorf("recommendations = %v", ids)
	}
}
