package analyze

import (
	"cmp"
	"context"
	"errors"
	"slices"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/trainlog"
	"github.com/memscan/memscan/units"
)

// LogView is the analysis of the memory lines of one training log: runtime measurements per rank and iteration.
type LogView struct {
	Dialect string `json:"dialect" msgpack:"dialect"` // "megatron", "deepspeed", "torchtitan"
	Lines   int    `json:"lines" msgpack:"lines"`
	Records int    `json:"records" msgpack:"records"`
	// SkippedLines are lines longer than the reader's limit.
	SkippedLines int          `json:"skipped_lines" msgpack:"skipped_lines"`
	Ranks        []LogRankRow `json:"ranks" msgpack:"ranks"`
	// Peaks over the whole log (bytes, -1 when the dialect does not print the measure), and where they were.
	PeakAllocatedBytes int64 `json:"peak_allocated_bytes" msgpack:"peak_allocated_bytes"`
	PeakReservedBytes  int64 `json:"peak_reserved_bytes" msgpack:"peak_reserved_bytes"`
	PeakRank           int   `json:"peak_rank" msgpack:"peak_rank"`
	PeakIteration      int   `json:"peak_iteration" msgpack:"peak_iteration"`
	// PeakAllocatedRank/Iteration say where allocated memory peaked, which can differ from where reserved did
	// (PeakRank/PeakIteration follow reserved, or allocated when the log prints no reserved measure).
	PeakAllocatedRank      int `json:"peak_allocated_rank" msgpack:"peak_allocated_rank"`
	PeakAllocatedIteration int `json:"peak_allocated_iteration" msgpack:"peak_allocated_iteration"`
	// ReservedImbalancePct is (max/median − 1) × 100 of the per-rank peak reserved bytes (0 for one rank).
	ReservedImbalancePct float64 `json:"reserved_imbalance_pct" msgpack:"reserved_imbalance_pct"`
	// Theoretical is Megatron's last static estimate line; TheoryGapPct compares the measured peak allocated
	// with its total (or with weight and optimizer when no total is printed): (measured/theory − 1) × 100.
	Theoretical  *trainlog.Theoretical `json:"theoretical,omitempty" msgpack:"theoretical,omitempty"`
	TheoryGapPct *float64              `json:"theory_gap_pct,omitempty" msgpack:"theory_gap_pct,omitempty"`
	// CapacityBytes is the device capacity when the log states it (torchtitan).
	CapacityBytes int64  `json:"capacity_bytes,omitempty" msgpack:"capacity_bytes,omitempty"`
	DeviceName    string `json:"device_name,omitempty" msgpack:"device_name,omitempty"`
	// Series holds every record per rank for plotting; not in summary.json.
	Series []LogSeries `json:"-" msgpack:"series,omitempty"`
}

// LogRankRow summarizes one rank's memory lines.
type LogRankRow struct {
	Rank           int   `json:"rank" msgpack:"rank"` // -1: lines without a rank
	Records        int   `json:"records" msgpack:"records"`
	FirstIteration int   `json:"first_iteration" msgpack:"first_iteration"`
	LastIteration  int   `json:"last_iteration" msgpack:"last_iteration"`
	MaxAllocated   int64 `json:"max_allocated_bytes" msgpack:"max_allocated_bytes"`
	MaxReserved    int64 `json:"max_reserved_bytes" msgpack:"max_reserved_bytes"`
	// Byte fields are -1 when the dialect does not print the measure (torchtitan prints only peak reserved).
	LastAllocated int64 `json:"last_allocated_bytes" msgpack:"last_allocated_bytes"`
	LastReserved  int64 `json:"last_reserved_bytes" msgpack:"last_reserved_bytes"`
}

// LogSeries is one rank's records in file order; X is the iteration when every record has one, else the record
// index. Byte slices hold -1 where a record lacks the measure.
type LogSeries struct {
	Rank         int     `msgpack:"rank"`
	X            []int   `msgpack:"x"`
	XIsIteration bool    `msgpack:"x_is_iteration"`
	Allocated    []int64 `msgpack:"allocated"`
	MaxAllocated []int64 `msgpack:"max_allocated"`
	Reserved     []int64 `msgpack:"reserved"`
	MaxReserved  []int64 `msgpack:"max_reserved"`
}

// AnalyzeLog analyzes the memory lines of a training log (in.Log) into a Report with format "megatron-log",
// "deepspeed-log" or "torchtitan-log".
func AnalyzeLog(ctx context.Context, in *load.Input, opts RuntimeOptions) (*Report, error) {
	if in == nil || in.Log == nil {
		return nil, errors.New("analyze log: input has no log records")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	lg := in.Log
	r := &Report{Header: Header{File: in.Path, Format: in.Format, Rank: -1, Iteration: -1, Devices: []int{},
		Categories: []CategoryStat{}, Top: []Allocation{}, Recommendations: []findings.Finding{},
		Warnings: append([]string{}, lg.Warnings...)}}
	v := &LogView{Dialect: lg.Dialect, Lines: lg.Lines, Records: len(lg.Records), SkippedLines: lg.SkippedLines,
		Ranks: []LogRankRow{}, PeakAllocatedBytes: -1, PeakReservedBytes: -1, PeakRank: -1, PeakIteration: -1,
		PeakAllocatedRank: -1, PeakAllocatedIteration: -1, CapacityBytes: lg.CapacityBytes, DeviceName: lg.DeviceName}
	byRank := map[int]int{}
	for _, rec := range lg.Records {
		v.addRecord(rec, byRank)
	}
	v.orderByRank()
	if len(v.Ranks) > 1 {
		var res []int64
		for _, row := range v.Ranks {
			if row.MaxReserved >= 0 {
				res = append(res, row.MaxReserved)
			}
		}
		if med := units.Median(res); med > 0 {
			v.ReservedImbalancePct = (float64(slices.Max(res))/float64(med) - 1) * 100
		}
	}
	v.setTheory(lg.Theoretical)
	if len(v.Ranks) == 1 {
		r.Rank = v.Ranks[0].Rank
	}
	r.Part = &LogReport{Log: v}
	r.Recommendations = logRecommendations(v)
	return r, nil
}

// addRecord adds one memory line to its rank's series and row and to the peaks; byRank maps a rank to its index.
func (v *LogView) addRecord(rec trainlog.Record, byRank map[int]int) {
	i, ok := byRank[rec.Rank]
	if !ok {
		i = len(v.Series)
		byRank[rec.Rank] = i
		v.Series = append(v.Series, LogSeries{Rank: rec.Rank, XIsIteration: true})
		v.Ranks = append(v.Ranks, LogRankRow{Rank: rec.Rank, FirstIteration: -1, LastIteration: -1, MaxAllocated: -1, MaxReserved: -1, LastAllocated: -1, LastReserved: -1})
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
func (v *LogView) orderByRank() {
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
	ranks, series := make([]LogRankRow, len(order)), make([]LogSeries, len(order))
	for i, j := range order {
		ranks[i], series[i] = v.Ranks[j], v.Series[j]
	}
	v.Ranks, v.Series = ranks, series
}

// setTheory keeps the last theoretical-memory line and the gap of the allocated peak to it.
func (v *LogView) setTheory(theoretical []trainlog.Theoretical) {
	if n := len(theoretical); n > 0 {
		t := theoretical[n-1]
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

func logRecommendations(v *LogView) []findings.Finding {
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
