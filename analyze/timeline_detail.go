package analyze

import (
	"strings"

	"github.com/memscan/memscan/categorize"
	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/snapshot"
)

// TimelineDetail is one replayed device trace at full resolution, for the interactive timeline: every allocation
// with its lifetime, size, site, stack and the reason for its category, the reserved-memory changes and the time
// of every event. From it a viewer recomputes allocated and reserved memory after any event exactly (allocated
// after event j = InitialAllocated + the sizes of the blocks started at or before j and not yet ended), builds
// its own per-pixel min/max levels, and lists the live blocks at any moment.
//
// It holds slices of numbers and tables of strings (no pointer per block), so a trace of n events costs about
// 40 bytes per allocation and 8 per event; it is built once per device and is in neither summary.json nor
// report.msgpack.
type TimelineDetail struct {
	Device int
	// Events is the trace length; TimeUS the time of each event (empty when the trace has no times).
	Events int
	TimeUS []int64
	// InitialAllocated and InitialReserved are the live requested bytes and segment bytes before the first event.
	InitialAllocated, InitialReserved int64
	// One entry per allocation, in the replay's order: live after events Start..End−1 (Start −1: before the first
	// event; End == Events: still live at the end), Size requested bytes, Site an index into Sites, Stack an index
	// into Stacks (−1: no stack recorded), Reason an index into Reasons.
	Start, End []int32
	Size       []int64
	Site       []int32
	Stack      []int32
	Reason     []int32
	// Categories names the categories; Sites and SiteCategory name each site and its category index.
	Categories   []string
	Sites        []string
	SiteCategory []int32
	// Stacks are runs of StackFrames: stack k is StackFrames[StackStart[k]:StackStart[k+1]], innermost first,
	// each an index into Frames ("file:line:function", Python frames only when the stack has any, at most
	// maxDetailFrames).
	StackStart  []int32
	StackFrames []int32
	Frames      []string
	// Reasons say what decided a category, e.g. "stack rule attention" or "lifetime: gradient".
	Reasons []string
	// ReservedEvent and ReservedDelta are the segment changes: after event ReservedEvent[k], reserved memory moved
	// by ReservedDelta[k] bytes.
	ReservedEvent []int32
	ReservedDelta []int64
	// WhatIfEvent and WhatIfReserved are the --alloc-conf what-if's reserved memory from each event on (empty
	// without a what-if).
	WhatIfEvent    []int32
	WhatIfReserved []int64
}

// maxDetailFrames bounds the frames kept of one stack: deeper frames are interpreter start-up that no one reads.
const maxDetailFrames = 48

// detail builds the replay's TimelineDetail from the judged device d, whose Blocks are the elements in order.
func (r *replay) detail(d *findings.Device) TimelineDetail {
	n := len(r.trace)
	t := TimelineDetail{Device: r.dev, Events: n, InitialAllocated: r.initial, InitialReserved: r.initialReserved,
		Categories: append([]string(nil), r.catNames...), Sites: append([]string(nil), r.siteName...)}
	t.SiteCategory = make([]int32, len(r.siteCat))
	for i, c := range r.siteCat {
		t.SiteCategory[i] = int32(c)
	}
	if r.trace[0].HasTime {
		t.TimeUS = make([]int64, n)
		for j := range r.trace {
			t.TimeUS[j] = r.trace[j].TimeUS
		}
	}
	var prev int64
	for j, res := range r.reserved {
		if res != prev || (j == 0 && res != r.initialReserved) {
			base := prev
			if j == 0 {
				base = r.initialReserved
			}
			t.ReservedEvent = append(t.ReservedEvent, int32(j))
			t.ReservedDelta = append(t.ReservedDelta, res-base)
		}
		prev = res
	}
	m := len(r.elems)
	t.Start, t.End, t.Size = make([]int32, m), make([]int32, m), make([]int64, m)
	t.Site, t.Stack, t.Reason = make([]int32, m), make([]int32, m), make([]int32, m)
	stacks := map[*snapshot.Stack]int32{}
	frames := map[string]int32{}
	reasons := map[string]int32{}
	t.StackStart = []int32{0}
	for i, el := range r.elems {
		t.Start[i], t.End[i], t.Size[i], t.Site[i] = el.start, el.end, el.size, el.site
		t.Stack[i] = t.stack(d.Blocks[i].Stack, stacks, frames)
		why := reasonText(d.Blocks[i].Attr)
		k, ok := reasons[why]
		if !ok {
			k = int32(len(t.Reasons))
			reasons[why] = k
			t.Reasons = append(t.Reasons, why)
		}
		t.Reason[i] = k
	}
	return t
}

// stack interns s (shared stacks decode to one pointer) and returns its index, −1 for no stack.
func (t *TimelineDetail) stack(s *snapshot.Stack, stacks map[*snapshot.Stack]int32, frames map[string]int32) int32 {
	if s == nil || len(s.Frames) == 0 {
		return -1
	}
	if k, ok := stacks[s]; ok {
		return k
	}
	python := false
	for i := range s.Frames {
		python = python || strings.HasSuffix(s.Frames[i].Filename, ".py")
	}
	kept := 0
	for i := range s.Frames {
		f := &s.Frames[i]
		if (python && !strings.HasSuffix(f.Filename, ".py")) || kept == maxDetailFrames {
			continue
		}
		name := categorize.Site(f)
		k, ok := frames[name]
		if !ok {
			k = int32(len(t.Frames))
			frames[name] = k
			t.Frames = append(t.Frames, name)
		}
		t.StackFrames = append(t.StackFrames, k)
		kept++
	}
	k := int32(len(t.StackStart) - 1)
	t.StackStart = append(t.StackStart, int32(len(t.StackFrames)))
	stacks[s] = k
	return k
}

// reasonText says what decided an attribution's category.
func reasonText(a *categorize.Attribution) string {
	if a == nil {
		return "no rule"
	}
	if a.DecidedBy == categorize.DecidedByLifetime {
		return "lifetime: " + a.Lifetime
	}
	if a.Rule != "" {
		return "stack rule " + a.Rule
	}
	return "no rule matched the stack"
}

// Allocated returns the live requested bytes after every event, rebuilt from the blocks (the replay's series).
func (t *TimelineDetail) Allocated() []int64 {
	out := make([]int64, t.Events)
	for i := range t.Start {
		if t.Start[i] >= 0 {
			out[t.Start[i]] += t.Size[i]
		}
		if int(t.End[i]) < t.Events {
			out[t.End[i]] -= t.Size[i]
		}
	}
	cur := t.InitialAllocated
	for i := range out {
		cur += out[i]
		out[i] = cur
	}
	return out
}

// setWhatIf takes the what-if's reserved memory of t's device from the allocator replays, when there is one.
func (t *TimelineDetail) setWhatIf(reps []AllocatorReplay) {
	for _, r := range reps {
		if r.Device != t.Device || !r.WhatIf {
			continue
		}
		for _, s := range r.WhatIfTimeline {
			t.WhatIfEvent = append(t.WhatIfEvent, int32(s.Index))
			t.WhatIfReserved = append(t.WhatIfReserved, s.Reserved)
		}
	}
}
