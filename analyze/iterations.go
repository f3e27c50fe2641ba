package analyze

import (
	"github.com/memscan/memscan/allocator"
	"github.com/memscan/memscan/internal/detect"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/phases"
	"github.com/memscan/memscan/report"
)

// iterationTable is, for each iteration of device d, its peak and the memory when each of its phases ended. blocks
// (nil: not replayed) is the block bytes allocated after every event: with it the peak and the phase ends are in
// torch.cuda's unit, and the peak is where the block bytes were highest; the requested bytes come from the trace
// replay either way. The iteration's window includes the moment before its first event, as a peak-statistics
// reset at its start would.
func iterationTable(d *detect.Device, blocks *allocator.BlockSeries) []report.IterationRow {
	tl := d.Timeline()
	if blocks.Len() != len(d.Trace) {
		blocks = nil
	}
	out := make([]report.IterationRow, 0, len(tl.Iterations))
	// The rows' phases share one array (at most three per iteration), not an allocation or three per row; a row
	// without phases keeps nil.
	ends := make([]report.PhaseEnd, 0, 3*len(tl.Iterations))
	at := func(series []int64, initial int64, j int) int64 {
		if j < 0 {
			return initial
		}
		return series[j]
	}
	measure := func(j int) int64 {
		if blocks != nil {
			if j < 0 {
				return 0
			}
			return blocks.At(j)
		}
		return at(d.Allocated, d.InitialAllocated, j)
	}
	var named []namedSpan
	for k := range tl.Iterations {
		it := &tl.Iterations[k]
		sp := it.Span
		if sp.Empty() {
			continue
		}
		row := report.IterationRow{Device: d.Device, Iteration: it.Index, Complete: it.Complete, PeakEvent: sp.Start}
		best := measure(sp.Start)
		row.PeakReservedBytes = d.Reserved.Max(sp.Start-1, min(sp.End, len(d.Trace)))
		if sp.Start > 0 {
			if v := measure(sp.Start - 1); v > best {
				best, row.PeakEvent = v, sp.Start-1
			}
		}
		// The iteration's own events: the first of its highest, where it beats the event before it.
		if hi := min(sp.End, len(d.Trace)); sp.Start < hi {
			var j int
			var v int64
			if blocks != nil {
				j, v = blocks.MaxIn(sp.Start, hi)
			} else {
				j = sp.Start + units.FirstMax(d.Allocated[sp.Start:hi])
				v = d.Allocated[j]
			}
			if v > best {
				best, row.PeakEvent = v, j
			}
		}
		row.PeakRequestedBytes = at(d.Allocated, d.InitialAllocated, row.PeakEvent)
		if blocks != nil {
			row.PeakAllocatedBytes = best
		}
		_, ph := tl.At(row.PeakEvent)
		row.PeakPhase = ph.String()
		first := len(ends)
		named = iterationPhases(named[:0], it)
		for _, p := range named {
			if p.span.Empty() {
				continue
			}
			end := min(p.span.End, len(d.Trace)) - 1
			pe := report.PhaseEnd{Phase: p.name, Span: p.span, RequestedBytes: d.Allocated[end], ReservedBytes: d.Reserved.At(end)}
			if blocks != nil {
				pe.AllocatedBytes = blocks.At(end)
			}
			ends = append(ends, pe)
		}
		if len(ends) > first {
			row.Phases = ends[first:len(ends):len(ends)]
		}
		out = append(out, row)
	}
	return out
}

// namedSpan is a phase of an iteration and its name.
type namedSpan struct {
	name string
	span phases.Span
}

// iterationPhases appends the phases of it to buf in order: prefill and decode for a generate call, else forward,
// backward and optimizer (a table of tens of thousands of iterations reuses one buf).
func iterationPhases(buf []namedSpan, it *phases.Iteration) []namedSpan {
	if it.Prefill != nil {
		return append(buf, namedSpan{phases.Prefill.String(), *it.Prefill}, namedSpan{phases.Decode.String(), *it.Decode})
	}
	return append(buf, namedSpan{phases.Forward.String(), it.Forward}, namedSpan{phases.Backward.String(), it.Backward},
		namedSpan{phases.Optimizer.String(), it.Optimizer})
}
