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

// Lifetimes lists the replay's elements as Lifetimes, in element order.
func (t *Trace) Lifetimes() []Lifetime {
	out := make([]Lifetime, len(t.Elements))
	for i, el := range t.Elements {
		l := Lifetime{Size: el.Size, Event: int(el.Origin), Start: int(el.Start), End: int(el.End)}
		if el.Origin >= 0 {
			e := &t.Events[el.Origin]
			l.Addr, l.Stream, l.Stack = e.Addr, e.Stream, e.Stack
		} else {
			b, seg := t.Block(el.Origin)
			l.Addr, l.Stream, l.Stack, l.Event = b.Address, seg.Stream, b.Stack, -1
		}
		out[i] = l
	}
	return out
}

// DeviceTrace is one device trace replayed, as the detectors and the exports read it: every allocation's lifetime and
// the allocated and reserved series.
type DeviceTrace struct {
	Device int
	Trace  []snapshot.TraceEntry
	// Lifetimes are in the order the replay met them: trace order, then the final-state blocks live all along.
	Lifetimes []Lifetime
	// InitialAllocated and InitialReserved are the live requested bytes and segment bytes before the first event;
	// Allocated and Reserved the same after each event.
	InitialAllocated, InitialReserved int64
	Allocated, Reserved               []int64
	// PeakIndex is the first event after which Allocated is highest, −1 only when the state before the first event
	// is higher than ever after (as the report's peak); PeakBytes that value.
	PeakIndex int
	PeakBytes int64

	annotations []snapshot.Annotation
	timeline    *phases.Timeline
}

// WithLifetimes returns the replay as a DeviceTrace, its lifetimes listed.
func (t *Trace) WithLifetimes() *DeviceTrace {
	d := &DeviceTrace{Device: t.Device, Trace: t.Events, Lifetimes: t.Lifetimes(), InitialAllocated: t.Initial, InitialReserved: t.InitialReserved,
		Allocated: t.Allocated, Reserved: t.Reserved, annotations: t.snap.ExternalAnnotations}
	d.PeakIndex, d.PeakBytes = t.PeakIndex()
	return d
}

// ReplayDevice replays the trace of device dev against the final state in s. A device without trace events has
// no Lifetimes and empty series.
func ReplayDevice(ctx context.Context, s *snapshot.Snapshot, dev int) (*DeviceTrace, error) {
	if dev < 0 || dev >= len(s.DeviceTraces) || len(s.DeviceTraces[dev]) == 0 {
		return &DeviceTrace{Device: dev, PeakIndex: -1, Allocated: []int64{}, Reserved: []int64{}, Lifetimes: []Lifetime{}}, nil
	}
	t, err := Run(ctx, s, dev, nil)
	if err != nil {
		return nil, err
	}
	return t.WithLifetimes(), nil
}

// Timeline returns the trace's iterations and phases, which the lifetime attribution reads. They are found on
// first use, since not every caller needs them (about a tenth of a replay's cost); not safe for concurrent use.
func (d *DeviceTrace) Timeline() *phases.Timeline {
	if d.timeline == nil {
		d.timeline = phasedetect.Detect(d.Trace, d.annotations, d.Device)
	}
	return d.timeline
}

// SetTimeline gives the device the iterations and phases found already.
func (d *DeviceTrace) SetTimeline(t *phases.Timeline) { d.timeline = t }

// LiveAfter returns the lifetimes live after event idx (before the first event when idx is −1), in Lifetimes order.
func (d *DeviceTrace) LiveAfter(idx int) []Lifetime {
	var out []Lifetime
	for _, l := range d.Lifetimes {
		if l.Start <= idx && idx < l.End {
			out = append(out, l)
		}
	}
	return out
}
