package results

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/units"
)

// TextOptions tune the text report.
type TextOptions struct {
	// Top limits the allocations and sites listed per input; 0 lists all that the report holds.
	Top int
}

// maxSiteWidth keeps table rows readable; the full site is in summary.json.
const maxSiteWidth = 90

// WriteText renders run as the plain-text report (analysis_report.txt, and stdout with --format text).
func WriteText(w io.Writer, run *analyze.Run, opts TextOptions) error {
	bw := bufio.NewWriter(w)
	tw := &textWriter{w: bw, opts: opts}
	tw.run(run)
	return bw.Flush()
}

type textWriter struct {
	w    io.Writer
	opts TextOptions
}

func (t *textWriter) printf(format string, args ...any) { fmt.Fprintf(t.w, format, args...) }

func (t *textWriter) section(title string) {
	t.printf("\n%s\n%s\n", title, strings.Repeat("-", len([]rune(title))))
}

// banner prints title underlined with '=': the report's title and each of its parts (an input, the cross-input
// comparison, the failures).
func (t *textWriter) banner(title string) {
	t.printf("%s\n%s\n", title, strings.Repeat("=", len([]rune(title))))
}

func (t *textWriter) run(run *analyze.Run) {
	title := "memscan memory analysis"
	if run.Tool != "" {
		title += " (" + run.Tool + ")"
	}
	t.banner(title)
	t.printf("inputs analyzed: %d", len(run.Inputs))
	if len(run.Failures) > 0 {
		t.printf(", failed: %d", len(run.Failures))
	}
	t.printf("\n")
	for i, r := range run.Inputs {
		t.printf("\n\n")
		t.banner(fmt.Sprintf("Input %d of %d: %s", i+1, len(run.Inputs), r.File))
		t.report(r)
	}
	if run.Cross != nil {
		t.printf("\n\n")
		t.banner("Across inputs")
		t.cross(run.Cross)
	}
	if len(run.Failures) > 0 {
		t.printf("\n\n")
		t.banner("Inputs that could not be analyzed")
		for _, f := range run.Failures {
			t.printf("  %s: %s\n", f.File, f.Error)
		}
	}
}

func (t *textWriter) report(r *analyze.Report) {
	format := r.Format
	if r.TorchFormat != "" {
		format += " (torch " + r.TorchFormat + ")"
	}
	t.printf("  format:     %s\n", format)
	t.printf("  devices:    %s\n", intList(r.Devices))
	if r.Rank >= 0 {
		t.printf("  rank:       %d\n", r.Rank)
	}
	if r.Iteration >= 0 {
		t.printf("  iteration:  %d\n", r.Iteration)
	}
	// Allocator sections apply to snapshots; tracer, timeline and log inputs have their own sections below.
	allocator := r.HasAllocatorTotals()
	// A tracer file's own section lists its tensors and sites with shape, phase and module; the generic lists
	// would repeat them with less.
	tracerDev := tracerPrimary(r)
	if allocator {
		t.printf("  segments:   %d   blocks: %d\n", r.Segments, r.Blocks)
		t.traceActions(r)
		t.section("Totals")
		t.totals(r.Totals)
	}

	t.groups("Per device", "device", r.PerDevice)
	t.groups("Per stream", "stream", r.PerStream)
	t.groups("Per pool", "pool", r.PerPool)
	t.groups("Per segment type", "type", r.PerSegmentType)

	// A profiler timeline's categories and peak are its own section's "at the peak" table.
	timeline := r.Kind() == analyze.KindTimeline
	// With a trace, the peak comes first: what the user must fit is what was live then. The tables of the
	// blocks allocated when the snapshot was dumped follow, labelled as such.
	atPeak := r.Peak != nil && !timeline
	dump := ""
	if atPeak {
		t.peak(r)
		t.iterations(r)
		dump = " at the dump"
	}
	if len(r.Categories) > 0 && !timeline {
		switch {
		case r.Kind() == analyze.KindTracer:
			t.section("Categories (listed tensors alive at the peak)")
		case atPeak:
			t.section("Categories at the dump (active allocated memory when the snapshot was taken)")
		default:
			t.section("Categories (active allocated memory by what allocated it)")
		}
		sum := categorySum(r.Categories)
		tb := newTable([]align{alignLeft, alignRight, alignRight, alignRight, alignRight}, "category", "size", "bytes", "share", "count")
		for _, c := range r.Categories {
			tb.add(c.Name, units.Bytes(c.Bytes), GroupDigits(c.Bytes), units.Percent(c.Bytes, sum), countOrDash(c.Count))
		}
		tb.write(t.w, 2)
	}

	if len(r.Top) > 0 && (tracerDev == nil || len(tracerDev.Top) == 0) {
		t.topAllocations(r.Top, dump)
	}

	if len(r.Sites) > 0 && (tracerDev == nil || len(tracerDev.Sites) == 0) {
		n := limit(len(r.Sites), t.opts.Top)
		t.section(fmt.Sprintf("Top %d allocation sites%s", n, dump))
		t.siteTable(r.Sites[:n], 2)
	}

	if allocator {
		t.fragmentation(r.Fragmentation, dump)
		t.allocatorReplay(r)
	}

	t.histogram("Size distribution of active allocations", r.ActiveSizes)
	t.histogram("Size distribution of cached free blocks", r.FreeSizes)

	t.devicePeaks(r)

	if len(r.OOMs) > 0 {
		t.section(fmt.Sprintf("Out-of-memory events (%d)", len(r.OOMs)))
		tb := newTable([]align{alignRight, alignRight, alignLeft, alignRight, alignRight, alignRight, alignRight, alignLeft},
			"device", "event", "time", "requested", "device free", "allocated", "reserved", "site")
		for _, o := range r.OOMs {
			when := "-"
			if o.TimeUS != 0 {
				when = FormatTimeUS(o.TimeUS)
			}
			tb.add(strconv.Itoa(o.Device), strconv.Itoa(o.EventIndex), when, units.Bytes(o.RequestedBytes), units.Bytes(o.DeviceFreeBytes),
				units.Bytes(o.AllocatedBytes), units.Bytes(o.ReservedBytes), truncate(orDash(o.Site), maxSiteWidth))
		}
		tb.write(t.w, 2)
		for _, o := range r.OOMs {
			t.oomExplained(o)
		}
	}

	t.leakSuspects(r)
	t.tracer(r)
	t.memoryTimeline(r)
	t.trainingLog(r)
	t.recommendations("Recommendations", r.Recommendations, true)

	if len(r.Warnings) > 0 {
		t.section("Warnings")
		for _, w := range r.Warnings {
			t.printf("  - %s\n", w)
		}
	}
}

// topAllocations lists the largest allocations, identical ones (same site, size, category and state) on one row
// with their count; # is the position of the group's first allocation in the size order.
func (t *textWriter) topAllocations(top []analyze.Allocation, dump string) {
	n := limit(len(top), t.opts.Top)
	groups := groupAllocations(top, n)
	title := fmt.Sprintf("Top %d allocations%s", n, dump)
	if len(groups) < n {
		title += fmt.Sprintf(" (%d distinct; identical ones counted ×N)", len(groups))
	}
	t.section(title)
	if len(groups) == n { // nothing repeats: no count column
		tb := newTable([]align{alignRight, alignRight, alignRight, alignLeft, alignLeft, alignLeft}, "#", "size", "requested", "category", "state", "site")
		for _, g := range groups {
			tb.add(strconv.Itoa(g.Rank), units.Bytes(g.Size), GroupDigits(g.RequestedSize), g.Category, g.State, truncate(orDash(g.Site), maxSiteWidth))
		}
		tb.write(t.w, 2)
		return
	}
	tb := newTable([]align{alignRight, alignRight, alignRight, alignRight, alignLeft, alignLeft, alignLeft}, "#", "size", "requested", "count", "category", "state", "site")
	for _, g := range groups {
		tb.add(strconv.Itoa(g.Rank), units.Bytes(g.Size), GroupDigits(g.RequestedSize), countLabel(g.Count), g.Category, g.State, truncate(orDash(g.Site), maxSiteWidth))
	}
	tb.write(t.w, 2)
}

// siteTable lists allocation sites, of the whole snapshot or of the live set at the peak, indented by indent.
func (t *textWriter) siteTable(sites []analyze.SiteStat, indent int) {
	tb := newTable([]align{alignRight, alignRight, alignLeft, alignLeft}, "size", "count", "category", "site")
	for _, s := range sites {
		tb.add(units.Bytes(s.Bytes), strconv.Itoa(s.Count), s.Category, truncate(orDash(s.Site), maxSiteWidth))
	}
	tb.write(t.w, indent)
}

func (t *textWriter) fragmentation(f analyze.Fragmentation, dump string) {
	t.section("Fragmentation" + dump)
	kv := newTable([]align{alignLeft, alignRight, alignRight}, "measure", "size", "bytes")
	kv.add("internal waste (rounding inside allocated blocks)", units.Bytes(f.InternalWasteBytes), GroupDigits(f.InternalWasteBytes))
	kv.add("cached free (inactive blocks held by the allocator)", units.Bytes(f.CachedFreeBytes), GroupDigits(f.CachedFreeBytes))
	kv.add(fmt.Sprintf("segments at least %.0f %% free: %d", f.MostlyFreeThreshold*100, f.MostlyFreeSegments), units.Bytes(f.MostlyFreeSegmentsBytes), GroupDigits(f.MostlyFreeSegmentsBytes))
	kv.add(fmt.Sprintf("free blocks of %s or more: %d", units.Bytes(analyze.LargeFreeBlockBytes), f.LargeFreeBlocks), units.Bytes(f.LargeFreeBlocksBytes), GroupDigits(f.LargeFreeBlocksBytes))
	kv.write(t.w, 2)
	t.printf("  fragmentation: %.2f %% of free memory lies outside the largest free block\n", f.FragmentationPct)
}

func (t *textWriter) totals(x analyze.Totals) {
	tb := newTable([]align{alignLeft, alignRight, alignRight, alignRight}, "measure", "size", "bytes", "of reserved")
	row := func(name string, v int64) {
		tb.add(name, units.Bytes(v), GroupDigits(v), units.Percent(v, x.ReservedBytes))
	}
	row("reserved (segments)", x.ReservedBytes)
	row("allocated (active_allocated blocks)", x.AllocatedBytes)
	row("requested (what tensors asked for)", x.RequestedBytes)
	row("active (allocated + pending free)", x.ActiveBytes)
	row("inactive (cached free)", x.InactiveBytes)
	row("internal free (rounding)", x.InternalFreeBytes)
	row("external free (not allocated)", x.ExternalFreeBytes)
	row("largest free block", x.LargestFreeBlockBytes)
	tb.write(t.w, 2)
	if x.ReservedBytes == 0 {
		// Nothing reserved: an empty snapshot is not 0 % efficient, it has no efficiency.
		t.printf("  efficiency: - (nothing reserved)\n")
		return
	}
	t.printf("  efficiency: %.2f %% (requested / reserved)\n", x.EfficiencyPct)
}

func (t *textWriter) groups(title, keyName string, gs []analyze.GroupTotals) {
	if len(gs) == 0 {
		return
	}
	t.section(title)
	tb := newTable([]align{alignLeft, alignRight, alignRight, alignRight, alignRight, alignRight, alignRight, alignRight},
		keyName, "reserved", "allocated", "requested", "internal free", "external free", "efficiency", "segments")
	for _, g := range gs {
		tb.add(g.Key, units.Bytes(g.ReservedBytes), units.Bytes(g.AllocatedBytes), units.Bytes(g.RequestedBytes),
			units.Bytes(g.InternalFreeBytes), units.Bytes(g.ExternalFreeBytes), fmt.Sprintf("%.2f %%", g.EfficiencyPct), strconv.Itoa(g.Segments))
	}
	tb.write(t.w, 2)
}

func (t *textWriter) histogram(title string, bs []analyze.SizeBucket) {
	if len(bs) == 0 {
		return
	}
	t.section(title)
	var maxCount int
	for _, b := range bs {
		maxCount = max(maxCount, b.Count)
	}
	tb := newTable([]align{alignLeft, alignRight, alignRight, alignLeft}, "size range", "count", "total", "")
	for _, b := range bs {
		bar := ""
		if maxCount > 0 {
			bar = strings.Repeat("#", (b.Count*30+maxCount-1)/maxCount)
		}
		tb.add(BucketLabel(b), strconv.Itoa(b.Count), units.Bytes(b.Bytes), bar)
	}
	tb.write(t.w, 2)
}

func (t *textWriter) cross(c *analyze.Cross) {
	t.section("Per input")
	v := newCrossView(c)
	tb := newTable(v.Aligns, v.Header...)
	for _, r := range v.Rows {
		tb.add(append([]string{truncate(r.File, 60)}, r.Cells...)...)
	}
	tb.write(t.w, 2)
	if v.Snapshots > 1 {
		t.imbalance(c)
	}
	t.tracerCross(c.Tracer)
	t.recommendations("Recommendations across inputs", c.Recommendations, false)
}

// imbalance compares the allocator totals of the snapshots in a run.
func (t *textWriter) imbalance(c *analyze.Cross) {
	t.section("Imbalance" + ImbalanceScope(c))
	kv := newTable([]align{alignLeft, alignRight, alignRight}, "measure", "size", "bytes")
	kv.add("max reserved", units.Bytes(c.MaxReservedBytes), GroupDigits(c.MaxReservedBytes))
	kv.add("median reserved", units.Bytes(c.MedianReservedBytes), GroupDigits(c.MedianReservedBytes))
	kv.add("max allocated", units.Bytes(c.MaxAllocatedBytes), GroupDigits(c.MaxAllocatedBytes))
	kv.add("median allocated", units.Bytes(c.MedianAllocatedBytes), GroupDigits(c.MedianAllocatedBytes))
	kv.write(t.w, 2)
	t.printf("  imbalance: %.2f %% (max reserved / median reserved - 1)\n", c.ImbalancePct)
	if len(c.OutlierFiles) > 0 {
		t.printf("  outliers:\n")
		for _, f := range c.OutlierFiles {
			t.printf("    - %s\n", f)
		}
	}
}

// BucketLabel renders a histogram bucket as "1.0 MiB - 2.0 MiB".
func BucketLabel(b analyze.SizeBucket) string {
	if b.Hi <= 0 {
		return units.Bytes(b.Lo) + " and up"
	}
	return units.Bytes(b.Lo) + " - " + units.Bytes(b.Hi)
}

func limit(n, top int) int {
	if top > 0 && top < n {
		return top
	}
	return n
}

func intList(xs []int) string {
	if len(xs) == 0 {
		return "-"
	}
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

func intOrDash(x int) string {
	if x < 0 {
		return "-"
	}
	return strconv.Itoa(x)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// formatFloat prints a measured value or threshold as an integer when it is one ("104857600") and otherwise with
// at most two decimals ("12.5").
func formatFloat(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// ImbalanceScope says which iteration the imbalance statistics describe when the snapshots span several (ranks
// are compared within one step), and "" otherwise.
func ImbalanceScope(c *analyze.Cross) string {
	if c == nil || c.Iterations < 2 {
		return ""
	}
	it := "unnumbered inputs"
	if c.ImbalanceIteration >= 0 {
		it = fmt.Sprintf("iteration %d", c.ImbalanceIteration)
	}
	return fmt.Sprintf(" (%s, the most unbalanced of %d iterations)", it, c.Iterations)
}
