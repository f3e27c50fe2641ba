package export

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"

	"github.com/memscan/memscan/internal/replay"
	"github.com/memscan/memscan/snapshot"
)

// TraceOptions configure the Chrome/Perfetto trace export.
type TraceOptions struct {
	// Rank becomes the trace process id, so traces of several ranks can be loaded side by side.
	Rank     int
	Classify Classifier // nil means DefaultClassifier
	Source   string
}

// TraceEvent is one Chrome trace-event-format event (the subset memscan writes).
type TraceEvent struct {
	Name  string         `json:"name"`
	Phase string         `json:"ph"`
	TS    int64          `json:"ts"`
	PID   int            `json:"pid"`
	TID   int            `json:"tid"`
	Scope string         `json:"s,omitempty"` // instant events: "p" (process) or "g" (global)
	Args  map[string]any `json:"args,omitempty"`
}

// Trace is the JSON object format of a Chrome trace, which Perfetto and chrome://tracing load.
type Trace struct {
	TraceEvents     []TraceEvent      `json:"traceEvents"`
	DisplayTimeUnit string            `json:"displayTimeUnit"`
	OtherData       map[string]string `json:"otherData,omitempty"`
}

// BuildTrace replays every device trace and returns counter tracks of memory over time ("GPU<d> memory" with
// allocated and reserved bytes, "GPU<d> by category" with live bytes per category), instant events for OOMs,
// snapshot and annotate entries, and instant events for record_function annotations. Timestamps are the
// allocator's microsecond clock when the trace has one (so the trace lines up with a Kineto trace of the same run),
// else the event index plus one.
func BuildTrace(ctx context.Context, s *snapshot.Snapshot, opt TraceOptions) (*Trace, error) {
	classify := memoized(opt.Classify)
	pid := opt.Rank
	t := &Trace{DisplayTimeUnit: "ms", OtherData: map[string]string{"tool": "memscan", "source": opt.Source}}
	t.TraceEvents = append(t.TraceEvents, TraceEvent{Name: "process_name", Phase: "M", PID: pid,
		Args: map[string]any{"name": fmt.Sprintf("rank %d", opt.Rank)}})
	category := func(st *snapshot.Stack) string {
		c, _ := classify(st)
		return c
	}
	for _, dev := range devices(s) {
		t.TraceEvents = append(t.TraceEvents, TraceEvent{Name: "thread_name", Phase: "M", PID: pid, TID: dev,
			Args: map[string]any{"name": fmt.Sprintf("GPU %d", dev)}})
		r, err := replay.ReplayDevice(ctx, s, dev)
		if err != nil {
			return nil, err
		}
		if len(r.Trace) == 0 {
			continue
		}
		if err := t.addDevice(ctx, r, pid, category); err != nil {
			return nil, err
		}
	}
	for _, a := range s.ExternalAnnotations {
		args := map[string]any{"stage": a.Stage}
		for k, v := range a.Extra {
			args[k] = v
		}
		t.TraceEvents = append(t.TraceEvents, TraceEvent{Name: a.Name, Phase: "i", Scope: "p", TS: a.TimeUS, PID: pid, TID: a.Device, Args: args})
	}
	return t, nil
}

// categoryStep is a change of live bytes in one category at one trace event.
type categoryStep struct {
	event, cat int
	delta      int64
}

// categorySteps derives live bytes per category from the replay: a lifetime adds its size at its Start and takes
// it back at its End. The category set is fixed per device (sorted names) so every counter event carries every
// series; initial holds what was live before the first event, steps are in event order.
func categorySteps(r *replay.DeviceTrace, category func(*snapshot.Stack) string) (names []string, initial []int64, steps []categoryStep) {
	ls := r.Lifetimes()
	lifeCat := replayedCategories(r, ls, category)
	catIdx := make(map[string]int)
	for _, c := range lifeCat {
		catIdx[c] = 0
	}
	names = make([]string, 0, len(catIdx))
	for c := range catIdx {
		names = append(names, c)
	}
	slices.Sort(names)
	for k, c := range names {
		catIdx[c] = k
	}
	initial = make([]int64, len(names))
	steps = make([]categoryStep, 0, 2*len(ls))
	n := len(r.Trace)
	for k := range ls {
		l, c := &ls[k], catIdx[lifeCat[k]]
		if l.Start < 0 {
			initial[c] += l.Size
		} else {
			steps = append(steps, categoryStep{l.Start, c, l.Size})
		}
		if l.End < n {
			steps = append(steps, categoryStep{l.End, c, -l.Size})
		}
	}
	slices.SortStableFunc(steps, func(a, b categoryStep) int { return cmp.Compare(a.event, b.event) })
	return names, initial, steps
}

// addDevice appends one device's counter tracks (allocated/reserved, bytes by category) and its instant events
// (OOMs, snapshots, annotations). Times are the trace's microseconds when every event has one, else event
// indices from 1 so that the initial state sits at 0.
func (t *Trace) addDevice(ctx context.Context, r *replay.DeviceTrace, pid int, category func(*snapshot.Stack) string) error {
	dev, n := r.Device, len(r.Trace)
	timed := true
	for i := range r.Trace {
		if !r.Trace[i].HasTime {
			timed = false
			break
		}
	}
	ts := func(i int) int64 {
		if timed {
			return r.Trace[i].TimeUS
		}
		return int64(i) + 1
	}
	names, vals, steps := categorySteps(r, category)
	memName := fmt.Sprintf("GPU%d memory", dev)
	catName := fmt.Sprintf("GPU%d by category", dev)
	counters := func(at int64, alloc, reserved int64) {
		t.TraceEvents = append(t.TraceEvents, TraceEvent{Name: memName, Phase: "C", TS: at, PID: pid, TID: dev,
			Args: map[string]any{"allocated": alloc, "reserved": reserved}})
		args := make(map[string]any, len(names))
		for k, c := range names {
			args[c] = vals[k]
		}
		t.TraceEvents = append(t.TraceEvents, TraceEvent{Name: catName, Phase: "C", TS: at, PID: pid, TID: dev, Args: args})
	}
	counters(ts(0)-1, r.InitialAllocated, r.Reserved.At(-1))
	prevAlloc, prevReserved := r.InitialAllocated, r.Reserved.At(-1)
	next := 0 // first entry of steps not applied yet
	var touched []int
	var before []int64
	for i := range r.Trace {
		if i%(1<<16) == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		touched, before = touched[:0], before[:0]
		for ; next < len(steps) && steps[next].event == i; next++ {
			st := &steps[next]
			touched, before = append(touched, st.cat), append(before, vals[st.cat])
			vals[st.cat] += st.delta
		}
		catsChanged := false
		for k, c := range touched {
			if vals[c] != before[k] {
				catsChanged = true
			}
		}
		if ev, ok := instantEvent(r, i, ts(i), pid, dev); ok {
			t.TraceEvents = append(t.TraceEvents, ev)
		}
		res := r.Reserved.At(i)
		changed := r.Allocated[i] != prevAlloc || res != prevReserved || catsChanged
		prevAlloc, prevReserved = r.Allocated[i], res
		if !changed {
			continue
		}
		// Events sharing a timestamp collapse into one point: the last state at that time.
		if i+1 < n && ts(i+1) == ts(i) {
			continue
		}
		counters(ts(i), r.Allocated[i], res)
	}
	// Close the tracks at the final state even when the last events changed nothing.
	last := n - 1
	counters(ts(last), r.Allocated[last], r.Reserved.At(last))
	return nil
}

// instantEvent is the instant marker of an OOM, a snapshot or an annotation; false for other actions.
func instantEvent(r *replay.DeviceTrace, j int, at int64, pid, dev int) (TraceEvent, bool) {
	e := &r.Trace[j]
	ev := TraceEvent{Phase: "i", Scope: "p", TS: at, PID: pid, TID: dev}
	switch e.Action {
	case snapshot.ActionOOM:
		ev.Name, ev.Args = "OOM", map[string]any{"requested_bytes": e.Size, "device_free_bytes": r.EventExtra(j).DeviceFree, "site": InnermostSite(r.EventStack(j))}
	case snapshot.ActionSnapshot:
		ev.Name, ev.Args = "snapshot", map[string]any{"allocated_bytes": e.Size}
	case snapshot.ActionAnnotate, snapshot.ActionUserDefined:
		ev.Name, ev.Args = "annotate", map[string]any{"text": r.EventExtra(j).UserMetadata, "addr": e.Addr}
	default:
		return TraceEvent{}, false
	}
	return ev, true
}

// WritePerfetto writes the Chrome trace JSON.
func WritePerfetto(ctx context.Context, w io.Writer, s *snapshot.Snapshot, opt TraceOptions) error {
	t, err := BuildTrace(ctx, s, opt)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(t); err != nil {
		return fmt.Errorf("writing trace JSON: %w", err)
	}
	return bw.Flush()
}
