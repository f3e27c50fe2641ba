package analyze

import (
	"context"

	"github.com/memscan/memscan/categorize"
	"github.com/memscan/memscan/internal/detect"
	"github.com/memscan/memscan/internal/phasedetect"
	"github.com/memscan/memscan/phases"
	"github.com/memscan/memscan/snapshot"
)

// Lifetime is one allocation of a replayed device trace, live after the events Start..End−1: Start −1 means live
// before the first event, End == len(trace) still live at the end; Event is the trace event that introduced it
// (its alloc, or a free whose alloc predates the trace), −1 for a live block of the final state that the trace
// never allocated. It is the detectors' type, so a replay feeds them as it is.
type Lifetime = detect.Lifetime

// DeviceReplay is one device trace replayed as Analyze replays it for its timeline, peak and OOM figures.
type DeviceReplay struct {
	Device int
	Trace  []snapshot.TraceEntry
	// Lifetimes are in the order the replay met them: trace order, then the final-state blocks live all along.
	Lifetimes []Lifetime
	// InitialAllocated and InitialReserved are the live requested bytes and segment bytes before the first event;
	// Allocated and Reserved the same after each event.
	InitialAllocated, InitialReserved int64
	Allocated, Reserved               []int64
	// PeakIndex is the first event after which Allocated is highest, −1 only when the state before the first event
	// is higher than ever after (as Peak.EventIndex); PeakBytes that value.
	PeakIndex int
	PeakBytes int64
	// Warnings are the inconsistencies the replay met (as Report.Warnings words them).
	Warnings []string

	annotations []snapshot.Annotation
	timeline    *phases.Timeline
}

// Timeline returns the trace's iterations and phases, which the lifetime attribution reads
// (categorize.Attribute). They are found on first use, since not every caller needs them (about a tenth of a
// replay's cost); not safe for concurrent use.
func (d *DeviceReplay) Timeline() *phases.Timeline {
	if d.timeline == nil {
		d.timeline = phasedetect.Detect(d.Trace, d.annotations, d.Device)
	}
	return d.timeline
}

// ReplayDevice replays the trace of device dev against the final state in s, with the memory viewer's rules as
// Analyze applies them. A device without trace events has no Lifetimes and empty series.
func ReplayDevice(ctx context.Context, s *snapshot.Snapshot, dev int) (*DeviceReplay, error) {
	var trace []snapshot.TraceEntry
	if dev >= 0 && dev < len(s.DeviceTraces) {
		trace = s.DeviceTraces[dev]
	}
	out := &DeviceReplay{Device: dev, Trace: trace, PeakIndex: -1, Allocated: []int64{}, Reserved: []int64{}, Lifetimes: []Lifetime{}}
	if len(trace) == 0 {
		return out, nil
	}
	part := &SnapshotReport{}
	a := &analysis{ctx: ctx, opts: Options{}.withDefaults(), snap: s, warns: newWarnings(), rep: &Report{Part: part}, part: part}
	a.cat = categorize.NewCategorizer(a.opts.Rules) // only OOM events are categorized
	r := &replay{a: a, dev: dev, trace: trace}
	if err := r.run(); err != nil {
		return nil, err
	}
	out.InitialAllocated, out.InitialReserved = r.initial, r.initialReserved
	out.Allocated, out.Reserved = r.alloc, r.reserved
	out.PeakIndex, out.PeakBytes = r.peakIndex()
	out.Lifetimes = r.lifetimes()
	out.annotations = s.ExternalAnnotations
	out.Warnings = a.warns.lines()
	return out, nil
}

// lifetimes lists the replay's elements as Lifetimes, in element order.
func (r *replay) lifetimes() []Lifetime {
	out := make([]Lifetime, len(r.elems))
	for i, el := range r.elems {
		l := Lifetime{Size: el.size, Event: int(el.origin), Start: int(el.start), End: int(el.end)}
		if el.origin >= 0 {
			e := &r.trace[el.origin]
			l.Addr, l.Stream, l.Stack = e.Addr, e.Stream, e.Stack
		} else {
			b, seg := r.block(int(el.origin))
			l.Addr, l.Stream, l.Stack, l.Event = b.Address, seg.Stream, b.Stack, -1
		}
		out[i] = l
	}
	return out
}

// LiveAfter returns the lifetimes live after event idx (before the first event when idx is −1), in Lifetimes order.
func (d *DeviceReplay) LiveAfter(idx int) []Lifetime {
	var out []Lifetime
	for _, l := range d.Lifetimes {
		if l.Start <= idx && idx < l.End {
			out = append(out, l)
		}
	}
	return out
}
