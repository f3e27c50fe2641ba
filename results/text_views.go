package results

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/units"
)

// This file renders the parts of a report that only some inputs have: trace-derived extras of allocator
// snapshots (per-device peaks, leak suspects, action counts) and the views of tracer JSON, torch.profiler memory
// timelines and training logs.

func (t *textWriter) devicePeaks(r *analyze.Report) {
	if len(r.DevicePeaks) < 2 {
		return
	}
	t.section("Peak per device")
	tb := newTable([]align{alignRight, alignRight, alignRight, alignRight, alignLeft}, "device", "peak", "bytes", "event", "time")
	for _, p := range r.DevicePeaks {
		when := "-"
		if p.TimeUS != 0 {
			when = FormatTimeUS(p.TimeUS)
		}
		tb.add(strconv.Itoa(p.Device), units.Bytes(p.Bytes), GroupDigits(p.Bytes), strconv.Itoa(p.EventIndex), when)
	}
	tb.write(t.w, 2)
}

func (t *textWriter) leakSuspects(r *analyze.Report) {
	if len(r.LeakSuspects) == 0 {
		return
	}
	t.section(fmt.Sprintf("Growing memory (%d sites that held more at the end of every iteration after the first)", len(r.LeakSuspects)))
	tb := newTable([]align{alignRight, alignRight, alignRight, alignRight, alignLeft, alignLeft}, "device", "after it. 1", "at the end", "per iteration", "iterations", "site")
	for _, l := range r.LeakSuspects {
		tb.add(strconv.Itoa(l.Device), units.Bytes(l.FirstBytes), units.Bytes(l.LastBytes), units.Bytes(l.PerIterationBytes),
			fmt.Sprintf("%d (%s)", l.Markers, l.MarkerKind), truncate(orDash(l.Site), maxSiteWidth))
	}
	tb.write(t.w, 2)
}

func (t *textWriter) traceActions(r *analyze.Report) {
	if len(r.TraceActions) == 0 {
		return
	}
	names := make([]string, 0, len(r.TraceActions))
	for k := range r.TraceActions {
		names = append(names, k)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s %d", k, r.TraceActions[k])
	}
	t.printf("  trace events: %s\n", strings.Join(parts, ", "))
}

func (t *textWriter) tracer(r *analyze.Report) {
	v := r.Tracer
	if v == nil {
		return
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
	p := v.Primary()
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

func (t *textWriter) memoryTimeline(r *analyze.Report) {
	v := r.MemoryTimeline
	if v == nil {
		return
	}
	t.section("torch.profiler memory timeline")
	t.printf("  %s form, %d points", v.Form, v.Points)
	if v.Events > 0 {
		t.printf(" from %d events", v.Events)
	}
	if v.EndUS > v.StartUS {
		t.printf(", %.3f s", float64(v.EndUS-v.StartUS)/1e6)
	}
	t.printf("\n  peak %s (%s bytes) at point %d", units.Bytes(v.PeakBytes), GroupDigits(v.PeakBytes), v.PeakIndex)
	if v.PeakTimeUS != 0 {
		t.printf(", %.3f s after the start", float64(v.PeakTimeUS-v.StartUS)/1e6)
	}
	t.printf("; %s at the end\n", units.Bytes(v.FinalBytes))
	if len(v.PeakComposition) > 0 {
		t.printf("\n  at the peak:\n")
		// The profiler's own category names, with memscan's name for each (what compare and merge line up).
		tb := newTable([]align{alignLeft, alignLeft, alignRight, alignRight, alignRight}, "category", "memscan category", "size", "bytes", "share")
		for _, c := range v.PeakComposition {
			tb.add(c.Name, analyze.TimelineCategory(c.Name), units.Bytes(c.Bytes), GroupDigits(c.Bytes), units.Percent(c.Bytes, v.PeakBytes))
		}
		tb.write(t.w, 4)
	}
	if len(v.CategoryMax) > 0 {
		t.printf("\n  each category's own maximum:\n")
		tb := newTable([]align{alignLeft, alignRight, alignRight}, "category", "size", "bytes")
		for _, c := range v.CategoryMax {
			tb.add(c.Name, units.Bytes(c.Bytes), GroupDigits(c.Bytes))
		}
		tb.write(t.w, 4)
	}
}

// bytesOrDash renders a log measure, which is -1 when the log dialect does not print it.
func bytesOrDash(n int64) string {
	if n < 0 {
		return "-"
	}
	return units.Bytes(n)
}

// peakPlace renders " (rank R, iteration I)" for a log peak, leaving out what the log does not say.
func peakPlace(rank, iteration int) string {
	if rank < 0 {
		return ""
	}
	if iteration < 0 {
		return fmt.Sprintf(" (rank %d)", rank)
	}
	return fmt.Sprintf(" (rank %d, iteration %d)", rank, iteration)
}

func (t *textWriter) trainingLog(r *analyze.Report) {
	v := r.Log
	if v == nil {
		return
	}
	t.section("Training log memory lines")
	t.printf("  %s log: %d lines, %d memory records", v.Dialect, v.Lines, v.Records)
	if v.SkippedLines > 0 {
		t.printf(", %d over-long lines skipped", v.SkippedLines)
	}
	// Allocated and reserved can peak on different ranks and iterations, so each peak carries its own place.
	allocRank, allocIter := v.PeakAllocatedRank, v.PeakAllocatedIteration
	if v.PeakReservedBytes < 0 {
		allocRank, allocIter = v.PeakRank, v.PeakIteration // without reserved, PeakRank follows allocated
	}
	t.printf("\n  peak allocated %s", bytesOrDash(v.PeakAllocatedBytes))
	if v.PeakAllocatedBytes >= 0 {
		t.printf("%s", peakPlace(allocRank, allocIter))
	}
	t.printf(", peak reserved %s", bytesOrDash(v.PeakReservedBytes))
	if v.PeakReservedBytes >= 0 {
		t.printf("%s", peakPlace(v.PeakRank, v.PeakIteration))
	}
	t.printf("\n")
	if v.CapacityBytes > 0 {
		t.printf("  device: %s, %s\n", orDash(v.DeviceName), units.Bytes(v.CapacityBytes))
	}
	if th := v.Theoretical; th != nil {
		t.printf("  theoretical (line %d): weight and optimizer %s, activation %s, total %s", th.Line,
			bytesOrDash(th.WeightAndOptimizerByte), bytesOrDash(th.ActivationBytes), bytesOrDash(th.TotalBytes))
		if v.TheoryGapPct != nil {
			t.printf("; measured is %+.1f %% off", *v.TheoryGapPct)
		}
		t.printf("\n")
	}
	if len(v.Ranks) > 0 {
		t.printf("\n")
		tb := newTable([]align{alignRight, alignRight, alignLeft, alignRight, alignRight, alignRight, alignRight},
			"rank", "records", "iterations", "max allocated", "max reserved", "last allocated", "last reserved")
		for _, rr := range v.Ranks {
			tb.add(intOrDash(rr.Rank), strconv.Itoa(rr.Records), fmt.Sprintf("%d-%d", rr.FirstIteration, rr.LastIteration),
				bytesOrDash(rr.MaxAllocated), bytesOrDash(rr.MaxReserved), bytesOrDash(rr.LastAllocated), bytesOrDash(rr.LastReserved))
		}
		tb.write(t.w, 2)
		if len(v.Ranks) > 1 {
			t.printf("  reserved imbalance across ranks: %.2f %% (max / median - 1)\n", v.ReservedImbalancePct)
		}
	}
}

func (t *textWriter) tracerCross(c *analyze.TracerCross) {
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
		mods := append([]analyze.TracerModuleAcross(nil), c.Modules...)
		sort.SliceStable(mods, func(i, j int) bool { return mods[i].SpreadBytes > mods[j].SpreadBytes })
		n := limit(len(mods), min(t.opts.Top, analyze.DefaultTracerModuleRows))
		if t.opts.Top == 0 {
			n = min(len(mods), analyze.DefaultTracerModuleRows)
		}
		t.printf("\n  modules that differ most across ranks (top %d):\n", n)
		mt := newTable([]align{alignLeft, alignRight, alignRight, alignRight}, "module", "min", "max", "spread")
		for _, m := range mods[:n] {
			mt.add(truncate(m.Pattern, 70), units.Bytes(m.MinBytes), units.Bytes(m.MaxBytes), units.Bytes(m.SpreadBytes))
		}
		mt.write(t.w, 4)
	}
}

func (t *textWriter) recommendations(title string, recs []analyze.Recommendation, always bool) {
	if len(recs) == 0 && !always {
		return
	}
	t.section(title)
	if len(recs) == 0 {
		t.printf("  none: no threshold was crossed\n")
	}
	for i, rec := range recs {
		if i > 0 {
			t.printf("\n")
		}
		t.printf("  %d. [%s] %s (%s)\n", i+1, rec.Severity, rec.Title, rec.ID)
		t.printf("     evidence: %s (measured %s, threshold %s)\n", rec.Evidence, analyze.FormatMeasure(rec.Value, rec.Unit), analyze.FormatMeasure(rec.Threshold, rec.Unit))
		if rec.Advice != "" {
			t.printf("     advice:   %s\n", rec.Advice)
		}
	}
}
