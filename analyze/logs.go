package analyze

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/trainlog"
)

// AnalyzeLog analyzes the memory lines of a training log (in.Log) into a Report with format "megatron-log",
// "deepspeed-log" or "torchtitan-log".
func AnalyzeLog(ctx context.Context, in *load.Input, opts RuntimeOptions) (*report.Report, error) {
	if in == nil || in.Log == nil {
		return nil, errors.New("analyze log: input has no log records")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lg := in.Log
	r := &report.Report{Header: report.Header{File: in.Path, Format: in.Format, Rank: -1, Iteration: -1, Devices: []int{},
		Categories: []report.CategoryStat{}, Top: []report.Allocation{}, Recommendations: []findings.Finding{},
		Warnings: append([]string{}, lg.Warnings...)}}
	v := &report.LogView{Dialect: lg.Dialect, Lines: lg.Lines, Records: len(lg.Records), SkippedLines: lg.SkippedLines,
		Ranks: []report.LogRankRow{}, PeakAllocatedBytes: -1, PeakReservedBytes: -1, PeakRank: -1, PeakIteration: -1,
		PeakAllocatedRank: -1, PeakAllocatedIteration: -1, CapacityBytes: lg.CapacityBytes, DeviceName: lg.DeviceName}
	byRank := map[int]int{}
	for _, rec := range lg.Records {
		addRecord(v, rec, byRank)
	}
	orderByRank(v)
	if len(v.Ranks) > 1 {
		var res []int64
		for _, row := range v.Ranks {
			if row.MaxReserved >= 0 {
				res = append(res, row.MaxReserved)
			}
		}
		if med := units.Percentile(res, 50); med > 0 {
			v.ReservedImbalancePct = (float64(slices.Max(res))/float64(med) - 1) * 100
		}
	}
	setTheory(v, lg.Theoretical)
	if len(v.Ranks) == 1 {
		r.Rank = v.Ranks[0].Rank
	}
	r.Part = &report.LogReport{Log: v}
	r.Recommendations = logRecommendations(v)
	return r, nil
}

// addRecord adds one memory line to its rank's series and row and to the peaks; byRank maps a rank to its index.
func addRecord(v *report.LogView, rec trainlog.Record, byRank map[int]int) {
	i, ok := byRank[rec.Rank]
	if !ok {
		i = len(v.Series)
		byRank[rec.Rank] = i
		v.Series = append(v.Series, report.LogSeries{Rank: rec.Rank, XIsIteration: true})
		v.Ranks = append(v.Ranks, report.LogRankRow{Rank: rec.Rank, FirstIteration: -1, LastIteration: -1, MaxAllocated: -1, MaxReserved: -1, LastAllocated: -1, LastReserved: -1})
	}
	s, row := &v.Series[i], &v.Ranks[i]
	if rec.Iteration < 0 {
		s.XIsIteration = false
	}
	s.X = append(s.X, rec.Iteration)
	s.Allocated = append(s.Allocated, rec.AllocatedBytes)
	s.MaxAllocated = append(s.MaxAllocated, rec.MaxAllocatedBytes)
	s.Reserved = append(s.Reserved, rec.ReservedBytes)
	s.MaxReserved = append(s.MaxReserved, rec.MaxReservedBytes)

	row.Records++
	if rec.Iteration >= 0 {
		if row.FirstIteration < 0 {
			row.FirstIteration = rec.Iteration
		}
		row.LastIteration = rec.Iteration
	}
	alloc := max(rec.AllocatedBytes, rec.MaxAllocatedBytes)
	res := max(rec.ReservedBytes, rec.MaxReservedBytes)
	row.MaxAllocated = max(row.MaxAllocated, alloc)
	row.MaxReserved = max(row.MaxReserved, res)
	if rec.AllocatedBytes >= 0 {
		row.LastAllocated = rec.AllocatedBytes
	}
	if rec.ReservedBytes >= 0 {
		row.LastReserved = rec.ReservedBytes
	} else if rec.MaxReservedBytes >= 0 {
		row.LastReserved = rec.MaxReservedBytes
	}
	if alloc > v.PeakAllocatedBytes {
		v.PeakAllocatedBytes, v.PeakAllocatedRank, v.PeakAllocatedIteration = alloc, rec.Rank, rec.Iteration
	}
	// The peak location follows reserved memory (what decides an OOM), else allocated.
	if res > v.PeakReservedBytes {
		v.PeakReservedBytes, v.PeakRank, v.PeakIteration = res, rec.Rank, rec.Iteration
	} else if res < 0 && v.PeakReservedBytes < 0 && alloc >= v.PeakAllocatedBytes {
		v.PeakRank, v.PeakIteration = rec.Rank, rec.Iteration
	}
}

// orderByRank numbers the points of series whose lines name no iteration, and sorts ranks ascending (lines
// without a rank last), series in the same order.
func orderByRank(v *report.LogView) {
	for i := range v.Series {
		if !v.Series[i].XIsIteration {
			for j := range v.Series[i].X {
				v.Series[i].X[j] = j
			}
		}
	}
	order := make([]int, len(v.Ranks))
	for i := range order {
		order[i] = i
	}
	rankKey := func(r int) int {
		if r < 0 {
			return int(^uint(0) >> 1)
		}
		return r
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(rankKey(v.Ranks[a].Rank), rankKey(v.Ranks[b].Rank)) })
	ranks, series := make([]report.LogRankRow, len(order)), make([]report.LogSeries, len(order))
	for i, j := range order {
		ranks[i], series[i] = v.Ranks[j], v.Series[j]
	}
	v.Ranks, v.Series = ranks, series
}

// setTheory keeps the last theoretical-memory line and the gap of the allocated peak to it.
func setTheory(v *report.LogView, theoretical []trainlog.Theoretical) {
	if n := len(theoretical); n > 0 {
		t := report.LogTheoretical(theoretical[n-1])
		v.Theoretical = &t
		theory := t.TotalBytes
		if theory < 0 {
			theory = t.WeightAndOptimizerByte
		}
		if theory > 0 && v.PeakAllocatedBytes >= 0 {
			g := (float64(v.PeakAllocatedBytes)/float64(theory) - 1) * 100
			v.TheoryGapPct = &g
		}
	}
}

func logRecommendations(v *report.LogView) []findings.Finding {
	out := []findings.Finding{}
	if v.CapacityBytes > 0 && v.PeakReservedBytes > 0 {
		if share := units.Share(v.PeakReservedBytes, v.CapacityBytes); share >= findings.LogNearCapacityPct {
			out = append(out, findings.NewLogNearCapacity(v.PeakReservedBytes, share, v.CapacityBytes))
		}
	}
	if v.PeakAllocatedBytes > 0 && v.PeakReservedBytes > 0 {
		if slack := units.Share(v.PeakReservedBytes-v.PeakAllocatedBytes, v.PeakReservedBytes); slack >= findings.LogReservedSlackPct {
			out = append(out, findings.NewLogReservedSlack(v.PeakReservedBytes, v.PeakAllocatedBytes, slack))
		}
	}
	if v.ReservedImbalancePct >= findings.LogRankImbalancePct {
		out = append(out, findings.NewLogRankImbalance(v.ReservedImbalancePct))
	}
	return out
}
