package analyze

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/input"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/report"
)

// CrossInputs compares several reports: one row per input (sorted by iteration, rank, file), the max and median of
// reserved and allocated bytes, the imbalance (max/median − 1 of reserved), inputs more than findings.OutlierPct above the
// median of their own iteration, and recommendations for rank imbalance and growth across iterations. Inputs are
// compared as ranks only when they form a rank set (see rankSetProblem); otherwise they are listed in a plain
// table and Cross.NotRankSet says why. Medians follow units.PercentileIndex, as memscan merge's do.
// It returns nil for an empty list.
func CrossInputs(reports []*report.Report) *report.Cross {
	rows := crossRows(reports)
	if len(rows) == 0 {
		return nil
	}
	slices.SortStableFunc(rows, func(x, y report.CrossRow) int {
		return cmp.Or(cmp.Compare(x.Iteration, y.Iteration), cmp.Compare(x.Rank, y.Rank), cmp.Compare(x.File, y.File))
	})
	c := &report.Cross{Rows: rows, Recommendations: []findings.Finding{}}
	// Reserved and allocated statistics, outliers and growth compare allocator measurements only: a tracer file or
	// a log in the same run has none, and its zeros would drag the median down. Ranks are compared within an
	// iteration: rank 3 at step 10 against rank 3 at step 20 is growth, not imbalance.
	byIter := map[int][]int{}
	var iters []int
	for i, r := range rows {
		if !r.HasAllocatorTotals() {
			continue
		}
		if _, ok := byIter[r.Iteration]; !ok {
			iters = append(iters, r.Iteration)
		}
		byIter[r.Iteration] = append(byIter[r.Iteration], i)
	}
	c.Iterations = len(iters)
	if c.NotRankSet = rankSetProblem(rows, iters, byIter); c.NotRankSet == "" {
		setImbalance(c, rows, iters, byIter)
		addOutliers(c, rows, iters, byIter)
	} else {
		c.ImbalanceIteration = -1 // no iteration's statistics are shown
	}
	addGrowth(c, rows)
	return c
}

// rankSetProblem says why the inputs with allocator totals are not the ranks of one run, or "" when they are:
// every input names its rank, and no rank appears twice in an iteration. Unrelated snapshots compared as ranks
// gave "rank imbalance 708 %"; two runs of one iteration would count every rank twice. A rank given twice is
// told apart as a second run when the inputs' paths name different runs (input.RunOf). Fewer than two such
// inputs have nothing to compare, and no problem.
func rankSetProblem(rows []report.CrossRow, iters []int, byIter map[int][]int) string {
	total, unnamed := 0, 0
	for _, it := range iters {
		for _, i := range byIter[it] {
			total++
			if rows[i].Rank < 0 {
				unnamed++
			}
		}
	}
	if total < 2 {
		return ""
	}
	if unnamed > 0 {
		return fmt.Sprintf("the paths of %d of the %d snapshots name no rank, so they are not compared as the ranks of one job", unnamed, total)
	}
	for _, it := range iters {
		files := map[int][]string{} // by rank
		for _, i := range byIter[it] {
			files[rows[i].Rank] = append(files[rows[i].Rank], rows[i].File)
		}
		for _, i := range byIter[it] {
			same := files[rows[i].Rank]
			if len(same) < 2 {
				continue
			}
			runs := map[string]bool{}
			for _, f := range same {
				runs[input.RunOf(f)] = true
			}
			if len(runs) > 1 {
				return fmt.Sprintf("rank %d%s comes from %d runs (%s), so the snapshots are not one job's ranks", rows[i].Rank,
					iterOf(it), len(runs), strings.Join(slices.Sorted(maps.Keys(runs)), ", "))
			}
			return fmt.Sprintf("rank %d%s is given by %d snapshots (%s), so they are not one job's ranks", rows[i].Rank,
				iterOf(it), len(same), strings.Join(same, ", "))
		}
	}
	return ""
}

// iterOf is " of iteration N", or "" when the paths name none.
func iterOf(it int) string {
	if it < 0 {
		return ""
	}
	return fmt.Sprintf(" of iteration %d", it)
}

// crossRows is one row per input, with the allocator measures only where the input has them.
func crossRows(reports []*report.Report) []report.CrossRow {
	var rows []report.CrossRow
	for _, r := range reports {
		if r == nil {
			continue
		}
		row := report.CrossRow{File: r.File, Kind: r.Kind(), Rank: r.Rank, Iteration: r.Iteration}
		if t, ok := r.AllocatorTotals(); ok {
			row.ReservedBytes, row.AllocatedBytes, row.EfficiencyPct = t.ReservedBytes, t.AllocatedBytes, t.EfficiencyPct
		}
		row.PeakBytes, _ = r.RecordedPeak()
		if t, ok := r.Part.(*report.TracerReport); ok {
			row.ListedBytes = t.ListedBytes
		}
		rows = append(rows, row)
	}
	return rows
}

// setImbalance sets the reserved and allocated statistics of the iteration whose ranks are most unbalanced.
// byIter lists, per iteration in iters, the rows with allocator totals.
func setImbalance(c *report.Cross, rows []report.CrossRow, iters []int, byIter map[int][]int) {
	// The only iteration in the usual single-step run.
	for k, it := range iters {
		var res, alloc []int64
		for _, i := range byIter[it] {
			res = append(res, rows[i].ReservedBytes)
			alloc = append(alloc, rows[i].AllocatedBytes)
		}
		maxRes, medRes := slices.Max(res), units.Percentile(res, 50)
		pct := 0.0
		if medRes > 0 {
			pct = (float64(maxRes)/float64(medRes) - 1) * 100
		}
		if k == 0 || pct > c.ImbalancePct {
			c.MaxReservedBytes, c.MedianReservedBytes = maxRes, medRes
			c.MaxAllocatedBytes, c.MedianAllocatedBytes = slices.Max(alloc), units.Percentile(alloc, 50)
			c.ImbalancePct, c.ImbalanceIteration = pct, it
		}
	}

}

// addOutliers lists the inputs more than findings.OutlierPct above the median of their iteration and recommends
// balancing the worst.
func addOutliers(c *report.Cross, rows []report.CrossRow, iters []int, byIter map[int][]int) {
	// Ranks of the same step should hold similar memory.
	worst, worstPct, worstMed := -1, 0.0, int64(0)
	for _, it := range iters {
		idx := byIter[it]
		if len(idx) < 2 {
			continue
		}
		var v []int64
		for _, i := range idx {
			v = append(v, rows[i].ReservedBytes)
		}
		med := units.Percentile(v, 50)
		for _, i := range idx {
			if med > 0 && float64(rows[i].ReservedBytes) > float64(med)*(1+findings.OutlierPct/100) {
				c.OutlierFiles = append(c.OutlierFiles, rows[i].File)
				if p := units.Share(rows[i].ReservedBytes-med, med); p > worstPct {
					worst, worstPct, worstMed = i, p, med
				}
			}
		}
	}
	if worst >= 0 {
		w := rows[worst]
		c.Recommendations = append(c.Recommendations, findings.NewInputsImbalance(w.File, rankIterLabel(w.Rank, w.Iteration),
			w.ReservedBytes, worstPct, worstMed, iterationLabel(w.Iteration), len(c.OutlierFiles)))
	}

}

// addGrowth recommends a look at ranks whose allocated bytes never drop and rise overall across iterations.
func addGrowth(c *report.Cross, rows []report.CrossRow) {
	byRank := map[int][]report.CrossRow{}
	var ranks []int
	for _, r := range rows {
		if r.Iteration < 0 || !r.HasAllocatorTotals() {
			continue
		}
		if _, ok := byRank[r.Rank]; !ok {
			ranks = append(ranks, r.Rank)
		}
		byRank[r.Rank] = append(byRank[r.Rank], r)
	}
	for _, rk := range ranks {
		rs := byRank[rk] // already in iteration order
		if len(rs) < findings.LeakAcrossIterationsMinSnapshots {
			continue
		}
		monotone, grew := true, 0
		for k := 1; k < len(rs); k++ {
			switch {
			case rs[k].AllocatedBytes < rs[k-1].AllocatedBytes:
				monotone = false
			case rs[k].AllocatedBytes > rs[k-1].AllocatedBytes:
				grew++
			}
		}
		growth := rs[len(rs)-1].AllocatedBytes - rs[0].AllocatedBytes
		if monotone && 2*grew >= len(rs)-1 && growth >= findings.LeakAcrossIterationsMinGrowthBytes {
			c.Recommendations = append(c.Recommendations, findings.NewLeakAcrossIterations(rk, rs[0].AllocatedBytes, rs[0].Iteration,
				rs[len(rs)-1].AllocatedBytes, rs[len(rs)-1].Iteration, len(rs)))
		}
	}
}

// rankIterLabel is " (rank R, iteration N)" with only the parts the path told (−1 is unknown), or "".
func rankIterLabel(rank, iter int) string {
	var parts []string
	if rank >= 0 {
		parts = append(parts, fmt.Sprintf("rank %d", rank))
	}
	if iter >= 0 {
		parts = append(parts, fmt.Sprintf("iteration %d", iter))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// iterationLabel names the group an input was compared with.
func iterationLabel(iter int) string {
	if iter < 0 {
		return "the inputs"
	}
	return fmt.Sprintf("iteration %d", iter)
}
