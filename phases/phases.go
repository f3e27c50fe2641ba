// Package phases is the model of a training run's structure in one device trace: the iterations and, within
// each, the forward, backward and optimizer phases, as event-index (and time) boundaries. It is part of the
// report (summary.json's iterations) and imports nothing; internal/phasedetect finds them in a trace.
package phases

import (
	"encoding/json"
	"sort"
	"strconv"
)

// Phase is the part of a training iteration an event belongs to.
type Phase uint8

const (
	// None is an event outside any known phase (an iteration split only by markers, or a trace without evidence).
	None Phase = iota
	// Setup is everything before the first forward: building the model, moving it to the device, the first input.
	Setup
	Forward
	Backward
	Optimizer
	// Prefill and Decode split an inference iteration (a generate call): the forward over the prompt, then the
	// forwards of one token each. They are forwards to everything that asks what role memory plays.
	Prefill
	Decode
)

// String returns the phase's name as reports print it.
func (p Phase) String() string {
	switch p {
	case Setup:
		return "setup"
	case Forward:
		return "forward"
	case Backward:
		return "backward"
	case Optimizer:
		return "optimizer"
	case Prefill:
		return "prefill"
	case Decode:
		return "decode"
	}
	return "-"
}

// IsForward reports whether p runs the model forward: a training forward, or an inference prefill or decode.
func (p Phase) IsForward() bool { return p == Forward || p == Prefill || p == Decode }

// Span is a range of trace events [Start, End); Start == End == −1 when the phase was not seen. StartUS and EndUS
// are the times of the first event in the span and of the first event after it (the trace's last event when the
// span runs to the end), 0 when the trace has no times.
type Span struct {
	Start   int   `json:"start_event"`
	End     int   `json:"end_event"`
	StartUS int64 `json:"start_time_us,omitempty"`
	EndUS   int64 `json:"end_time_us,omitempty"`
}

// Empty reports whether the phase was not seen.
func (s Span) Empty() bool { return s.Start < 0 || s.End <= s.Start }

// Contains reports whether event j lies in the span.
func (s Span) Contains(j int) bool { return s.Start <= j && j < s.End }

// NoSpan is a phase that was not seen.
var NoSpan = Span{Start: -1, End: -1}

// Iteration is one training iteration on one device.
type Iteration struct {
	// Index counts iterations from 1 in trace order.
	Index int  `json:"iteration"`
	Span  Span `json:"span"`
	// Forward, Backward and Optimizer are the phases seen; they tile the iteration in that order.
	Forward   Span `json:"forward"`
	Backward  Span `json:"backward"`
	Optimizer Span `json:"optimizer"`
	// Complete is true when the iteration ran through an optimizer phase (for inference: its generate call)
	// before the trace ended.
	Complete bool `json:"complete"`
	// Prefill and Decode split an inference iteration (one generate call) whose Forward spans both; nil for a
	// training iteration. summary.json shows them in place of forward, backward and optimizer.
	Prefill *Span `json:"-" msgpack:"prefill,omitempty"`
	Decode  *Span `json:"-" msgpack:"decode,omitempty"`
}

// inferenceJSON is an inference iteration's JSON form: its prefill and decode spans stand where a training
// iteration has forward, backward and optimizer.
type inferenceJSON struct {
	Index    int   `json:"iteration"`
	Span     Span  `json:"span"`
	Prefill  *Span `json:"prefill"`
	Decode   *Span `json:"decode"`
	Complete bool  `json:"complete"`
}

// plainIteration is Iteration without its methods: its fields' own JSON form.
type plainIteration Iteration

// MarshalJSON writes a training iteration as it always was, and an inference one with prefill and decode.
func (it Iteration) MarshalJSON() ([]byte, error) {
	if it.Prefill != nil {
		return json.Marshal(inferenceJSON{it.Index, it.Span, it.Prefill, it.Decode, it.Complete})
	}
	return it.AppendJSON(make([]byte, 0, 320)), nil
}

// AppendJSON appends a training iteration's JSON to b by hand: a long run has tens of thousands of iterations,
// and encoding/json's reflection took most of the summary's time on them. The bytes are those of
// json.Marshal(plainIteration(it)); an inference iteration goes through MarshalJSON's other form.
func (it Iteration) AppendJSON(b []byte) []byte {
	if it.Prefill != nil {
		j, _ := it.MarshalJSON() // spans and integers always encode
		return append(b, j...)
	}
	b = append(b, `{"iteration":`...)
	b = strconv.AppendInt(b, int64(it.Index), 10)
	for _, f := range []struct {
		key string
		sp  Span
	}{{`,"span":`, it.Span}, {`,"forward":`, it.Forward}, {`,"backward":`, it.Backward}, {`,"optimizer":`, it.Optimizer}} {
		b = f.sp.AppendJSON(append(b, f.key...))
	}
	b = append(b, `,"complete":`...)
	b = strconv.AppendBool(b, it.Complete)
	return append(b, '}')
}

// AppendJSON appends s as encoding/json writes it, for the hand-written encoders of long lists of spans.
func (s Span) AppendJSON(b []byte) []byte {
	b = append(b, `{"start_event":`...)
	b = strconv.AppendInt(b, int64(s.Start), 10)
	b = append(b, `,"end_event":`...)
	b = strconv.AppendInt(b, int64(s.End), 10)
	if s.StartUS != 0 {
		b = append(b, `,"start_time_us":`...)
		b = strconv.AppendInt(b, s.StartUS, 10)
	}
	if s.EndUS != 0 {
		b = append(b, `,"end_time_us":`...)
		b = strconv.AppendInt(b, s.EndUS, 10)
	}
	return append(b, '}')
}

// UnmarshalJSON reads either form back; an inference iteration's forward spans its prefill and decode.
func (it *Iteration) UnmarshalJSON(b []byte) error {
	x := struct {
		plainIteration
		Prefill *Span `json:"prefill"`
		Decode  *Span `json:"decode"`
	}{plainIteration: plainIteration{Forward: NoSpan, Backward: NoSpan, Optimizer: NoSpan}}
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	*it = Iteration(x.plainIteration)
	it.Prefill, it.Decode = x.Prefill, x.Decode
	if x.Prefill != nil {
		it.Forward = Span{Start: x.Prefill.Start, End: x.Prefill.End, StartUS: x.Prefill.StartUS, EndUS: x.Prefill.EndUS}
		if x.Decode != nil && !x.Decode.Empty() {
			it.Forward.End, it.Forward.EndUS = x.Decode.End, x.Decode.EndUS
		}
	}
	return nil
}

// Timeline is the iterations and phases of one device's trace.
type Timeline struct {
	Device int `json:"device"`
	Events int `json:"events"`
	// Source names the evidence the boundaries came from, e.g. "optimizer annotations + stacks".
	Source     string      `json:"source"`
	Setup      Span        `json:"setup"`
	Iterations []Iteration `json:"iterations"`
	// OOM is the first out-of-memory event, −1 when none. The iteration it hit ends there: what the program frees
	// while unwinding the exception is not part of any phase.
	OOM int `json:"oom_event"`
}

// At returns the iteration (0-based index into Iterations, −1 for none) and phase of event j; j == −1 means
// before the first recorded event, which is the setup when the trace has one.
func (t *Timeline) At(j int) (iter int, ph Phase) {
	if j < 0 {
		if !t.Setup.Empty() && t.Setup.Start == 0 {
			return -1, Setup
		}
		return -1, None
	}
	if t.Setup.Contains(j) {
		return -1, Setup
	}
	return t.in(sort.Search(len(t.Iterations), func(i int) bool { return t.Iterations[i].Span.End > j }), j)
}

// in is At for an event j ≥ 0 outside the setup, given k: the first iteration that ends after j.
func (t *Timeline) in(k, j int) (iter int, ph Phase) {
	if k == len(t.Iterations) || !t.Iterations[k].Span.Contains(j) {
		return -1, None
	}
	it := &t.Iterations[k]
	switch {
	case it.Prefill != nil && it.Prefill.Contains(j):
		return k, Prefill
	case it.Decode != nil && it.Decode.Contains(j):
		return k, Decode
	case it.Forward.Contains(j):
		return k, Forward
	case it.Backward.Contains(j):
		return k, Backward
	case it.Optimizer.Contains(j):
		return k, Optimizer
	}
	return k, None
}

// Training reports whether any iteration has a backward phase.
func (t *Timeline) Training() bool {
	for _, it := range t.Iterations {
		if !it.Backward.Empty() {
			return true
		}
	}
	return false
}

// Cursor answers At for a sequence of events that mostly lie near each other (the elements of a replay in trace
// order, and their frees), faster than At's search of every iteration: it searches outwards from the iteration of
// its last answer, in steps that double. The answers are At's.
type Cursor struct {
	t *Timeline
	k int // the iteration found last: the first that ends after that event (len(Iterations) when none does)
	// ordered is true when the iterations' ends never decrease, as the detector makes them; otherwise each
	// answer is At's own search, whose result on such a list only At defines.
	ordered bool
}

// Cursor returns a cursor on t, at its first iteration.
func (t *Timeline) Cursor() Cursor {
	c := Cursor{t: t, ordered: true}
	for i := 1; i < len(t.Iterations); i++ {
		if t.Iterations[i].Span.End < t.Iterations[i-1].Span.End {
			c.ordered = false
			break
		}
	}
	return c
}

// At returns t.At(j).
func (c *Cursor) At(j int) (iter int, ph Phase) {
	t := c.t
	if j < 0 || t.Setup.Contains(j) || !c.ordered {
		return t.At(j)
	}
	its := t.Iterations
	n := len(its)
	// after(i): iteration i ends after j; true past the last iteration. It never turns false again as i grows.
	after := func(i int) bool { return i >= n || its[i].Span.End > j }
	k := c.k
	if after(k) {
		// The answer is at k or below: step down until an iteration ends at or before j, then search between.
		hi, step := k, 1
		lo := hi - step
		for lo >= 0 && after(lo) {
			hi, step = lo, step*2
			lo = hi - step
		}
		lo = max(lo, -1)
		k = lo + 1 + sort.Search(hi-lo-1, func(i int) bool { return after(lo + 1 + i) })
	} else {
		// The answer is above k: step up until an iteration ends after j.
		lo, step := k, 1
		hi := lo + step
		for !after(hi) {
			lo, step = hi, step*2
			hi = min(lo+step, n)
		}
		k = lo + 1 + sort.Search(hi-lo-1, func(i int) bool { return after(lo + 1 + i) })
	}
	c.k = k
	return t.in(k, j)
}
