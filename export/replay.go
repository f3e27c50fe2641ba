package export

import (
	"cmp"
	"context"
	"slices"

	"github.com/memscan/memscan/snapshot"
)

// liveAlloc is one allocation live at some point of a device trace.
type liveAlloc struct {
	Addr   uint64
	Size   int64 // requested bytes, as the trace records them
	Stack  *snapshot.Stack
	Stream uint64
	// Index is the trace index of the alloc, -1 when the allocation predates the trace.
	Index int
}

// deviceReplay is the replay of one device trace with the memory viewer's rules, as memscan's analysis applies them:
// an allocation in the trace lives from its alloc to its free_completed (or its free_requested when no completion
// follows); a free without an alloc, and an active_allocated block of the final snapshot that the trace never
// allocated, were live from the start.
type deviceReplay struct {
	Device int
	Trace  []snapshot.TraceEntry
	// Pre are the allocations live before the first event.
	Pre []liveAlloc
	// InitialAllocated and InitialReserved are the bytes before the first event.
	InitialAllocated, InitialReserved int64
	// Allocated and Reserved hold live requested bytes and segment bytes after each event.
	Allocated, Reserved []int64
	// PeakIndex is the event after which Allocated is highest (the first such event), -1 when the state before the
	// first event is the highest; PeakBytes that value.
	PeakIndex int
	PeakBytes int64
	// completed marks free_requested events whose free_completed follows; the allocation ends at the latter.
	completed map[int]bool
}

func isFree(a snapshot.Action) bool {
	return a == snapshot.ActionFreeRequested || a == snapshot.ActionFreeCompleted
}

// replayDevice replays the trace of device dev against the final state in s.
func replayDevice(ctx context.Context, s *snapshot.Snapshot, dev int) (*deviceReplay, error) {
	var trace []snapshot.TraceEntry
	if dev >= 0 && dev < len(s.DeviceTraces) {
		trace = s.DeviceTraces[dev]
	}
	r := &deviceReplay{Device: dev, Trace: trace, PeakIndex: -1}

	// Pass 1: which allocations predate the trace, and which free_requested events are followed by their
	// free_completed (the allocation then ends at the free_completed, as in memscan's analysis).
	live := make(map[uint64]bool)
	pendingReq := make(map[uint64]int) // address → index of its free_requested awaiting completion
	r.completed = make(map[int]bool)
	for i := range trace {
		if i%(1<<16) == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		e := &trace[i]
		switch e.Action {
		case snapshot.ActionAlloc:
			live[e.Addr] = true
			delete(pendingReq, e.Addr)
		case snapshot.ActionFreeRequested:
			if !live[e.Addr] {
				r.Pre = append(r.Pre, liveAlloc{Addr: e.Addr, Size: e.Size, Stack: e.Stack, Stream: e.Stream, Index: -1})
				live[e.Addr] = true
			}
			pendingReq[e.Addr] = i
		case snapshot.ActionFreeCompleted:
			if j, ok := pendingReq[e.Addr]; ok {
				r.completed[j] = true
				delete(pendingReq, e.Addr)
			} else if !live[e.Addr] {
				r.Pre = append(r.Pre, liveAlloc{Addr: e.Addr, Size: e.Size, Stack: e.Stack, Stream: e.Stream, Index: -1})
			}
			delete(live, e.Addr)
		}
	}
	for _, j := range pendingReq {
		delete(live, trace[j].Addr) // freed by the user, never completed: gone at the free_requested
	}
	var finalReserved int64
	for i := range s.Segments {
		seg := &s.Segments[i]
		if seg.Device != dev {
			continue
		}
		finalReserved += seg.TotalSize
		for j := range seg.Blocks {
			b := &seg.Blocks[j]
			if b.State == snapshot.BlockActiveAllocated && !live[b.Address] {
				r.Pre = append(r.Pre, liveAlloc{Addr: b.Address, Size: b.RequestedSize, Stack: b.Stack, Stream: seg.Stream, Index: -1})
			}
		}
	}
	r.InitialReserved = finalReserved
	for i := range trace {
		switch e := &trace[i]; e.Action {
		case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentMap:
			r.InitialReserved -= e.Size
		case snapshot.ActionSegmentFree, snapshot.ActionSegmentUnmap:
			r.InitialReserved += e.Size
		}
	}
	for _, p := range r.Pre {
		r.InitialAllocated += p.Size
	}

	// Pass 2: running totals.
	r.Allocated = make([]int64, len(trace))
	r.Reserved = make([]int64, len(trace))
	alloc, reserved := r.InitialAllocated, r.InitialReserved
	r.PeakBytes = alloc
	err := r.walk(ctx, len(trace)-1, func(i int, delta int64, _ *liveAlloc) {
		alloc += delta
		switch e := &trace[i]; e.Action {
		case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentMap:
			reserved += e.Size
		case snapshot.ActionSegmentFree, snapshot.ActionSegmentUnmap:
			reserved -= e.Size
		}
		r.Allocated[i] = alloc
		r.Reserved[i] = reserved
		if alloc > r.PeakBytes {
			r.PeakBytes, r.PeakIndex = alloc, i
		}
	}, nil)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// walk replays events 0..last and calls step once per event with the change of live bytes and the allocation that
// started or ended (nil when none). When live is non-nil it is kept as the live set keyed by address.
func (r *deviceReplay) walk(ctx context.Context, last int, step func(i int, delta int64, a *liveAlloc), live map[uint64]liveAlloc) error {
	if live == nil {
		live = make(map[uint64]liveAlloc, len(r.Pre))
	}
	for _, p := range r.Pre {
		live[p.Addr] = p
	}
	for i := 0; i <= last && i < len(r.Trace); i++ {
		if i%(1<<16) == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		e := &r.Trace[i]
		var delta int64
		var changed *liveAlloc
		switch {
		case e.Action == snapshot.ActionAlloc:
			a := liveAlloc{Addr: e.Addr, Size: e.Size, Stack: e.Stack, Stream: e.Stream, Index: i}
			if old, ok := live[e.Addr]; ok {
				delta -= old.Size // a reused address without a recorded free: the old one is gone
			}
			live[e.Addr] = a
			delta += a.Size
			changed = &a
		case e.Action == snapshot.ActionFreeRequested && r.completed[i]:
			// ends at its free_completed
		case isFree(e.Action):
			if old, ok := live[e.Addr]; ok {
				delete(live, e.Addr)
				delta = -old.Size
				changed = &old
			}
		}
		if step != nil {
			step(i, delta, changed)
		}
	}
	return nil
}

// liveAfter returns the allocations live after event idx (before the first event when idx < 0).
func (r *deviceReplay) liveAfter(ctx context.Context, idx int) ([]liveAlloc, error) {
	live := make(map[uint64]liveAlloc)
	if err := r.walk(ctx, idx, nil, live); err != nil {
		return nil, err
	}
	out := make([]liveAlloc, 0, len(live))
	for _, a := range live {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b liveAlloc) int {
		return cmp.Or(cmp.Compare(a.Index, b.Index), cmp.Compare(a.Addr, b.Addr))
	})
	return out, nil
}

// devices lists the device ordinals that have segments or trace entries, ascending.
func devices(s *snapshot.Snapshot) []int {
	seen := make(map[int]bool)
	for i := range s.Segments {
		seen[s.Segments[i].Device] = true
	}
	for d, t := range s.DeviceTraces {
		if len(t) > 0 {
			seen[d] = true
		}
	}
	out := make([]int, 0, len(seen))
	for d := range seen {
		out = append(out, d)
	}
	slices.Sort(out)
	return out
}
