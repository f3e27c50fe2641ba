package results

import (
	"fmt"

	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/report"
)

// This file holds the views that the text report, README.md and index.html render alike, so the three show the
// same columns and rows.

// crossView is the cross-input table with only the columns that some input has: rank and iteration when a path
// names them, the allocator columns
// (reserved, allocated, efficiency) when an input is a snapshot, listed bytes when one is a tracer file, the peak
// when any input recorded one. A row of another kind shows "-" in a column it has no number for.
type crossView struct {
	Header []string
	Aligns []align
	Rows   []crossViewRow
	// Totals says whether the allocator columns apply; Snapshots counts the rows that have them (the reserved
	// imbalance compares at least two).
	Totals    bool
	Snapshots int
}

type crossViewRow struct {
	File  string
	Cells []string // the columns after the file, as Header[1:]
}

func newCrossView(c *report.Cross) crossView {
	var totals, peak, listed, ranks, iters bool
	snapshots := 0
	for _, r := range c.Rows {
		ranks = ranks || r.Rank >= 0
		iters = iters || r.Iteration >= 0
		if r.HasAllocatorTotals() {
			totals = true
			snapshots++
		}
		peak = peak || r.PeakBytes > 0
		listed = listed || r.ListedBytes > 0
	}
	v := crossView{Totals: totals, Snapshots: snapshots, Header: []string{"file"}, Aligns: []align{alignLeft}}
	col := func(on bool, name string) {
		if on {
			v.Header = append(v.Header, name)
			v.Aligns = append(v.Aligns, alignRight)
		}
	}
	col(ranks, "rank")
	col(iters, "iteration")
	col(totals, "reserved")
	col(totals, "allocated")
	col(peak, "peak")
	col(listed, "listed")
	col(totals, "efficiency")
	for _, r := range c.Rows {
		row := crossViewRow{File: r.File}
		if ranks {
			row.Cells = append(row.Cells, intOrDash(r.Rank))
		}
		if iters {
			row.Cells = append(row.Cells, intOrDash(r.Iteration))
		}
		if totals {
			row.Cells = append(row.Cells, totalsCell(r, units.Bytes(r.ReservedBytes)), totalsCell(r, units.Bytes(r.AllocatedBytes)))
		}
		if peak {
			row.Cells = append(row.Cells, positiveBytes(r.PeakBytes))
		}
		if listed {
			row.Cells = append(row.Cells, positiveBytes(r.ListedBytes))
		}
		if totals {
			row.Cells = append(row.Cells, totalsCell(r, fmt.Sprintf("%.2f %%", r.EfficiencyPct)))
		}
		v.Rows = append(v.Rows, row)
	}
	return v
}

func totalsCell(r report.CrossRow, s string) string {
	if !r.HasAllocatorTotals() {
		return "-"
	}
	return s
}

// positiveBytes renders a byte count that is absent when zero or negative (a peak no trace recorded).
func positiveBytes(n int64) string {
	if n <= 0 {
		return "-"
	}
	return units.Bytes(n)
}

// allocGroup is a run of allocations in the top-N list with the same site, size, requested size, category and
// state: real snapshots hold dozens of identical blocks (one per layer, one per optimizer slot), which read better
// as one row with a count. summary.json keeps one entry per allocation.
type allocGroup struct {
	report.Allocation
	Count int
	// Rank is the 1-based position of the group's first allocation in the list.
	Rank int
}

// groupAllocations groups identical allocations among the first n of top (which is ordered by size), keeping the
// order of first appearance. Addresses may differ within a group, and devices: a group on several has Device −1.
func groupAllocations(top []report.Allocation, n int) []allocGroup {
	type key struct {
		size, requested       int64
		site, category, state string
	}
	at := map[key]int{}
	var out []allocGroup
	for i, a := range top[:min(n, len(top))] {
		k := key{a.Size, a.RequestedSize, a.Site, a.Category, a.State}
		if g, ok := at[k]; ok {
			out[g].Count++
			if out[g].Device != a.Device {
				out[g].Device = -1 // the group spans devices
			}
			continue
		}
		at[k] = len(out)
		out = append(out, allocGroup{Allocation: a, Count: 1, Rank: i + 1})
	}
	return out
}

// countLabel renders a group's count as "×12", and nothing for a single allocation.
func countLabel(n int) string {
	if n <= 1 {
		return ""
	}
	return fmt.Sprintf("×%d", n)
}

// countOrDash renders a category's count; 0 means the input does not count (a profiler timeline has bytes only).
func countOrDash(n int) string {
	if n <= 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

// moduleCount renders how many modules a tracer pattern merged; the Unknown group is not a pattern.
func moduleCount(m report.ModuleStat) string {
	if m.Pattern == report.UnknownModule {
		return "-"
	}
	return fmt.Sprint(m.MergedModules)
}

// categorySum is the total the category shares are taken of.
func categorySum(cs []report.CategoryStat) int64 {
	var sum int64
	for _, c := range cs {
		sum += c.Bytes
	}
	return sum
}
