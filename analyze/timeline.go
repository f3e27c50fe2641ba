package analyze

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/memtimeline"
	"github.com/memscan/memscan/report"
)

// maxTimelinePlotPoints bounds the points kept for the timeline plot.
const maxTimelinePlotPoints = 4000

// AnalyzeTimeline analyzes a decoded memory timeline (in.Timeline) into a Report with format "memory-timeline".
func AnalyzeTimeline(ctx context.Context, in *load.Input, opts RuntimeOptions) (*report.Report, error) {
	if in == nil || in.Timeline == nil {
		return nil, errors.New("analyze timeline: input has no memory timeline")
	}
	tl := in.Timeline
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := &report.Report{Header: report.Header{File: in.Path, Format: in.Format, Rank: tl.Rank, Iteration: -1, Devices: []int{},
		Categories: []report.CategoryStat{}, Top: []report.Allocation{}, Recommendations: []findings.Finding{},
		Warnings: append([]string{}, tl.Warnings...)}}
	if r.Format == "" {
		r.Format = memtimeline.Format
	}
	n := tl.Points()
	v := &report.TimelineView{Form: tl.Form, Points: n, Events: tl.Events, Categories: slices.Clone(tl.Categories),
		MemscanCategories: make([]string, len(tl.Categories)), PeakComposition: []report.CategoryStat{}, CategoryMax: []report.CategoryStat{}}
	for k, name := range tl.Categories {
		v.MemscanCategories[k] = TimelineCategory(name)
	}
	if n == 0 {
		r.Part = &report.TimelineReport{MemoryTimeline: v}
		r.Warnings = append(r.Warnings, "the memory timeline has no points")
		return r, nil
	}
	v.StartUS, v.EndUS = tl.TimesUS[0], tl.TimesUS[n-1]
	totals := make([]int64, n)
	for i := range n {
		totals[i] = tl.Total(i)
		if i == 0 || totals[i] > v.PeakBytes {
			v.PeakBytes, v.PeakIndex = totals[i], i
		}
	}
	v.PeakTimeUS = tl.TimesUS[v.PeakIndex]
	v.FinalBytes = totals[n-1]
	for k, name := range tl.Categories {
		if b := tl.Bytes[k][v.PeakIndex]; b != 0 {
			v.PeakComposition = append(v.PeakComposition, report.CategoryStat{Name: name, Bytes: b})
		}
		v.CategoryMax = append(v.CategoryMax, report.CategoryStat{Name: name, Bytes: slices.Max(tl.Bytes[k])})
	}
	byBytes := func(a, b report.CategoryStat) int { return cmp.Compare(b.Bytes, a.Bytes) }
	slices.SortStableFunc(v.PeakComposition, byBytes)
	slices.SortStableFunc(v.CategoryMax, byBytes)
	v.Series = downsampleTimeline(tl, totals, v.PeakIndex)
	r.Part = &report.TimelineReport{MemoryTimeline: v}
	r.Categories = v.CanonicalCategories(v.PeakComposition)
	r.Peak = &report.Peak{Device: -1, Bytes: v.PeakBytes, EventIndex: v.PeakIndex, TimeUS: v.PeakTimeUS, Categories: slices.Clone(r.Categories), Sites: []report.SiteStat{}}
	return r, nil
}

// downsampleTimeline keeps at most maxTimelinePlotPoints points: in each bucket of consecutive points the one with the
// highest total survives, and the global peak always does, so the plot never hides the peak.
func downsampleTimeline(tl *memtimeline.Timeline, totals []int64, peak int) *report.TimelineSeriesData {
	n := len(totals)
	keep := make([]int, 0, min(n, maxTimelinePlotPoints))
	if n <= maxTimelinePlotPoints {
		for i := range n {
			keep = append(keep, i)
		}
	} else {
		for b := range maxTimelinePlotPoints {
			lo, hi := b*n/maxTimelinePlotPoints, (b+1)*n/maxTimelinePlotPoints
			best := lo
			for i := lo; i < hi; i++ {
				if i == peak {
					best = i
					break
				}
				if totals[i] > totals[best] {
					best = i
				}
			}
			keep = append(keep, best)
		}
	}
	s := &report.TimelineSeriesData{Categories: slices.Clone(tl.Categories), Bytes: make([][]int64, len(tl.Categories)), PeakIndex: -1}
	for _, i := range keep {
		if i == peak {
			s.PeakIndex = len(s.TimesUS)
		}
		s.TimesUS = append(s.TimesUS, tl.TimesUS[i])
		for k := range tl.Bytes {
			s.Bytes[k] = append(s.Bytes[k], tl.Bytes[k][i])
		}
	}
	return s
}

// TimelineCategory maps a torch.profiler memory-timeline category to memscan's name for it (package
// categorize), so that a timeline's categories line up with a snapshot's or tracer's in compare, merge and
// calibration. The profiler's names are matched in any case and with "_" for " " (OPTIMIZER_STATE, as trace
// exports spell them). "Temporary" (a tensor freed inside the op that made it) has no memscan counterpart and
// keeps its name; names the profiler does not use pass through unchanged.
func TimelineCategory(name string) string {
	switch strings.ToLower(strings.ReplaceAll(strings.TrimSpace(name), "_", " ")) {
	case "parameter":
		return categorize.Parameters
	case "optimizer state":
		return categorize.OptimizerState
	case "input":
		return categorize.DataInput
	case "temporary":
		return "Temporary"
	case "activation":
		return categorize.Activation
	case "gradient":
		return categorize.Gradient
	case "autograd detail":
		return categorize.Autograd
	case "unknown", "none", "":
		return categorize.Unknown
	}
	return name
}
