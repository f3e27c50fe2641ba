package results

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/plots"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/report"
)

// This file renders the report of an allocator snapshot: allocator totals and groups, the live set at the trace's
// peak, what was live at the dump, fragmentation, the allocator replay, size histograms, per-device peaks, OOMs
// and growing sites. text_peak.go and allocreplay.go hold the peak's and the replay's sections.

// snapshot writes the text report's sections of an allocator snapshot. With a trace, the peak comes first: what
// the user must fit is what was live then. The tables of the blocks allocated when the snapshot was dumped
// follow, labelled as such.
func (t *textWriter) snapshot(r *report.Report, snap *report.SnapshotReport) {
	t.printf("  segments:   %d   blocks: %d\n", snap.Segments, snap.Blocks)
	t.traceActions(snap)
	if r.Peak != nil {
		t.section("Totals at the dump (when the snapshot was taken; the peak follows)")
	} else {
		t.section("Totals")
	}
	t.totals(snap.Totals, r.Peak)

	t.groups("Per device", "device", snap.PerDevice)
	t.groups("Per stream", "stream", snap.PerStream)
	t.groups("Per pool", "pool", snap.PerPool)
	t.groups("Per segment type", "type", snap.PerSegmentType)

	dump, categories := "", "Categories (active allocated memory by what allocated it)"
	if r.Peak != nil {
		t.peak(r.Peak)
		t.iterations(snap.Iterations)
		t.iterationMemory(snap.IterationTable)
		dump, categories = " at the dump", "Categories at the dump (active allocated memory when the snapshot was taken)"
	}
	t.categories(categories, r.Categories)
	t.topAllocations(r.Top, dump)
	t.sites(r.Sites, dump)

	t.fragmentation(snap.Fragmentation, dump)
	t.allocatorReplay(snap)

	t.histogram("Size distribution of active allocations", snap.ActiveSizes)
	t.histogram("Size distribution of cached free blocks", snap.FreeSizes)

	t.devicePeaks(snap)
	t.ooms(snap.OOMs)
	t.leakSuspects(snap)
}

func (t *textWriter) ooms(ooms []report.OOM) {
	if len(ooms) == 0 {
		return
	}
	t.section(fmt.Sprintf("Out-of-memory events (%d)", len(ooms)))
	tb := newTable([]align{alignRight, alignRight, alignLeft, alignRight, alignRight, alignRight, alignRight, alignLeft},
		"device", "event", "time", "requested", "device free", "allocated", "reserved", "site")
	for _, o := range ooms {
		when := "-"
		if o.TimeUS != 0 {
			when = FormatTimeUS(o.TimeUS)
		}
		tb.add(strconv.Itoa(o.Device), strconv.Itoa(o.EventIndex), when, units.PyTorchBytes(o.RequestedBytes), units.PyTorchBytes(o.DeviceFreeBytes),
			units.Bytes(o.AllocatedBytes), units.Bytes(o.ReservedBytes), truncate(orDash(o.Site), maxSiteWidth))
	}
	tb.write(t.w, 2)
	for _, o := range ooms {
		t.oomExplained(o)
	}
}

func (t *textWriter) fragmentation(f report.Fragmentation, dump string) {
	t.section("Fragmentation" + dump)
	kv := newTable([]align{alignLeft, alignRight, alignRight}, "measure", "size", "bytes")
	kv.add("internal waste (rounding inside allocated blocks)", units.Bytes(f.InternalWasteBytes), GroupDigits(f.InternalWasteBytes))
	kv.add("cached free (inactive blocks held by the allocator)", units.Bytes(f.CachedFreeBytes), GroupDigits(f.CachedFreeBytes))
	kv.add(fmt.Sprintf("segments at least %.0f %% free: %d", f.MostlyFreeThreshold*100, f.MostlyFreeSegments), units.Bytes(f.MostlyFreeSegmentsBytes), GroupDigits(f.MostlyFreeSegmentsBytes))
	kv.add(fmt.Sprintf("free blocks of %s or more: %d", units.Bytes(findings.LargeFreeBlockBytes), f.LargeFreeBlocks), units.Bytes(f.LargeFreeBlocksBytes), GroupDigits(f.LargeFreeBlocksBytes))
	kv.write(t.w, 2)
	t.printf("  fragmentation: %.2f %% of free memory lies outside the largest free block\n", f.FragmentationPct)
}

// totals writes the allocator totals at the dump. With a trace the efficiency there is labelled as the dump's,
// beside the peak's: a cache that kept what the peak needed is not inefficient at the dump.
func (t *textWriter) totals(x report.Totals, p *report.Peak) {
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
	if p == nil || p.ReservedBytes <= 0 {
		t.printf("  efficiency: %.2f %% (requested / reserved)\n", x.EfficiencyPct)
		return
	}
	t.printf("  efficiency at the peak: %.2f %% (requested / reserved at %s); at the dump: %.2f %%, the rest cached free memory\n",
		p.EfficiencyPct, findings.EventName(p.EventIndex), x.EfficiencyPct)
}

func (t *textWriter) groups(title, keyName string, gs []report.GroupTotals) {
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

func (t *textWriter) histogram(title string, bs []report.SizeBucket) {
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

func (t *textWriter) devicePeaks(snap *report.SnapshotReport) {
	if len(snap.DevicePeaks) < 2 {
		return
	}
	t.section("Peak per device")
	tb := newTable([]align{alignRight, alignRight, alignRight, alignRight, alignLeft}, "device", "peak", "bytes", "event", "time")
	for _, p := range snap.DevicePeaks {
		when := "-"
		if p.TimeUS != 0 {
			when = FormatTimeUS(p.TimeUS)
		}
		tb.add(strconv.Itoa(p.Device), units.Bytes(p.Bytes), GroupDigits(p.Bytes), strconv.Itoa(p.EventIndex), when)
	}
	tb.write(t.w, 2)
}

func (t *textWriter) leakSuspects(snap *report.SnapshotReport) {
	if len(snap.LeakSuspects) == 0 {
		return
	}
	t.section(fmt.Sprintf("Growing memory (%d sites that held more at the end of every iteration after the first)", len(snap.LeakSuspects)))
	tb := newTable([]align{alignRight, alignRight, alignRight, alignRight, alignLeft, alignLeft}, "device", "after it. 1", "at the end", "per iteration", "iterations", "site")
	for _, l := range snap.LeakSuspects {
		tb.add(strconv.Itoa(l.Device), units.Bytes(l.FirstBytes), units.Bytes(l.LastBytes), units.Bytes(l.PerIterationBytes),
			fmt.Sprintf("%d (%s)", l.Markers, l.MarkerKind), truncate(orDash(l.Site), maxSiteWidth))
	}
	tb.write(t.w, 2)
}

func (t *textWriter) traceActions(snap *report.SnapshotReport) {
	if len(snap.TraceActions) == 0 {
		return
	}
	names := make([]string, 0, len(snap.TraceActions))
	for k := range snap.TraceActions {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s %d", k, snap.TraceActions[k])
	}
	t.printf("  trace events: %s\n", strings.Join(parts, ", "))
}

// snapshot writes the Markdown findings and tables of an allocator snapshot. With a trace the live set at the
// peak comes first; the dump's tables follow, labelled.
func (m *mdWriter) snapshot(r *report.Report, snap *report.SnapshotReport) {
	m.answer(r)
	m.findings(r, append(snapshotFindings(r, snap), replayFindings(snap)...))
	if r.Peak != nil {
		m.printf("\n**Totals at the dump**\n")
	}
	m.totals(snap.Totals)
	m.inputRecommendations(rankFindings(r.Recommendations))
	dump := ""
	if p := r.Peak; p != nil && len(p.Categories) > 0 {
		m.peak(p)
		dump = " at the dump"
	}
	m.categories("Memory by category"+dump, r.Categories)
	m.topAllocations(r.Top, dump)
	m.allocatorReplay(snap)
	if len(snap.OOMs) > 0 {
		m.printf("\n**Out-of-memory events**\n\n| device | event | requested | device free | site |\n|---:|---:|---:|---:|---|\n")
		for _, o := range snap.OOMs {
			m.printf("| %d | %d | %s | %s | `%s` |\n", o.Device, o.EventIndex, units.PyTorchBytes(o.RequestedBytes), units.PyTorchBytes(o.DeviceFreeBytes), mdCell(mdCode(orDash(o.Site))))
		}
	}
}

func (m *mdWriter) totals(x report.Totals) {
	m.printf("\n| measure | size | bytes |\n|---|---:|---:|\n")
	for _, row := range []struct {
		name string
		v    int64
	}{
		{"reserved", x.ReservedBytes},
		{"allocated", x.AllocatedBytes},
		{"requested", x.RequestedBytes},
		{"internal free", x.InternalFreeBytes},
		{"external free", x.ExternalFreeBytes},
		{"largest free block", x.LargestFreeBlockBytes},
	} {
		m.printf("| %s | %s | %s |\n", row.name, units.Bytes(row.v), strconv.FormatInt(row.v, 10))
	}
}

// peak is the table of the live set at the trace's peak, by category and by site.
func (m *mdWriter) peak(p *report.Peak) {
	where := ""
	if w := peakWhere(p); w != "" {
		where = ", " + w
	}
	m.printf("\n**Live at the peak** (%s on device %d, %s%s)\n\n| category | size | share |\n|---|---:|---:|\n",
		units.Bytes(p.Bytes), p.Device, findings.EventName(p.EventIndex), where)
	for _, c := range p.Categories {
		m.printf("| %s | %s | %s |\n", mdCell(c.Name), units.Bytes(c.Bytes), units.Percent(c.Bytes, p.Bytes))
	}
	if len(p.Sites) > 0 {
		n := limit(len(p.Sites), m.opts.Top)
		m.printf("\n**Top %d sites at the peak**\n\n| size | count | category | site |\n|---:|---:|---|---|\n", n)
		for _, st := range p.Sites[:n] {
			m.printf("| %s | %d | %s | `%s` |\n", units.Bytes(st.Bytes), st.Count, mdCell(st.Category), mdCell(mdCode(orDash(st.Site))))
		}
	}
}

// snapshotFindings are the headline numbers of an allocator snapshot.
func snapshotFindings(r *report.Report, snap *report.SnapshotReport) []string {
	var out, atDump []string
	when, dump := "", "" // the dump's numbers are labelled as such when a trace shows the peak
	if r.Peak != nil {
		when, dump = "At the dump, ", " at the dump"
	}
	atDump = append(atDump, fmt.Sprintf("%sPyTorch reserved **%s** and tensors asked for **%s**: %.1f %% of reserved requested.",
		when, units.Bytes(snap.ReservedBytes), units.Bytes(snap.RequestedBytes), snap.EfficiencyPct))
	if free := snap.ExternalFreeBytes + snap.InternalFreeBytes; free > 0 && snap.ReservedBytes > 0 {
		s := fmt.Sprintf("%s (%s of reserved) is cached but not in use%s: %s in free blocks, %s rounding inside allocations; the largest free block is %s",
			units.Bytes(free), units.Percent(free, snap.ReservedBytes), dump, units.Bytes(snap.ExternalFreeBytes), units.Bytes(snap.InternalFreeBytes), units.Bytes(snap.LargestFreeBlockBytes))
		if needed := cacheNeededAtPeak(r, snap); needed > 0 {
			s += fmt.Sprintf("; %s of it was in use at the peak", units.Bytes(needed))
		}
		atDump = append(atDump, s+".")
	}
	if p := r.Peak; p != nil {
		s := fmt.Sprintf("The trace peaks at **%s** allocated on device %d (%s", units.Bytes(p.Bytes), p.Device, findings.EventName(p.EventIndex))
		if p.TimeUS != 0 {
			s += ", " + FormatTimeUS(p.TimeUS)
		}
		if w := peakWhere(p); w != "" {
			s += ", " + w
		}
		s += ")"
		if len(p.Categories) > 0 {
			c := p.Categories[0]
			s += fmt.Sprintf("; the largest category there is **%s** with %s (%s)", mdText(c.Name), units.Bytes(c.Bytes), units.Percent(c.Bytes, p.Bytes))
		}
		out = append(out, s+".")
		// Efficiency is judged at the peak when a trace shows it: at the dump a cache that kept what the peak
		// needed holds mostly free memory, which is the allocator doing its job.
		if p.ReservedBytes > 0 {
			out = append(out, fmt.Sprintf("At the peak PyTorch reserved **%s** and tensors asked for **%s**: %.1f %% efficiency.",
				units.Bytes(p.ReservedBytes), units.Bytes(p.Bytes), p.EfficiencyPct))
		}
	}
	out = append(out, atDump...)
	if len(r.Categories) > 0 {
		sum := categorySum(r.Categories)
		c := r.Categories[0]
		for _, x := range r.Categories[1:] {
			if x.Bytes > c.Bytes {
				c = x
			}
		}
		out = append(out, fmt.Sprintf("The largest category%s is **%s** with %s (%s of categorized memory, %d allocations).",
			dump, mdText(c.Name), units.Bytes(c.Bytes), units.Percent(c.Bytes, sum), c.Count))
	}
	if len(r.Top) > 0 {
		a := r.Top[0]
		out = append(out, fmt.Sprintf("The largest single allocation%s is %s (%s) from `%s`.", dump, units.Bytes(a.Size), mdText(a.Category), mdCode(orDash(a.Site))))
	}
	if n := len(snap.OOMs); n > 0 {
		o := snap.OOMs[0]
		out = append(out, fmt.Sprintf("**%d out-of-memory event(s)**; the first asked for %s with %s free on device %d.",
			n, units.PyTorchBytes(o.RequestedBytes), units.PyTorchBytes(o.DeviceFreeBytes), o.Device))
	}
	if n := len(snap.LeakSuspects); n > 0 {
		l := snap.LeakSuspects[0]
		out = append(out, fmt.Sprintf("%d site(s) grew in every iteration after the first (%s); the first, `%s`, went from %s to %s, %s per iteration.",
			n, mdText(l.MarkerKind), mdCode(l.Site), units.Bytes(l.FirstBytes), units.Bytes(l.LastBytes), units.Bytes(l.PerIterationBytes)))
	}
	return out
}

// snapshot fills the page's sections of an allocator snapshot: totals, the live set at the trace's peak, the
// iterations, the allocator replays and the OOMs; with a peak, the sites and allocations listed are the dump's.
func (in *htmlInput) snapshot(r *report.Report, snap *report.SnapshotReport) {
	in.Snapshot, in.Peak, in.Replays = snap, r.Peak, htmlReplays(snap)
	in.Totals = []htmlField{
		{"reserved_bytes", "reserved", snap.ReservedBytes},
		{"allocated_bytes", "allocated (block bytes)", snap.AllocatedBytes},
		{"requested_bytes", "requested (what tensors asked for)", snap.RequestedBytes},
		{"active_bytes", "active", snap.ActiveBytes},
		{"inactive_bytes", "inactive (cached free)", snap.InactiveBytes},
		{"internal_free_bytes", "internal free (rounding)", snap.InternalFreeBytes},
		{"external_free_bytes", "external free", snap.ExternalFreeBytes},
		{"largest_free_block_bytes", "largest free block", snap.LargestFreeBlockBytes},
	}
	in.Categories = "live at snapshot time"
	if r.Peak != nil {
		in.Categories, in.Dump = "at the dump: live when the snapshot was taken", " at the dump"
	}
}

// snapshotCharts maps an allocator snapshot to its charts: the overview of reserved memory and categories, the
// live set at the trace's peak, the largest allocations and categories, block sizes, efficiency and memory over
// time per device.
func snapshotCharts(r *report.Report, snap *report.SnapshotReport) []chartJob {
	var jobs []chartJob
	if snap.ReservedBytes > 0 || len(r.Categories) > 0 {
		reserved := plots.PiePanel{
			Title: "Reserved " + units.Bytes(snap.ReservedBytes),
			Slices: []plots.Slice{
				{Label: "allocated", Value: float64(snap.AllocatedBytes), Color: plots.ColorAllocated},
				{Label: "cached / free", Value: float64(snap.ReservedBytes - snap.AllocatedBytes), Color: plots.ColorFree},
			},
		}
		byCat := "Allocated by category"
		if r.Peak != nil {
			byCat += " at the dump"
		}
		jobs = append(jobs, overviewChart(r, reserved, byCat))
	}

	// With a trace, the top consumers and the category chart show the peak; the dump's views keep their own
	// files, labelled "at the dump".
	topName, catName, dump := ChartTopConsumers, ChartCategories, ""
	if r.Peak != nil && len(r.Peak.Categories) > 0 {
		topName, catName, dump = ChartTopConsumersDump, ChartCategoriesDump, " at the dump"
		jobs = append(jobs, peakCharts(r)...)
	}
	jobs = append(jobs, topCharts(r, topName, dump)...)
	jobs = append(jobs, categoryCharts(r, catName, dump, "allocated", "block")...)

	if len(snap.ActiveSizes) > 0 || len(snap.FreeSizes) > 0 {
		title := chartTitle("Block sizes", r)
		jobs = append(jobs, newChartJob(ChartSizes, title, func(p string) error {
			los := bucketBounds(snap.ActiveSizes, snap.FreeSizes)
			return plots.Histograms(p, title,
				histogram("active allocations (blocks per size)", los, snap.ActiveSizes, plots.ColorAllocated),
				histogram("cached free blocks (blocks per size)", los, snap.FreeSizes, plots.ColorFree))
		}))
	}

	if snap.ReservedBytes > 0 {
		title := chartTitle("Memory efficiency", r)
		jobs = append(jobs, newChartJob(ChartEfficiency, title, func(p string) error {
			return plots.Efficiency(p, title, plots.EfficiencyData{
				Reserved:      float64(snap.ReservedBytes),
				Allocated:     float64(snap.AllocatedBytes),
				Requested:     float64(snap.RequestedBytes),
				Wasted:        float64(snap.ReservedBytes - snap.RequestedBytes),
				EfficiencyPct: snap.EfficiencyPct,
				PeakAllocated: peakAllocated(r), PeakReserved: peakReserved(r),
			})
		}))
	}

	if len(snap.Details) > 0 {
		return append(jobs, envelopeCharts(r, snap)...)
	}
	for k, s := range peakFirst(snap.Timeline, func(s *report.TimelineSeries) int { return s.Device }, r.Peak) {
		if len(s.Index) == 0 {
			continue
		}
		name := timelineChartName(k, s.Device)
		title := fmt.Sprintf("Memory over time: %s, device %d", titleFile(r.File), s.Device)
		jobs = append(jobs, newChartJob(name, title, func(p string) error {
			c := timeChart(title, s, r.Peak, whatIfName(snap, s.Device))
			c.Marks = phaseMarks(snap.Iterations, s)
			return plots.MemoryOverTime(p, c)
		}))
	}
	return jobs
}
