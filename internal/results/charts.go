package results

import (
	"context"
	"errors"
	"fmt"
	"image/color"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/internal/plots"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/phases"
	"github.com/memscan/memscan/report"
)

// Chart file names inside a run directory (or inside an input's subdirectory when a run has several inputs).
const (
	ChartOverview     = "memory_overview.png"
	ChartTopConsumers = "top_consumers.png"
	ChartCategories   = "category_breakdown.png"
	// With a trace the two charts above show the peak, and these the blocks live at the dump.
	ChartTopConsumersDump = "top_consumers_at_dump.png"
	ChartCategoriesDump   = "category_breakdown_at_dump.png"
	ChartSizes            = "size_distribution.png"
	ChartEfficiency       = "memory_efficiency.png"
	ChartTimeline         = "memory_timeline.png"
	ChartRanks            = "ranks_comparison.png"
)

// Chart limits: beyond these a chart stops being readable.
const (
	topConsumersInChart = 30
	maxTimelineStacks   = 8
)

// ChartSet lists the charts written for a run.
type ChartSet struct {
	Inputs [][]PlotFile // indexed like run.Inputs
	Cross  []PlotFile
}

// chartJob is one PNG to draw; jobs run in a bounded pool because rasterizing is CPU-bound.
type chartJob struct {
	input int // -1 for the cross-input charts
	file  PlotFile
	draw  func(path string) error
	// long marks a chart that takes several times as long as the others (a trace's timeline): the pool starts
	// those first (chartPlan.tasks), so that none is left to run alone at the end.
	long bool
}

// WritePlots draws every chart of run into dir, at most jobs at a time. Inputs of a several-input run get a
// subdirectory named after the input (iter1_rank0/, ...). A chart that fails to draw is reported in the
// returned error while the others are still written; the ChartSet lists only the charts that exist.
func WritePlots(ctx context.Context, dir string, run *report.Run, jobs int) (ChartSet, error) {
	p, err := planCharts(dir, run)
	if err != nil {
		return ChartSet{Inputs: make([][]PlotFile, len(run.Inputs))}, err
	}
	runTasks(jobs, p.tasks(ctx))
	return p.result(ctx)
}

// chartPlan is the charts of a run, to be drawn as tasks (Write runs them beside its other work) and then
// gathered (result).
type chartPlan struct {
	dir    string
	inputs int
	all    []chartJob
	ok     []bool
	mu     sync.Mutex
	errs   []error
}

// Expected cost of a chart, in microseconds (runTasks): a trace's timeline and its envelopes take several times
// as long as the others.
const (
	chartCost     = 20_000
	longChartCost = 60_000
)

// planCharts lists every chart of run and makes the subdirectories of a several-input run.
func planCharts(dir string, run *report.Run) (*chartPlan, error) {
	p := &chartPlan{dir: dir, inputs: len(run.Inputs)}
	subdirs := inputSubdirs(run)
	charted := chartedInputs(run)
	for i, r := range run.Inputs {
		if r == nil || !charted[i] {
			continue
		}
		for _, j := range reportCharts(r) {
			j.input = i
			j.file.Path = path.Join(subdirs[i], j.file.Path)
			p.all = append(p.all, j)
		}
	}
	if c := run.Cross; c != nil && len(c.Rows) > 1 {
		if j, ok := ranksChart(c); ok {
			p.all = append(p.all, j)
		}
		p.all = append(p.all, tracerCrossCharts(c.Tracer)...)
	}
	for i, sub := range subdirs {
		if sub == "" || !charted[i] {
			continue
		}
		if err := mkdirAll(filepath.Join(dir, filepath.FromSlash(sub))); err != nil {
			return nil, err
		}
	}
	p.ok = make([]bool, len(p.all))
	return p, nil
}

// tasks returns one task per chart; a chart not drawn yet when ctx ends is skipped.
func (p *chartPlan) tasks(ctx context.Context) []task {
	out := make([]task, len(p.all))
	for k, j := range p.all {
		cost := float64(chartCost)
		if j.long {
			cost = longChartCost
		}
		out[k] = task{cost: cost, do: func() {
			if ctx.Err() != nil {
				return
			}
			if err := j.draw(filepath.Join(p.dir, filepath.FromSlash(j.file.Path))); err != nil {
				p.mu.Lock()
				p.errs = append(p.errs, fmt.Errorf("%s: %w", j.file.Path, err))
				p.mu.Unlock()
				return
			}
			p.ok[k] = true
		}}
	}
	return out
}

// result lists the charts drawn, and joins the errors of those that could not be (ctx's error when it ended).
func (p *chartPlan) result(ctx context.Context) (ChartSet, error) {
	set := ChartSet{Inputs: make([][]PlotFile, p.inputs)}
	if err := ctx.Err(); err != nil {
		return set, err
	}
	for k, j := range p.all {
		if !p.ok[k] {
			continue
		}
		if j.input < 0 {
			set.Cross = append(set.Cross, j.file)
		} else {
			set.Inputs[j.input] = append(set.Inputs[j.input], j.file)
		}
	}
	sort.Slice(p.errs, func(a, b int) bool { return p.errs[a].Error() < p.errs[b].Error() })
	return set, errors.Join(p.errs...)
}

// maxChartedInputs bounds the per-input charts of a large run (hundreds of ranks would mean thousands of PNGs);
// the cross-input chart covers every input.
const maxChartedInputs = 16

// chartedInputs picks the inputs that get their own charts: all of them up to maxChartedInputs, else the
// outliers first and then the inputs reserving the most memory.
func chartedInputs(run *report.Run) map[int]bool {
	out := map[int]bool{}
	if len(run.Inputs) <= maxChartedInputs {
		for i := range run.Inputs {
			out[i] = true
		}
		return out
	}
	outlier := map[string]bool{}
	if run.Cross != nil {
		for _, f := range run.Cross.OutlierFiles {
			outlier[f] = true
		}
	}
	order := make([]int, 0, len(run.Inputs))
	for i, r := range run.Inputs {
		if r != nil {
			order = append(order, i)
		}
	}
	sort.SliceStable(order, func(a, b int) bool {
		ra, rb := run.Inputs[order[a]], run.Inputs[order[b]]
		if outlier[ra.File] != outlier[rb.File] {
			return outlier[ra.File]
		}
		return chartWeight(ra) > chartWeight(rb)
	})
	for _, i := range order[:min(len(order), maxChartedInputs)] {
		out[i] = true
	}
	return out
}

// chartWeight is the memory an input is ranked by in chartedInputs: a snapshot's reserved bytes, a tracer
// file's recorded peak; profiler timelines and logs rank last.
func chartWeight(r *report.Report) int64 {
	switch p := r.Part.(type) {
	case *report.SnapshotReport:
		return max(p.ReservedBytes, 0)
	case *report.TracerReport:
		return max(p.PeakBytes, 0)
	}
	return 0
}

// inputSubdirs names a subdirectory per input when there are several, unique within the run.
func inputSubdirs(run *report.Run) []string {
	out := make([]string, len(run.Inputs))
	if len(run.Inputs) < 2 {
		return out
	}
	used := map[string]int{}
	for i, r := range run.Inputs {
		if r == nil {
			continue
		}
		name := InputName(r.File)
		used[name]++
		if n := used[name]; n > 1 {
			name += "_" + strconv.Itoa(n)
		}
		out[i] = name
	}
	return out
}

// maxTitleFile bounds the file name in a chart title; a longer one keeps its start and end, so the title still
// says what the chart shows (the title is shortened from the left when it does not fit).
const maxTitleFile = 56

// chartTitle names the file and its devices, as every chart title should.
func chartTitle(what string, r *report.Report) string {
	t := what + ": " + titleFile(r.File)
	switch len(r.Devices) {
	case 0:
	case 1:
		t += ", device " + strconv.Itoa(r.Devices[0])
	default:
		t += ", devices " + intList(r.Devices)
	}
	return t
}

// titleFile is the base name of path, shortened in the middle to maxTitleFile characters.
func titleFile(path string) string {
	base := []rune(filepath.Base(path))
	if len(base) <= maxTitleFile {
		return string(base)
	}
	half := (maxTitleFile - 1) / 2
	return string(base[:half]) + "…" + string(base[len(base)-half:])
}

// reportCharts maps one report to the charts of its kind; charts with nothing to show are left out.
func reportCharts(r *report.Report) []chartJob {
	switch p := r.Part.(type) {
	case *report.SnapshotReport:
		return snapshotCharts(r, p)
	case *report.TracerReport:
		return tracerCharts(r, p)
	case *report.TimelineReport:
		return timelineCharts(r, p.MemoryTimeline)
	case *report.LogReport:
		return logCharts(r, p.Log)
	}
	return nil
}

func newChartJob(name, title string, draw func(string) error) chartJob {
	return chartJob{file: PlotFile{Path: name, Title: title}, draw: draw}
}

// overviewChart sets totals, a pie of what the input measured, beside its categories, titled byCat. The
// overview and the category chart list the categories in the same order.
func overviewChart(r *report.Report, totals plots.PiePanel, byCat string) chartJob {
	title := chartTitle("Memory overview", r)
	cats := sortedCategories(r.Categories)
	return newChartJob(ChartOverview, title, func(p string) error {
		pie := plots.PiePanel{Title: byCat}
		for _, c := range cats {
			pie.Slices = append(pie.Slices, plots.Slice{Label: c.Name, Value: float64(c.Bytes), Color: plots.CategoryColor(c.Name)})
		}
		return plots.Pies(p, title, totals, pie)
	})
}

// topCharts draws the largest allocations as chart name (none without any); dump is " at the dump" when the
// live set at a trace's peak has charts of its own.
func topCharts(r *report.Report, name, dump string) []chartJob {
	if len(r.Top) == 0 {
		return nil
	}
	// One bar per group of identical allocations (×N), so a snapshot with 47 equal blocks shows them once.
	groups := groupAllocations(r.Top, len(r.Top))
	groups = groups[:min(len(groups), topConsumersInChart)]
	covered := 0
	for _, g := range groups {
		covered += g.Count
	}
	title := chartTitle(fmt.Sprintf("Top %d allocations%s", covered, dump), r)
	return []chartJob{newChartJob(name, title, func(p string) error {
		// A bar marked ×N stands for N identical allocations; its length is one allocation's size.
		c := plots.BarChart{Title: title, XLabel: "size of each allocation"}
		seen := map[string]bool{}
		for _, g := range groups {
			label := shortSite(g.Site)
			if label == "" {
				label = fmt.Sprintf("(no stack) 0x%x", g.Address)
			}
			note := g.Category
			if g.Count > 1 {
				note = countLabel(g.Count) + "  " + note
			} else if len(r.Devices) > 1 {
				note += ", device " + strconv.Itoa(g.Device)
			}
			c.Labels = append(c.Labels, label)
			c.Values = append(c.Values, float64(g.Size))
			c.Colors = append(c.Colors, plots.CategoryColor(g.Category))
			c.Notes = append(c.Notes, note)
			if !seen[g.Category] {
				seen[g.Category] = true
				c.Legend = append(c.Legend, plots.LegendEntry{Label: g.Category, Color: plots.CategoryColor(g.Category)})
			}
		}
		c.LabelWidth = 380
		return plots.Bars(p, c)
	})}
}

// categoryCharts draws the input's categories as chart name (none without any): xLabel says what their bytes
// are, unit what their counts count.
func categoryCharts(r *report.Report, name, dump, xLabel, unit string) []chartJob {
	if len(r.Categories) == 0 {
		return nil
	}
	cats := sortedCategories(r.Categories)
	title := chartTitle("Memory by category"+dump, r)
	return []chartJob{newChartJob(name, title, func(p string) error {
		c := plots.BarChart{Title: title, XLabel: xLabel}
		sum := categorySum(r.Categories)
		for _, x := range cats {
			c.Labels = append(c.Labels, x.Name)
			c.Values = append(c.Values, float64(x.Bytes))
			c.Colors = append(c.Colors, plots.CategoryColor(x.Name))
			note := units.Percent(x.Bytes, sum)
			if x.Count > 0 {
				note += ", " + units.Plural(x.Count, unit, unit+"s")
			}
			c.Notes = append(c.Notes, note)
		}
		c.LabelWidth = 200
		return plots.Bars(p, c)
	})}
}

// sortedCategories orders categories by bytes, largest first, then by name for a stable order.
func sortedCategories(in []report.CategoryStat) []report.CategoryStat {
	out := append([]report.CategoryStat(nil), in...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Bytes != out[j].Bytes {
			return out[i].Bytes > out[j].Bytes
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// bucketBounds is the sorted union of the buckets' lower bounds, so both histograms share one size axis.
func bucketBounds(sets ...[]report.SizeBucket) []int64 {
	seen := map[int64]bool{}
	var los []int64
	for _, bs := range sets {
		for _, b := range bs {
			if !seen[b.Lo] {
				seen[b.Lo] = true
				los = append(los, b.Lo)
			}
		}
	}
	sort.Slice(los, func(i, j int) bool { return los[i] < los[j] })
	return los
}

// histogram lays bs out on the shared bounds los; bounds bs lacks get zero.
func histogram(title string, los []int64, bs []report.SizeBucket, c color.Color) plots.Histogram {
	h := plots.Histogram{Title: title, Color: c}
	at := map[int64]report.SizeBucket{}
	for _, b := range bs {
		x := at[b.Lo]
		x.Count += b.Count
		x.Bytes += b.Bytes
		at[b.Lo] = x
	}
	for _, lo := range los {
		b := at[lo]
		h.Labels = append(h.Labels, units.Bytes(lo)+"+")
		h.Counts = append(h.Counts, float64(b.Count))
		h.Bytes = append(h.Bytes, float64(b.Bytes))
	}
	return h
}

// shortSite keeps the last three path components of a file:line:function site; the full site is in the text
// report and summary.json.
func shortSite(site string) string {
	slash := strings.ReplaceAll(site, "\\", "/")
	parts := strings.Split(slash, "/")
	if len(parts) <= 3 {
		return slash
	}
	return "…/" + strings.Join(parts[len(parts)-3:], "/")
}

// peakFirst returns a copy of xs with the peak's device's entries first, so its chart gets the main chart name.
func peakFirst[T any](xs []T, device func(*T) int, peak *report.Peak) []T {
	out := append([]T(nil), xs...)
	if peak != nil {
		sort.SliceStable(out, func(i, j int) bool { return device(&out[i]) == peak.Device && device(&out[j]) != peak.Device })
	}
	return out
}

// timelineChartName names the k-th timeline chart (the peak's device's first): the main name, then one per device.
func timelineChartName(k, device int) string {
	if k == 0 {
		return ChartTimeline
	}
	return fmt.Sprintf("memory_timeline_device%d.png", device)
}

// timeChart maps a replayed trace to the chart: seconds since the first event when the trace has times (else
// event indexes), the largest categories stacked, allocated and reserved as lines, and the peak.
func timeChart(title string, s report.TimelineSeries, peak *report.Peak, whatIf string) plots.TimeChart {
	n := len(s.Index)
	c := plots.TimeChart{Title: title, X: make([]float64, n), PeakIndex: -1}
	if len(s.TimeUS) == n && n > 0 {
		c.XLabel = "time since first event (s)"
		for i, t := range s.TimeUS {
			c.X[i] = float64(t-s.TimeUS[0]) / 1e6
		}
	} else {
		c.XLabel = "trace event"
		for i, x := range s.Index {
			c.X[i] = float64(x)
		}
	}

	if len(s.Categories) > 0 && len(s.ByCategory) == len(s.Categories) {
		type cat struct {
			name string
			vals []int64
			max  int64
		}
		var cats []cat
		for k, name := range s.Categories {
			if len(s.ByCategory[k]) != n {
				continue
			}
			cc := cat{name: name, vals: s.ByCategory[k]}
			for _, v := range cc.vals {
				cc.max = max(cc.max, v)
			}
			if cc.max > 0 {
				cats = append(cats, cc)
			}
		}
		sort.SliceStable(cats, func(i, j int) bool { return cats[i].max > cats[j].max })
		var other []float64
		for k, cc := range cats {
			if k >= maxTimelineStacks-1 && len(cats) > maxTimelineStacks {
				if other == nil {
					other = make([]float64, n)
				}
				for i, v := range cc.vals {
					other[i] += float64(v)
				}
				continue
			}
			c.Stacked = append(c.Stacked, plots.Series{Name: cc.name, Values: toFloats(cc.vals), Color: plots.CategoryColor(cc.name)})
		}
		if other != nil {
			c.Stacked = append(c.Stacked, plots.Series{Name: fmt.Sprintf("other (%d categories)", len(cats)-(maxTimelineStacks-1)), Values: other, Color: plots.ColorOther})
		}
	}
	if len(s.Allocated) == n {
		c.Lines = append(c.Lines, plots.Series{Name: "allocated", Values: toFloats(s.Allocated), Color: color.Black})
	}
	if len(s.Reserved) == n {
		c.Lines = append(c.Lines, plots.Series{Name: "reserved", Values: toFloats(s.Reserved), Color: plots.ColorReserved})
	}
	if len(s.WhatIfReserved) == n && n > 0 {
		// The allocator replay under --alloc-conf, in the colour of the other model-adjusted lines.
		// The legend column is narrow: the settings go in the title.
		c.Lines = append(c.Lines, plots.Series{Name: "reserved, what-if", Values: toFloats(s.WhatIfReserved), Color: plots.ColorCorrected})
		c.Title += " (what-if: " + whatIf + ")"
	}

	// Mark the report's peak when it is on this device (the point at or just before its event), else the
	// highest allocated point of the downsampled series.
	if peak != nil && peak.Device == s.Device {
		at := sort.SearchInts(s.Index, peak.EventIndex+1) - 1
		if at >= 0 {
			c.PeakIndex, c.PeakValue = at, float64(peak.Bytes)
		}
	}
	if c.PeakIndex < 0 && len(s.Allocated) == n {
		for i, v := range s.Allocated {
			if c.PeakIndex < 0 || float64(v) > c.PeakValue {
				c.PeakIndex, c.PeakValue = i, float64(v)
			}
		}
	}
	if c.PeakIndex >= 0 {
		c.PeakLabel = "peak " + units.Bytes(int64(c.PeakValue))
	}
	return c
}

// peakCharts draws the live set at the trace's peak: its largest sites (top consumers) and its categories.
func peakCharts(r *report.Report) []chartJob {
	p := r.Peak
	var jobs []chartJob
	where := ""
	if w := peakWhere(p); w != "" {
		where = " (" + w + ")"
	}
	if len(p.Sites) > 0 {
		sites := p.Sites[:min(len(p.Sites), topConsumersInChart)]
		title := chartTitle(fmt.Sprintf("Top %d sites at the peak%s", len(sites), where), r)
		jobs = append(jobs, chartJob{file: PlotFile{Path: ChartTopConsumers, Title: title}, draw: func(path string) error {
			c := plots.BarChart{Title: title, XLabel: "live at the peak", LabelWidth: 380}
			seen := map[string]bool{}
			for _, st := range sites {
				label := shortSite(st.Site)
				if label == "" {
					label = categorize.NoStackSite
				}
				c.Labels = append(c.Labels, label)
				c.Values = append(c.Values, float64(st.Bytes))
				c.Colors = append(c.Colors, plots.CategoryColor(st.Category))
				c.Notes = append(c.Notes, st.Category+", "+units.Plural(st.Count, "block", "blocks"))
				if !seen[st.Category] {
					seen[st.Category] = true
					c.Legend = append(c.Legend, plots.LegendEntry{Label: st.Category, Color: plots.CategoryColor(st.Category)})
				}
			}
			return plots.Bars(path, c)
		}})
	}
	cats := sortedCategories(p.Categories)
	title := chartTitle("Memory by category at the peak"+where, r)
	jobs = append(jobs, chartJob{file: PlotFile{Path: ChartCategories, Title: title}, draw: func(path string) error {
		c := plots.BarChart{Title: title, XLabel: "live at the peak", LabelWidth: 200}
		for _, x := range cats {
			c.Labels = append(c.Labels, x.Name)
			c.Values = append(c.Values, float64(x.Bytes))
			c.Colors = append(c.Colors, plots.CategoryColor(x.Name))
			c.Notes = append(c.Notes, units.Percent(x.Bytes, p.Bytes)+", "+units.Plural(x.Count, "block", "blocks"))
		}
		return plots.Bars(path, c)
	}})
	return jobs
}

// maxPhaseMarks bounds the boundary lines on one timeline: beyond it only iteration starts are drawn, and beyond
// that none, so a long run stays readable.
const maxPhaseMarks = 150

// phaseMarks places each iteration's forward, backward and optimizer starts of s's device on the chart's x axis
// (seconds since the series' first point when it has times, else the trace event).
func phaseMarks(tls []phases.Timeline, s report.TimelineSeries) []plots.Mark {
	var its []phases.Iteration
	for _, tl := range tls {
		if tl.Device == s.Device {
			its = tl.Iterations
		}
	}
	x := func(sp phases.Span) (float64, bool) {
		if sp.Empty() {
			return 0, false
		}
		if len(s.TimeUS) > 0 {
			return float64(sp.StartUS-s.TimeUS[0]) / 1e6, sp.StartUS != 0
		}
		return float64(sp.Start), true
	}
	all := 3*len(its) <= maxPhaseMarks
	if !all && len(its) > maxPhaseMarks {
		return nil
	}
	var out []plots.Mark
	for _, it := range its {
		for _, b := range []struct {
			sp    phases.Span
			kind  string
			color color.Color
		}{{it.Forward, "forward starts", plots.ColorForward}, {it.Backward, "backward starts", plots.ColorBackward}, {it.Optimizer, "optimizer starts", plots.ColorOptimizer}} {
			if v, ok := x(b.sp); ok && (all || b.kind == "forward starts") {
				out = append(out, plots.Mark{X: v, Kind: b.kind, Color: b.color})
			}
		}
	}
	return out
}

func toFloats[T int | int64](xs []T) []float64 {
	out := make([]float64, len(xs))
	for i, x := range xs {
		out[i] = float64(x)
	}
	return out
}

// ranksChart compares the inputs of a run with the measures they have: reserved and allocated for snapshots,
// the peak (a snapshot's trace peak, a tracer file's or profiler timeline's recorded peak, a log's highest
// allocated), and the listed tensors of tracer files; an input without a measure has no bar for it. The dashed
// reference is the median reserved when two snapshots are compared, else the median tracer peak. ok is false
// when no measure has two inputs to compare.
func ranksChart(c *report.Cross) (chartJob, bool) {
	res := plots.Series{Name: "reserved", Color: plots.ColorReserved}
	alloc := plots.Series{Name: "allocated", Color: plots.ColorAllocated}
	peak := plots.Series{Name: "peak", Color: plots.ColorPeak}
	listed := plots.Series{Name: "listed tensors", Color: plots.ColorRequested}
	var groups []string
	snapshots, peaks, lists := 0, 0, 0
	for _, r := range c.Rows {
		groups = append(groups, crossLabel(r))
		res.Values = append(res.Values, float64(r.ReservedBytes))
		alloc.Values = append(alloc.Values, float64(r.AllocatedBytes))
		peak.Values = append(peak.Values, float64(max(r.PeakBytes, 0)))
		listed.Values = append(listed.Values, float64(max(r.ListedBytes, 0)))
		if r.HasAllocatorTotals() {
			snapshots++
		}
		if r.PeakBytes > 0 {
			peaks++
		}
		if r.ListedBytes > 0 {
			lists++
		}
	}
	// Inputs of different kinds can share a rank: their kind tells them apart.
	seen := map[string]int{}
	for _, g := range groups {
		seen[g]++
	}
	for i, r := range c.Rows {
		if seen[groups[i]] > 1 && r.Kind != "" {
			groups[i] += " " + r.Kind
		}
	}
	var series []plots.Series
	var names []string
	if snapshots > 1 {
		series, names = append(series, res, alloc), append(names, "reserved", "allocated")
	}
	if peaks > 1 {
		series, names = append(series, peak), append(names, "peak")
	}
	if lists > 1 {
		series, names = append(series, listed), append(names, "listed tensor")
	}
	if len(series) == 0 {
		return chartJob{}, false
	}
	gc := plots.GroupedBarChart{Groups: groups, Series: series}
	gc.Reference, gc.ReferenceLabel = ranksReference(c, snapshots)
	gc.Title = fmt.Sprintf("Across %d inputs: %s memory", len(c.Rows), joinAnd(names))
	return chartJob{input: -1, file: PlotFile{Path: ChartRanks, Title: gc.Title}, draw: func(p string) error {
		return plots.GroupedBars(p, gc)
	}}, true
}

// ranksReference is the dashed line of the ranks chart: the median reserved when snapshots are compared (of the
// iteration the imbalance statistics describe, named when there are several), else the median tracer peak.
// snapshots counts the rows with allocator totals.
func ranksReference(c *report.Cross, snapshots int) (float64, string) {
	switch {
	case snapshots > 1 && c.NotRankSet == "":
		if c.Iterations > 1 && c.ImbalanceIteration >= 0 {
			return float64(c.MedianReservedBytes), fmt.Sprintf("median reserved, iteration %d", c.ImbalanceIteration)
		}
		return float64(c.MedianReservedBytes), "median reserved"
	case c.Tracer != nil && len(c.Tracer.Ranks) > 1:
		return float64(c.Tracer.MedianPeakBytes), "median tracer peak"
	}
	return 0, ""
}

// joinAnd joins words as "a", "a and b", "a, b and c".
func joinAnd(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// crossLabel is the short name of a row: "rank 3", "it 2 r 3", or the input name.
func crossLabel(r report.CrossRow) string {
	switch {
	case r.Rank >= 0 && r.Iteration >= 0:
		return fmt.Sprintf("it%d r%d", r.Iteration, r.Rank)
	case r.Rank >= 0:
		return "rank " + strconv.Itoa(r.Rank)
	case r.Iteration >= 0:
		return "iter " + strconv.Itoa(r.Iteration)
	}
	name := InputName(r.File)
	if len([]rune(name)) > 24 {
		name = string([]rune(name)[:23]) + "…" // the start of a file name tells inputs apart best
	}
	return name
}
