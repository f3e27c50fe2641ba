package results

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/memscan/memscan/internal/plots"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/report"
)

// This file renders the report of a memory-tracer JSON file (its primary device's peak, phases, modules,
// categories, sites and largest tensors) and the comparison of tracer files across ranks.

// Chart file names of a tracer file's views.
const (
	ChartTracerPhases  = "phase_breakdown.png"
	ChartTracerModules = "module_breakdown.png"
	// ChartTracerModulesByRank is a cross-input chart: module patterns across tracer ranks.
	ChartTracerModulesByRank = "modules_by_rank.png"
)

// tracer writes the text report's sections of a memory-tracer file. Its own section lists the primary device's
// tensors and sites with shape, phase and module; the generic lists before it would repeat them with less, so
// they are written only when the device has none.
func (t *textWriter) tracer(r *report.Report, tr *report.TracerReport) {
	v := tr.Tracer
	p := v.Primary()
	t.categories("Categories (listed tensors alive at the peak)", r.Categories)
	if p == nil || len(p.Top) == 0 {
		t.topAllocations(r.Top, "")
	}
	if p == nil || len(p.Sites) == 0 {
		t.sites(r.Sites, "")
	}

	t.section("Memory tracer peak snapshot")
	if len(v.Devices) > 1 {
		tb := newTable([]align{alignLeft, alignRight, alignRight, alignRight, alignRight}, "device", "peak", "listed", "not listed", "tensors")
		for _, d := range v.Devices {
			tb.add(d.Device, units.Bytes(d.PeakBytes), units.Bytes(d.ListedBytes), units.Bytes(d.GapBytes), strconv.Itoa(d.Tensors))
		}
		tb.write(t.w, 2)
		t.printf("\n")
	}
	if p == nil {
		t.printf("  the file lists no device\n")
		return
	}
	t.printf("  device %s: peak %s (%s bytes), listed tensors %s, not attributable %s\n", p.Device,
		units.Bytes(p.PeakBytes), GroupDigits(p.PeakBytes), units.Bytes(p.ListedBytes), units.Bytes(p.GapBytes))
	if p.GapExplanation != "" {
		t.printf("  %s\n", p.GapExplanation)
	}
	t.printf("  %d tensors listed, %d released later", p.Tensors, p.ReleasedTensors)
	if p.InferredMinMemoryMB > 0 {
		t.printf("; tensors under %d MiB were probably filtered out (min_memory_mb)", p.InferredMinMemoryMB)
	}
	t.printf("\n")
	if len(p.Phases) > 0 {
		t.printf("\n  by phase:\n")
		tb := newTable([]align{alignLeft, alignRight, alignRight, alignRight}, "phase", "size", "share", "tensors")
		for _, ph := range p.Phases {
			tb.add(ph.Name, units.Bytes(ph.Bytes), fmt.Sprintf("%.2f %%", ph.SharePct), strconv.Itoa(ph.Count))
		}
		tb.write(t.w, 4)
	}
	if len(p.Modules) > 0 {
		n := limit(len(p.Modules), t.opts.Top)
		t.printf("\n  by module (repeated layers merged, top %d):\n", n)
		tb := newTable([]align{alignLeft, alignRight, alignRight, alignRight, alignRight}, "module", "size", "share", "tensors", "modules")
		for _, m := range p.Modules[:n] {
			tb.add(truncate(m.Pattern, 70), units.Bytes(m.Bytes), fmt.Sprintf("%.2f %%", m.SharePct), strconv.Itoa(m.Count), moduleCount(m))
		}
		tb.write(t.w, 4)
	}
	if len(r.Categories) == 0 && len(p.Categories) > 0 {
		t.printf("\n  by category:\n")
		tb := newTable([]align{alignLeft, alignRight, alignRight, alignRight}, "category", "size", "share", "tensors")
		for _, c := range p.Categories {
			tb.add(c.Name, units.Bytes(c.Bytes), units.Percent(c.Bytes, p.ListedBytes), strconv.Itoa(c.Count))
		}
		tb.write(t.w, 4)
	}
	if len(p.Sites) > 0 {
		n := limit(len(p.Sites), t.opts.Top)
		t.printf("\n  by creation site (top %d):\n", n)
		tb := newTable([]align{alignRight, alignRight, alignLeft, alignLeft, alignLeft}, "size", "tensors", "category", "phases", "site")
		for _, s := range p.Sites[:n] {
			tb.add(units.Bytes(s.Bytes), strconv.Itoa(s.Count), s.Category, strings.Join(s.Phases, ","), truncate(orDash(s.Site), maxSiteWidth))
		}
		tb.write(t.w, 4)
	}
	if len(p.Top) > 0 {
		n := limit(len(p.Top), t.opts.Top)
		t.printf("\n  largest tensors (top %d):\n", n)
		tb := newTable([]align{alignRight, alignLeft, alignLeft, alignLeft, alignLeft, alignLeft}, "size", "shape", "phase", "category", "module", "site")
		for _, x := range p.Top[:n] {
			tb.add(units.Bytes(x.Bytes), x.Shape, x.Phase, x.Category, truncate(x.Module, 50), truncate(orDash(x.Site), 70))
		}
		tb.write(t.w, 4)
	}
}

func (t *textWriter) tracerCross(c *report.TracerCross) {
	if c == nil {
		return
	}
	t.section("Tracer inputs by rank")
	tb := newTable([]align{alignLeft, alignRight, alignLeft, alignRight, alignRight, alignRight, alignRight},
		"file", "rank", "device", "peak", "listed", "tensors", "vs median")
	for _, r := range c.Ranks {
		tb.add(truncate(r.File, 50), intOrDash(r.Rank), r.Device, units.Bytes(r.PeakBytes), units.Bytes(r.ListedBytes),
			strconv.Itoa(r.Tensors), fmt.Sprintf("%+.1f %%", r.VsMedianPct))
	}
	tb.write(t.w, 2)
	t.printf("  peak: max %s (rank %d), median %s, min %s; imbalance %.2f %%\n", units.Bytes(c.MaxPeakBytes), c.MaxPeakRank,
		units.Bytes(c.MedianPeakBytes), units.Bytes(c.MinPeakBytes), c.ImbalancePct)
	if len(c.Modules) > 0 {
		mods := append([]report.TracerModuleAcross(nil), c.Modules...)
		sort.SliceStable(mods, func(i, j int) bool { return mods[i].SpreadBytes > mods[j].SpreadBytes })
		n := limit(len(mods), min(t.opts.Top, report.DefaultTracerModuleRows))
		if t.opts.Top == 0 {
			n = min(len(mods), report.DefaultTracerModuleRows)
		}
		t.printf("\n  modules that differ most across ranks (top %d):\n", n)
		mt := newTable([]align{alignLeft, alignRight, alignRight, alignRight}, "module", "min", "max", "spread")
		for _, m := range mods[:n] {
			mt.add(truncate(m.Pattern, 70), units.Bytes(m.MinBytes), units.Bytes(m.MaxBytes), units.Bytes(m.SpreadBytes))
		}
		mt.write(t.w, 4)
	}
}

// tracer writes the Markdown findings and tables of a memory-tracer file.
func (m *mdWriter) tracer(r *report.Report, tr *report.TracerReport) {
	var facts []string
	if p := tr.Tracer.Primary(); p != nil {
		facts = append(facts, fmt.Sprintf("The tracer recorded a peak of **%s** on %s; the listed tensors account for %s (%s), %s is not attributable.",
			units.Bytes(p.PeakBytes), mdText(p.Device), units.Bytes(p.ListedBytes), units.Percent(p.ListedBytes, p.PeakBytes), units.Bytes(p.GapBytes)))
		if len(p.Phases) > 0 {
			ph := p.Phases[0]
			facts = append(facts, fmt.Sprintf("Phase **%s** holds the most: %s (%.1f %% of listed).", mdText(ph.Name), units.Bytes(ph.Bytes), ph.SharePct))
		}
		if len(p.Modules) > 0 {
			facts = append(facts, moduleFinding(p.Modules[0]))
		}
	}
	m.findings(r, facts)
	m.inputRecommendations(r.Recommendations)
	m.categories("Memory by category", r.Categories)
	m.topAllocations(r.Top, "")
}

// moduleFinding names the module group holding the most; only a pattern that merged repeated layers says how many.
func moduleFinding(m report.ModuleStat) string {
	switch {
	case m.Pattern == report.UnknownModule:
		return fmt.Sprintf("%s of listed memory (%.1f %%) was created outside any module's forward (module `%s`).", units.Bytes(m.Bytes), m.SharePct, mdCode(m.Pattern))
	case m.MergedModules > 1:
		return fmt.Sprintf("Module `%s` holds %s (%.1f %% of listed, %d modules merged).", mdCode(m.Pattern), units.Bytes(m.Bytes), m.SharePct, m.MergedModules)
	}
	return fmt.Sprintf("Module `%s` holds %s (%.1f %% of listed).", mdCode(m.Pattern), units.Bytes(m.Bytes), m.SharePct)
}

// maxModuleGroups bounds the patterns compared across ranks.
const maxModuleGroups = 10

// maxModuleBars bounds the module chart; the table in the text report lists every pattern.
const maxModuleBars = 30

// tracerCharts maps a tracer file to its charts: the peak of its primary device against the tensors it lists,
// the largest tensors, the categories, and the phase and module breakdowns.
func tracerCharts(r *report.Report, tr *report.TracerReport) []chartJob {
	var jobs []chartJob
	p := tr.Tracer.Primary()
	if p != nil {
		// A tracer file has a peak and the tensors it lists instead of allocator totals.
		peak := plots.PiePanel{
			Title: "Peak " + units.Bytes(p.PeakBytes) + " on " + p.Device,
			Slices: []plots.Slice{
				{Label: "listed tensors", Value: float64(p.ListedBytes), Color: plots.ColorAllocated},
				{Label: "not listed", Value: float64(max(p.GapBytes, 0)), Color: plots.ColorFree},
			},
		}
		jobs = append(jobs, overviewChart(r, peak, "Listed tensors by category"))
	}
	jobs = append(jobs, topCharts(r, ChartTopConsumers, "")...)
	jobs = append(jobs, categoryCharts(r, ChartCategories, "", "listed tensors alive at the peak", "tensor")...)
	if p != nil && len(p.Phases) > 0 {
		where := fmt.Sprintf("%s, %s", titleFile(r.File), p.Device)
		title := "Memory alive at the peak by creation phase: " + where
		jobs = append(jobs, newChartJob(ChartTracerPhases, title, func(path string) error {
			var names []string
			var bytes []int64
			var counts []int
			for _, ph := range p.Phases {
				names, bytes, counts = append(names, ph.Name), append(bytes, ph.Bytes), append(counts, ph.Count)
			}
			return plots.TracerPhases(path, title, names, bytes, counts, p.ListedBytes)
		}))
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
		jobs = append(jobs, newChartJob(ChartTracerModules, mtitle, func(path string) error {
			var bytes []int64
			var merged []int
			for _, m := range mods {
				bytes, merged = append(bytes, m.Bytes), append(merged, m.MergedModules)
			}
			return plots.TracerModules(path, mtitle, labels, bytes, merged, report.UnknownModule, p.ListedBytes)
		}))
	}
	return jobs
}

// tracerCrossCharts compares tracer ranks module by module: the patterns that differ most between ranks (the
// cross view orders them by spread) with one bar per rank.
func tracerCrossCharts(c *report.TracerCross) []chartJob {
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
			ranks = append(ranks, crossLabel(report.CrossRow{File: r.File, Rank: r.Rank, Iteration: -1}))
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
		if p != report.UnknownModule {
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
