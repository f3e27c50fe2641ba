package results

import (
	"fmt"
	"strings"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/plots"
)

// Chart file names of the tracer, profiler-timeline and training-log views.
const (
	ChartTracerPhases  = "phase_breakdown.png"
	ChartTracerModules = "module_breakdown.png"
	ChartLogMemory     = "log_memory.png"
	// ChartTracerModulesByRank is a cross-input chart: module patterns across tracer ranks.
	ChartTracerModulesByRank = "modules_by_rank.png"
)

// maxModuleGroups bounds the patterns compared across ranks.
const maxModuleGroups = 10

// maxModuleBars bounds the module chart; the table in the text report lists every pattern.
const maxModuleBars = 30

// runtimeInputCharts maps a tracer, memory-timeline or training-log report to its charts: the phase and module
// breakdowns of a tracer file, memory_timeline.png stacked by profiler category, and the memory lines of a log
// over iterations.
func runtimeInputCharts(r *analyze.Report) []chartJob {
	var jobs []chartJob
	add := func(name, title string, draw func(string) error) {
		jobs = append(jobs, chartJob{file: PlotFile{Path: name, Title: title}, draw: draw})
	}
	if p := tracerPrimary(r); p != nil && len(p.Phases) > 0 {
		where := fmt.Sprintf("%s, %s", titleFile(r.File), p.Device)
		title := "Memory alive at the peak by creation phase: " + where
		add(ChartTracerPhases, title, func(path string) error {
			var names []string
			var bytes []int64
			var counts []int
			for _, ph := range p.Phases {
				names, bytes, counts = append(names, ph.Name), append(bytes, ph.Bytes), append(counts, ph.Count)
			}
			return plots.TracerPhases(path, title, names, bytes, counts, p.ListedBytes)
		})
		mods := p.Modules[:min(len(p.Modules), maxModuleBars)]
		var pats []string
		for _, m := range mods {
			pats = append(pats, m.Pattern)
		}
		labels, prefix := stripModulePrefix(pats)
		mtitle := "Memory alive at the peak by module (layers.N merged): " + where
		if prefix != "" {
			mtitle += ", under " + prefix
		}
		add(ChartTracerModules, mtitle, func(path string) error {
			var bytes []int64
			var merged []int
			for _, m := range mods {
				bytes, merged = append(bytes, m.Bytes), append(merged, m.MergedModules)
			}
			return plots.TracerModules(path, mtitle, labels, bytes, merged, analyze.UnknownModule, p.ListedBytes)
		})
	}
	if v := r.MemoryTimeline; v != nil && v.Series != nil && len(v.Series.TimesUS) > 0 {
		// The profiler's export names no device; the rank, when the path gives it, tells files apart.
		title := "Memory timeline by category (torch.profiler): " + titleFile(r.File)
		if r.Rank >= 0 {
			title += fmt.Sprintf(", rank %d", r.Rank)
		}
		add(ChartTimeline, title, func(path string) error {
			s := v.Series
			return plots.ProfilerTimeline(path, title, s.TimesUS, s.Categories, s.Bytes, s.PeakIndex)
		})
	}
	if v := r.Log; v != nil && len(v.Series) > 0 {
		title := fmt.Sprintf("Memory per %s: %s (%s log)", logXName(v), titleFile(r.File), v.Dialect)
		if v.DeviceName != "" { // the log names the GPU, not which device index each rank used
			title = fmt.Sprintf("Memory per %s: %s (%s log, %s)", logXName(v), titleFile(r.File), v.Dialect, v.DeviceName)
		}
		add(ChartLogMemory, title, func(path string) error {
			return plots.LogMemory(path, title, logXName(v), logLines(v))
		})
	}
	return jobs
}

// tracerCrossCharts compares tracer ranks module by module: the patterns that differ most between ranks (the
// cross view orders them by spread) with one bar per rank.
func tracerCrossCharts(c *analyze.TracerCross) []chartJob {
	if c == nil || len(c.Ranks) < 2 || len(c.Modules) == 0 {
		return nil
	}
	mods := c.Modules[:min(len(c.Modules), maxModuleGroups)]
	var pats []string
	for _, m := range mods {
		pats = append(pats, m.Pattern)
	}
	labels, prefix := stripModulePrefix(pats)
	title := fmt.Sprintf("Module memory at the peak across %d tracer ranks", len(c.Ranks))
	if prefix != "" {
		title += ", under " + prefix
	}
	return []chartJob{{input: -1, file: PlotFile{Path: ChartTracerModulesByRank, Title: title}, draw: func(path string) error {
		var ranks []string
		for _, r := range c.Ranks {
			ranks = append(ranks, crossLabel(analyze.CrossRow{File: r.File, Rank: r.Rank, Iteration: -1}))
		}
		rows := make([][]int64, len(mods))
		for i, m := range mods {
			rows[i] = m.Bytes
		}
		return plots.TracerModulesByRank(path, title, labels, ranks, rows)
	}}}
}

// stripModulePrefix removes the dotted prefix every module pattern shares (e.g.
// "DistributedDataParallel.module.module.") so chart labels show what differs; Unknown is left alone, and a
// prefix is only removed when at least two patterns share it and every pattern keeps a name.
func stripModulePrefix(patterns []string) ([]string, string) {
	var parts [][]string
	for _, p := range patterns {
		if p != analyze.UnknownModule {
			parts = append(parts, strings.Split(p, "."))
		}
	}
	if len(parts) < 2 {
		return patterns, ""
	}
	n := len(parts[0]) - 1
	for _, ps := range parts[1:] {
		n = min(n, len(ps)-1)
		for i := 0; i < n; i++ {
			if ps[i] != parts[0][i] {
				n = i
				break
			}
		}
	}
	if n <= 0 {
		return patterns, ""
	}
	prefix := strings.Join(parts[0][:n], ".") + "."
	out := make([]string, len(patterns))
	for i, p := range patterns {
		out[i] = strings.TrimPrefix(p, prefix)
	}
	return out, prefix
}

func logXName(v *analyze.LogView) string {
	for _, s := range v.Series {
		if !s.XIsIteration {
			return "memory line"
		}
	}
	return "iteration"
}

// logLines turns each rank's series into plot lines: allocated and reserved solid, their peaks dashed; measures
// a dialect does not print are left out.
func logLines(v *analyze.LogView) []plots.LogLine {
	var out []plots.LogLine
	for _, s := range v.Series {
		x := toFloats(s.X)
		rank := "no rank"
		if s.Rank >= 0 {
			rank = fmt.Sprintf("rank %d", s.Rank)
		}
		for _, m := range []struct {
			name   string
			vals   []int64
			dashed bool
		}{
			{"allocated", s.Allocated, false},
			{"max allocated", s.MaxAllocated, true},
			{"reserved", s.Reserved, false},
			{"max reserved", s.MaxReserved, true},
		} {
			vals := make([]float64, len(m.vals))
			present := false
			for i, b := range m.vals {
				vals[i] = float64(b)
				present = present || b >= 0
			}
			if !present {
				continue
			}
			name := rank + " " + m.name
			// One rank: the usual allocated/reserved colours; several: a stable colour per line.
			col := plots.CategoryColor(name)
			if len(v.Series) == 1 {
				col = plots.ColorAllocated
				if m.name == "reserved" || m.name == "max reserved" {
					col = plots.ColorReserved
				}
			}
			out = append(out, plots.LogLine{Name: name, X: x, Values: vals, Dashed: m.dashed, Color: col})
		}
	}
	return out
}
