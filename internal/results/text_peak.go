package results

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	memfind "github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/phases"
	"github.com/memscan/memscan/report"
)

// peak writes the live set at the trace's peak: when it fell (iteration and phase), by category, by component (the static
// estimator's terms) and by site.
func (t *textWriter) peak(p *report.Peak) {
	t.section("Peak (from the allocator trace)")
	// Two units: the bytes the tensors requested, and the allocator's blocks (torch.cuda.max_memory_allocated's).
	shown, unit := p.Bytes, "requested by the tensors"
	if p.AllocatedBytes > 0 {
		shown, unit = p.AllocatedBytes, "in allocator blocks, as torch.cuda.max_memory_allocated counts"
	}
	t.printf("  peak allocated: %s (%s bytes %s) on device %d at %s", units.Bytes(shown), GroupDigits(shown), unit, p.Device, memfind.EventName(p.EventIndex))
	if p.TimeUS != 0 {
		t.printf(", %s", FormatTimeUS(p.TimeUS))
	}
	t.printf("\n")
	if p.AllocatedBytes > 0 {
		t.printf("  requested:      %s (%s bytes the tensors asked for; the live set below counts these)\n", units.Bytes(p.Bytes), GroupDigits(p.Bytes))
	}
	if p.ReservedBytes > 0 {
		t.printf("  reserved then:  %s (%s bytes); efficiency at the peak %.2f %% (requested / reserved)\n", units.Bytes(p.ReservedBytes),
			GroupDigits(p.ReservedBytes), p.EfficiencyPct)
	}
	if w := peakWhere(p); w != "" {
		t.printf("  when:           %s\n", w)
	}
	if p.LifetimeDecidedBytes > 0 {
		t.printf("  categorized by lifetime (no stack, or only autograd/optimizer machinery): %s\n", units.Bytes(p.LifetimeDecidedBytes))
	}
	if len(p.Categories) > 0 {
		t.printf("\n  live set at the peak by category:\n")
		tb := newTable([]align{alignLeft, alignRight, alignRight, alignRight, alignRight}, "category", "size", "bytes", "share", "count")
		for _, c := range p.Categories {
			tb.add(c.Name, units.Bytes(c.Bytes), GroupDigits(c.Bytes), units.Percent(c.Bytes, p.Bytes), strconv.Itoa(c.Count))
		}
		tb.write(t.w, 4)
	}
	if len(p.Components) > 0 {
		t.printf("\n  live set at the peak by component (as memscan static counts them):\n")
		tb := newTable([]align{alignLeft, alignRight, alignRight, alignRight}, "component", "size", "bytes", "share")
		for _, c := range p.Components {
			tb.add(c.Name, units.Bytes(c.Bytes), GroupDigits(c.Bytes), units.Percent(c.Bytes, p.Bytes))
		}
		tb.write(t.w, 4)
	}
	if len(p.Sites) > 0 {
		n := limit(len(p.Sites), t.opts.Top)
		t.printf("\n  live set at the peak by site (top %d):\n", n)
		t.siteTable(p.Sites[:n], 4)
	}
}

// peakWhere names the iteration and phase of the peak, "" when the trace showed none.
func peakWhere(p *report.Peak) string {
	switch {
	case p.Iteration > 0:
		return fmt.Sprintf("iteration %d, %s", p.Iteration, p.Phase)
	case p.Phase != "" && p.Phase != "-":
		return p.Phase
	}
	return ""
}

// iterations writes each device's iterations with their phase boundaries (event index, seconds from the trace's
// first event).
func (t *textWriter) iterations(tls []phases.Timeline) {
	var any bool
	for _, tl := range tls {
		any = any || len(tl.Iterations) > 0
	}
	if !any {
		return
	}
	t.section("Iterations and phases")
	for _, tl := range tls {
		if len(tl.Iterations) == 0 {
			continue
		}
		t.printf("  device %d: %d iteration(s), found from %s; setup %s\n", tl.Device, len(tl.Iterations), tl.Source, spanText(tl.Setup, tl.Setup.StartUS))
		t0 := tl.Setup.StartUS
		if tl.Setup.Empty() {
			t0 = tl.Iterations[0].Span.StartUS
		}
		// A generate call's phases are prefill and decode; a trace of them names its columns so.
		cols := [3]string{"forward", "backward", "optimizer"}
		inference := slices.ContainsFunc(tl.Iterations, func(it phases.Iteration) bool { return it.Prefill != nil })
		if inference {
			cols = [3]string{"prefill", "decode", "forward"}
		}
		tb := newTable([]align{alignRight, alignLeft, alignLeft, alignLeft, alignLeft}, "iter", "span", cols[0], cols[1], cols[2])
		for k, it := range tl.Iterations {
			// A long run lists its first and last iterations; summary.json holds them all.
			if n := len(tl.Iterations); n > maxIterationRows && k >= maxIterationRows/2 && k < n-maxIterationRows/2 {
				if k == maxIterationRows/2 {
					tb.add("...", fmt.Sprintf("%d more in summary.json", n-maxIterationRows), "", "", "")
				}
				continue
			}
			name := strconv.Itoa(it.Index)
			if !it.Complete {
				name += "*"
			}
			switch {
			case it.Prefill != nil:
				tb.add(name, spanText(it.Span, t0), spanText(*it.Prefill, t0), spanText(*it.Decode, t0), "-")
			case inference:
				tb.add(name, spanText(it.Span, t0), "-", "-", spanText(it.Forward, t0))
			default:
				tb.add(name, spanText(it.Span, t0), spanText(it.Forward, t0), spanText(it.Backward, t0), spanText(it.Optimizer, t0))
			}
		}
		tb.write(t.w, 4)
	}
	t.printf("  (events [start, end) and seconds from the first event; * the trace ended or failed inside it)\n")
}

// iterationMemory writes each iteration's peak and the memory allocated when each of its phases ended, in block
// bytes (torch.cuda.memory_allocated's unit) where the allocator replay measured them, else requested bytes.
func (t *textWriter) iterationMemory(rows []report.IterationRow) {
	if len(rows) == 0 {
		return
	}
	t.section("Memory per iteration")
	unit := "allocator blocks, as torch.cuda.memory_allocated and max_memory_allocated count them"
	if rows[0].PeakAllocatedBytes == 0 {
		unit = "bytes requested by the tensors"
	}
	tb := newTable([]align{alignRight, alignRight, alignRight, alignRight, alignLeft, alignLeft}, "device", "iter", "peak allocated", "peak reserved", "peak at", "allocated at the end of")
	for k, r := range rows {
		if n := len(rows); n > maxIterationRows && k >= maxIterationRows/2 && k < n-maxIterationRows/2 {
			if k == maxIterationRows/2 {
				tb.add("", "...", fmt.Sprintf("%d more in summary.json", n-maxIterationRows), "", "", "")
			}
			continue
		}
		peak := r.PeakAllocatedBytes
		if peak == 0 {
			peak = r.PeakRequestedBytes
		}
		var ends []string
		for _, p := range r.Phases {
			v := p.AllocatedBytes
			if v == 0 {
				v = p.RequestedBytes
			}
			ends = append(ends, p.Phase+" "+units.Bytes(v))
		}
		name := strconv.Itoa(r.Iteration)
		if !r.Complete {
			name += "*"
		}
		tb.add(strconv.Itoa(r.Device), name, units.Bytes(peak), units.Bytes(r.PeakReservedBytes), memfind.EventName(r.PeakEvent)+", "+r.PeakPhase, strings.Join(ends, ", "))
	}
	tb.write(t.w, 2)
	t.printf("  (%s; peak reserved is the highest reserved memory in the iteration)\n", unit)
}

// maxIterationRows bounds the iterations listed per device in the text report.
const maxIterationRows = 20

// spanText renders a span as "120-450 (0.52-1.31 s)", "-" when the phase was not seen.
func spanText(s phases.Span, t0 int64) string {
	if s.Empty() {
		return "-"
	}
	out := fmt.Sprintf("%d-%d", s.Start, s.End)
	if s.StartUS != 0 && t0 != 0 {
		out += fmt.Sprintf(" (%.2f-%.2f s)", float64(s.StartUS-t0)/1e6, float64(s.EndUS-t0)/1e6)
	}
	return out
}

// oomExplained writes what was live at a failing request by phase and category, and the extrapolated step.
func (t *textWriter) oomExplained(o report.OOM) {
	x := o.Explained
	if x == nil {
		return
	}
	t.printf("\n  OOM at event %d explained: %s requested with %s live", o.EventIndex, units.PyTorchBytes(x.RequestedBytes), units.Bytes(x.Live.Bytes))
	if x.Live.Iteration > 0 {
		t.printf(" in iteration %d %s", x.Live.Iteration, x.Live.Phase)
	}
	t.printf("\n")
	for _, g := range []struct {
		what   string
		shares []memfind.Share
	}{{"phase it was allocated in", x.Live.ByPhase}, {"category", x.Live.ByCategory}} {
		t.printf("    live by %s:", g.what)
		for i, s := range g.shares {
			if i == 6 {
				break
			}
			t.printf(" %s %s;", s.Name, units.Bytes(s.Bytes))
		}
		t.printf("\n")
	}
	if p := x.Projection(); p != "" {
		t.printf("    %s\n", p)
	}
	if len(o.Remedies) > 0 {
		t.printf("    changes to the --static configuration, each alone and the smallest combinations that fit, against %s:\n", units.Bytes(x.CapacityBytes))
		tb := newTable([]align{alignLeft, alignRight, alignRight, alignLeft}, "change", "peak allocated", "peak reserved", "fits")
		for _, rm := range o.Remedies {
			fits := "no"
			if rm.Fits {
				fits = "yes"
			}
			tb.add(rm.Change, units.Bytes(rm.PeakAllocatedBytes), units.Bytes(rm.PeakReservedBytes), fits)
		}
		tb.write(t.w, 6)
	}
}
