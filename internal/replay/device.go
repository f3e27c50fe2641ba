package replay

import (
	"context"

	"github.com/memscan/memscan/internal/phasedetect"
	"github.com/memscan/memscan/phases"
	"github.com/memscan/memscan/snapshot"
)

// Lifetime is one allocation of a replayed device trace, live after the events Start..End−1: Start −1 means live
// before the first event, End == len(trace) still live at the end; Size is the requested bytes. Event is the trace
// event that introduced it (its alloc, or a free whose alloc predates the trace), −1 for a live block of the final
// state that the trace never allocated.
type Lifetime struct {
	Addr   uint64
	Size   int64
	Stream uint64
	Stack  *snapshot.Stack
	Event  int
	// Start and End bound the events after which the allocation is live.
	Start, End int
}

// Lifetime returns element i of the replay as a Lifetime.
func (t *Trace) Lifetime(i int) Lifetime {
	el := &t.Elements[i]
	l := Lifetime{Size: el.Size, Event: int(el.Origin), Start: int(el.Start), End: int(el.End)}
	if el.Origin >= 0 {
		e := &t.Events[el.Origin]
		l.Addr, l.Stream, l.Stack = e.Addr, t.snap.EntryStream(e), t.snap.EntryStack(e)
	} else {
		b, seg := t.Block(el.Origin)
		l.Addr, l.Stream, l.Stack, l.Event = b.Address, seg.Stream, b.Stack, -1
	}
	return l
}

// Addr returns the address of element i: its trace event's, or its final-state block's.
func (t *Trace) Addr(i int) uint64 { return t.addrs[i] }

// Event returns the trace event that introduced element i (its alloc, or a free whose alloc predates the trace),
// −1 for a live block of the final state that the trace never allocated.
func (t *Trace) Event(i int) int { return max(int(t.Elements[i].Origin), -1) }

// Series is a replayed trace at full resolution: the live requested bytes (Allocated) after every event and
// before the first, and the segment bytes (Reserved, as its changes; Reserved.At(-1) before the first event). It
// holds no pointers, 8 bytes per event and 12 per segment event.
type Series struct {
	InitialAllocated int64
	Allocated        []int64
	Reserved         Steps
}

// Series returns the replay's allocated and reserved series (the Trace's own slices, not copies).
func (t *Trace) Series() Series {
	return Series{InitialAllocated: t.Initial, Allocated: t.Allocated, Reserved: t.Reserved}
}

// DeviceTrace is one device trace replayed, as the detectors and the exports read it: every allocation (the
// replay's Elements, pointer-free; Lifetime, Addr, Stack and Event of the Trace describe one) and the allocated
// and reserved series.
type DeviceTrace struct {
	Device int
	Trace  []snapshot.TraceEntry
	// Elements are in the order the replay met them: trace order, then the final-state blocks live all along.
	Elements []Element
	// Stacks are the elements' distinct stacks, indexed by Element.Stack.
	Stacks []*snapshot.Stack
	Series
	// PeakIndex is the first event after which Allocated is highest, −1 only when the state before the first event
	// is higher than ever after (as the report's peak); PeakBytes that value.
	PeakIndex int
	PeakBytes int64

	replay   *Trace
	timeline *phases.Timeline
}

// DeviceTrace returns the replay as a DeviceTrace.
func (t *Trace) DeviceTrace() *DeviceTrace {
	d := &DeviceTrace{Device: t.Device, Trace: t.Events, Elements: t.Elements, Stacks: t.Stacks, Series: t.Series(), replay: t,
		timeline: t.timeline}
	d.PeakIndex, d.PeakBytes = t.PeakIndex()
	return d
}

// Peak returns PeakIndex and PeakBytes, found once by the replay; a DeviceTrace built without one finds them in its
// series.
func (d *DeviceTrace) Peak() (int, int64) {
	if d.replay != nil {
		return d.PeakIndex, d.PeakBytes
	}
	return peakOf(d.InitialAllocated, d.Allocated)
}

// OOMEvents returns the indices of the trace's oom events, in order: the replay's, else found in the trace.
func (d *DeviceTrace) OOMEvents() []int {
	if d.replay != nil {
		return d.replay.OOMs
	}
	var out []int
	for j := range d.Trace {
		if d.Trace[j].Action == snapshot.ActionOOM {
			out = append(out, j)
		}
	}
	return out
}

// Lifetime returns element i as a Lifetime.
func (d *DeviceTrace) Lifetime(i int) Lifetime { return d.replay.Lifetime(i) }

// EventStack returns the stack of trace event j, nil when it has none.
func (d *DeviceTrace) EventStack(j int) *snapshot.Stack { return d.replay.snap.EntryStack(&d.Trace[j]) }

// EventExtra returns the rarely-set fields of trace event j (shared: do not change them).
func (d *DeviceTrace) EventExtra(j int) *snapshot.TraceExtra {
	return d.replay.snap.EntryExtra(&d.Trace[j])
}

// Addr returns the address of element i.
func (d *DeviceTrace) Addr(i int) uint64 { return d.replay.Addr(i) }

// Addrs returns every element's address, indexed as Elements (the replay's own slice: do not change it).
func (d *DeviceTrace) Addrs() []uint64 { return d.replay.addrs }

// Stack returns the stack of element i.
func (d *DeviceTrace) Stack(i int) *snapshot.Stack { return d.replay.Stack(i) }

// TraceCategory returns the category element i's origin event carries, "" when none (Trace.TraceCategory).
func (d *DeviceTrace) TraceCategory(i int) string { return d.replay.TraceCategory(i) }

// Event returns the trace event that introduced element i, −1 for a final-state block the trace never allocated.
func (d *DeviceTrace) Event(i int) int { return d.replay.Event(i) }

// Lifetimes lists every element as a Lifetime, in element order. It allocates the list: the analysis reads the
// elements instead, the exports this.
func (d *DeviceTrace) Lifetimes() []Lifetime {
	out := make([]Lifetime, len(d.Elements))
	for i := range out {
		out[i] = d.Lifetime(i)
	}
	return out
}

// ReplayDevice replays the trace of device dev against the final state in s. A device without trace events has
// no elements and empty series.
func ReplayDevice(ctx context.Context, s *snapshot.Snapshot, dev int) (*DeviceTrace, error) {
	if dev < 0 || dev >= len(s.DeviceTraces) || len(s.DeviceTraces[dev]) == 0 {
		return &DeviceTrace{Device: dev, PeakIndex: -1, Series: Series{Allocated: []int64{}}, Elements: []Element{},
			replay: &Trace{Device: dev, snap: s}}, nil
	}
	t, err := Run(ctx, s, dev, nil)
	if err != nil {
		return nil, err
	}
	return t.DeviceTrace(), nil
}

// Timeline returns the trace's iterations and phases, which the lifetime attribution reads. They are found on
// first use, since not every caller needs them (about a tenth of a replay's cost); not safe for concurrent use.
func (d *DeviceTrace) Timeline() *phases.Timeline {
	if d.timeline == nil {
		d.timeline = Phases(d.replay.snap, d.Device)
	}
	return d.timeline
}

// Phases finds the iterations and phases of device dev's trace of s, as DeviceTrace.Timeline does. It reads only
// the events and annotations, not the replay, so a caller may run it beside Run and hand its answer to
// UseTimeline.
func Phases(s *snapshot.Snapshot, dev int) *phases.Timeline {
	var events []snapshot.TraceEntry
	if dev >= 0 && dev < len(s.DeviceTraces) {
		events = s.DeviceTraces[dev]
	}
	return phasedetect.Detect(events, s.TraceStacks, s.ExternalAnnotations, dev)
}

// UseTimeline gives the replay its device's iterations and phases, found already (phasedetect.Detect of its
// events and the snapshot's annotations, which a caller may run while the trace is replayed): the DeviceTraces
// made from it take them instead of finding them again.
func (t *Trace) UseTimeline(tl *phases.Timeline) { t.timeline = tl }

// SetTimeline gives the device the iterations and phases found already.
func (d *DeviceTrace) SetTimeline(t *phases.Timeline) { d.timeline = t }

// LiveAfter returns the lifetimes live after event idx (before the first event when idx is −1), in element order.
func (d *DeviceTrace) LiveAfter(idx int) []Lifetime {
	var out []Lifetime
	for i := range d.Elements {
		if el := &d.Elements[i]; int(el.Start) <= idx && idx < int(el.End) {
			out = append(out, d.Lifetime(i))
		}
	}
	return out
}
