// Package phases is the model of a training run's structure in one device trace: the iterations and, within
// each, the forward, backward and optimizer phases, as event-index (and time) boundaries. It is part of the
// report (summary.json's iterations) and imports nothing; internal/phasedetect finds them in a trace.
package phases

import "sort"

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
	}
	return "-"
}

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
	// Complete is true when the iteration ran through an optimizer phase before the trace ended.
	Complete bool `json:"complete"`
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
	k := sort.Search(len(t.Iterations), func(i int) bool { return t.Iterations[i].Span.End > j })
	if k == len(t.Iterations) || !t.Iterations[k].Span.Contains(j) {
		return -1, None
	}
	it := &t.Iterations[k]
	switch {
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
