package analyze

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/memscan/memscan/categorize"
	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/memtimeline"
)

// TimelineView is the analysis of a torch.profiler memory timeline.
type TimelineView struct {
	Form   string `json:"form" msgpack:"form"` // "plot" or "raw"
	Points int    `json:"points" msgpack:"points"`
	Events int    `json:"events,omitempty" msgpack:"events,omitempty"`
	// Categories are the profiler's own names (as in the file); MemscanCategories the same categories under
	// memscan's names (TimelineCategory), index for index. The report's Categories and Peak use memscan's.
	Categories        []string `json:"categories" msgpack:"categories"`
	MemscanCategories []string `json:"memscan_categories" msgpack:"memscan_categories"`
	StartUS           int64    `json:"start_us" msgpack:"start_us"`
	EndUS             int64    `json:"end_us" msgpack:"end_us"`
	// PeakBytes is the highest sum over categories; PeakTimeUS/PeakIndex where it first occurs, and
	// PeakComposition what each category held then (largest first), under the profiler's names.
	PeakBytes       int64          `json:"peak_bytes" msgpack:"peak_bytes"`
	PeakTimeUS      int64          `json:"peak_time_us" msgpack:"peak_time_us"`
	PeakIndex       int            `json:"peak_index" msgpack:"peak_index"`
	PeakComposition []CategoryStat `json:"peak_composition" msgpack:"peak_composition"`
	// CategoryMax is each category's own maximum over the run (they need not coincide with the peak).
	CategoryMax []CategoryStat `json:"category_max" msgpack:"category_max"`
	FinalBytes  int64          `json:"final_bytes" msgpack:"final_bytes"`
	// Series is the timeline downsampled for plotting, peak kept; not in summary.json.
	Series *TimelineSeriesData `json:"-" msgpack:"series,omitempty"`
}

// TimelineSeriesData is per-category bytes at selected points.
type TimelineSeriesData struct {
	TimesUS    []int64   `msgpack:"times_us"`
	Categories []string  `msgpack:"categories"`
	Bytes      [][]int64 `msgpack:"bytes"` // [category][point]
	PeakIndex  int       `msgpack:"peak_index"`
}

// maxTimelinePlotPoints bounds the points kept for the timeline plot.
const maxTimelinePlotPoints = 4000

// AnalyzeTimeline analyzes a decoded memory timeline (in.Timeline) into a Report with format "memory-timeline".
func AnalyzeTimeline(ctx context.Context, in *load.Input, opts RuntimeOptions) (*Report, error) {
	if in == nil || in.Timeline == nil {
		return nil, errors.New("analyze timeline: input has no memory timeline")
	}
	tl := in.Timeline
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := &Report{Header: Header{File: in.Path, Format: in.Format, Rank: tl.Rank, Iteration: -1, Devices: []int{},
		Categories: []CategoryStat{}, Top: []Allocation{}, Recommendations: []findings.Finding{},
		Warnings: append([]string{}, tl.Warnings...)}}
	if r.Format == "" {
		r.Format = memtimeline.Format
	}
	n := tl.Points()
	v := &TimelineView{Form: tl.Form, Points: n, Events: tl.Events, Categories: slices.Clone(tl.Categories),
		MemscanCategories: make([]string, len(tl.Categories)), PeakComposition: []CategoryStat{}, CategoryMax: []CategoryStat{}}
	for k, name := range tl.Categories {
		v.MemscanCategories[k] = TimelineCategory(name)
	}
	if n == 0 {
		r.Part = &TimelineReport{MemoryTimeline: v}
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
			v.PeakComposition = append(v.PeakComposition, CategoryStat{Name: name, Bytes: b})
		}
		v.CategoryMax = append(v.CategoryMax, CategoryStat{Name: name, Bytes: slices.Max(tl.Bytes[k])})
	}
	byBytes := func(a, b CategoryStat) int { return cmp.Compare(b.Bytes, a.Bytes) }
	slices.SortStableFunc(v.PeakComposition, byBytes)
	slices.SortStableFunc(v.CategoryMax, byBytes)
	v.Series = downsampleTimeline(tl, totals, v.PeakIndex)
	r.Part = &TimelineReport{MemoryTimeline: v}
	r.Categories = CanonicalTimelineCategories(v.PeakComposition)
	r.Peak = &Peak{Device: -1, Bytes: v.PeakBytes, EventIndex: v.PeakIndex, TimeUS: v.PeakTimeUS, Categories: slices.Clone(r.Categories), Sites: []SiteStat{}}
	return r, nil
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

// CanonicalTimelineCategories renames profiler categories to memscan's (TimelineCategory), summing any that
// end up with the same name, largest first.
func CanonicalTimelineCategories(cs []CategoryStat) []CategoryStat {
	out := make([]CategoryStat, 0, len(cs))
	at := map[string]int{}
	for _, c := range cs {
		c.Name = TimelineCategory(c.Name)
		if i, ok := at[c.Name]; ok {
			out[i].Bytes += c.Bytes
			out[i].Count += c.Count
			continue
		}
		at[c.Name] = len(out)
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b CategoryStat) int { return cmp.Compare(b.Bytes, a.Bytes) })
	return out
}

// downsampleTimeline keeps at most maxTimelinePlotPoints points: in each bucket of consecutive points the one with the
// highest total survives, and the global peak always does, so the plot never hides the peak.
func downsampleTimeline(tl *memtimeline.Timeline, totals []int64, peak int) *TimelineSeriesData {
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
	s := &TimelineSeriesData{Categories: slices.Clone(tl.Categories), Bytes: make([][]int64, len(tl.Categories)), PeakIndex: -1}
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
