package report

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
