// Package replay replays one device's allocator trace against the snapshot's final state, with the memory
// viewer's rules: every allocation's lifetime and the allocated and reserved memory after each event. analyze
// builds its timeline, peak and live sets from it, internal/detect judges it, and the exports draw it, so all
// three count the same bytes.
package replay

import (
	"context"
	"fmt"
	"math"

	"github.com/memscan/memscan/internal/addrtab"
	"github.com/memscan/memscan/phases"
	"github.com/memscan/memscan/snapshot"
)

// Element is one allocation in a replayed trace, live during events [Start, End): Start −1 means live before the
// first recorded event, End == len(trace) means still live at the end.
type Element struct {
	Size int64
	// Event indices are int32: a trace of 2^31 events would be a file of hundreds of gigabytes (Run refuses one),
	// and half-size indices keep a million-element replay 24 MB smaller.
	Start, End int32
	// Origin is the trace event the element was seen at first (its alloc, or a free whose alloc predates the
	// trace); −1−k for the k-th live block of the final state that the trace never allocated (Trace.Block).
	Origin int32
	// Stack is the index of the element's stack (its origin event's, or its final-state block's) in
	// Trace.Stacks: the passes over every element read it here, in element order, instead of following Origin into
	// the trace (72 bytes an event, far apart), and may index tables by it instead of hashing pointers.
	Stack int32
}

// openElement is an element still allocated during the replay, and the free_requested with no free_completed yet
// that ends it (−1 when none); kept beside the element only while it is open.
type openElement struct{ i, freeReq int32 }

// blockRef is a block of the snapshot's segments.
type blockRef struct{ seg, blk int }

// Warn receives an inconsistency of the trace: its kind (for grouping) and one example, worded for the report.
// Only the first of each kind is worded: later ones come with an empty example, since a damaged trace can have
// one per event and wording each cost more than replaying it.
type Warn func(kind, example string)

// Trace is one device's trace replayed.
type Trace struct {
	Device int
	Events []snapshot.TraceEntry
	// Elements are in the order the replay met them: trace order, then the final-state blocks live all along.
	Elements []Element
	// Initial is the live requested bytes before the first event and Allocated the same after each event;
	// Reserved is the segment bytes before and after each event, as its changes (it moves only at segment events).
	Initial   int64
	Allocated []int64
	Reserved  Steps
	// OOMs are the indices of the trace's out-of-memory events, in order.
	OOMs []int
	// Actions counts the events by action code; OtherActions those of actions memscan does not know
	// (snapshot.ActionOther) by the name the file gave, nil when there are none.
	Actions      [256]int
	OtherActions map[string]int
	// Stacks are the distinct stacks of the elements (nil among them when some have none), in the order first met;
	// Element.Stack indexes them.
	Stacks []*snapshot.Stack
	// addrs are the elements' addresses, noted as the replay meets them: the detectors place every element in
	// its segment, which would otherwise read its origin event again.
	addrs []uint64
	// timeline is the device's iterations and phases when the caller found them already (UseTimeline).
	timeline *phases.Timeline
	// Categorized is true when some element's origin event carries a category of its own (snapshots synthesised
	// by profile_plot): without one, TraceCategory is "" for every element and need not be asked.
	Categorized bool

	snap      *snapshot.Snapshot
	preBlocks []blockRef
	stackIdx  map[*snapshot.Stack]int32
	// refIdx is 1 + the index in Stacks of each trace stack (snapshot.StackRef) met so far, 0 for one not met.
	refIdx []int32
	// spans are the address ranges of every segment the snapshot or its trace knows on this device, merged and
	// sorted; built at the first free of an address the trace never allocated (see phantomFree).
	spans [][2]uint64
	warn  Warn
	// warnedOf are the kinds warned of already (Trace.warned).
	warnedOf map[string]bool
}

// Run replays device dev's trace of s. An alloc adds its requested size; free_completed removes it (a
// free_requested removes it only when no free_completed follows); frees whose alloc precedes the trace, and live
// blocks with no alloc in the trace, count from the start. warn (nil: ignore) hears the inconsistencies.
func Run(ctx context.Context, s *snapshot.Snapshot, dev int, warn Warn) (*Trace, error) {
	var events []snapshot.TraceEntry
	if dev >= 0 && dev < len(s.DeviceTraces) {
		events = s.DeviceTraces[dev]
	}
	n := len(events)
	if n > math.MaxInt32 {
		return nil, fmt.Errorf("device %d: the trace has %d events, more than memscan can replay (%d)", dev, n, math.MaxInt32)
	}
	if warn == nil {
		warn = func(string, string) {}
	}
	t := &Trace{Device: dev, Events: events, snap: s, warn: warn, stackIdx: map[*snapshot.Stack]int32{}}
	n32 := int32(n)
	open := addrtab.New[openElement]() // address → element still allocated
	t.countActions()
	bound := t.elementBound()
	t.Elements, t.addrs = make([]Element, 0, bound), make([]uint64, 0, bound)
	// The segment events and what each adds to reserved memory: a few among millions of events.
	var segAt []int32
	var segDelta []int64
	for jj := range events {
		// Poll the context every few thousand events: long loops stay cancellable at negligible cost.
		if jj&4095 == 4095 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		j, e := int32(jj), &events[jj]
		switch e.Action {
		case snapshot.ActionAlloc:
			if o, ok := open.Get(e.Addr); ok {
				if el := &t.Elements[o.i]; o.freeReq >= 0 {
					// Its free_completed was not recorded: the free_requested ended it.
					el.End = o.freeReq
				} else {
					if !t.warned("alloc-over-live") {
						warn("alloc-over-live", fmt.Sprintf("device %d trace event %d: alloc at 0x%x, which is still allocated since event %d", dev, j, e.Addr, el.Start))
					}
					el.End = j
				}
			}
			open.Set(e.Addr, openElement{int32(len(t.Elements)), -1})
			t.addEvent(e, Element{Size: e.Size, Start: j, End: n32, Origin: j})
		case snapshot.ActionFreeRequested:
			if o, ok := open.Get(e.Addr); ok {
				if o.freeReq < 0 {
					open.Set(e.Addr, openElement{o.i, j})
				}
				continue
			}
			if t.phantomFree(jj, e) {
				continue
			}
			// Allocated before the trace window: live from the start, stack taken from the free.
			open.Set(e.Addr, openElement{int32(len(t.Elements)), j})
			t.addEvent(e, Element{Size: e.Size, Start: -1, End: n32, Origin: j})
		case snapshot.ActionFreeCompleted:
			if o, ok := open.Get(e.Addr); ok {
				t.Elements[o.i].End = j
				open.Delete(e.Addr)
				continue
			}
			if t.phantomFree(jj, e) {
				continue
			}
			t.addEvent(e, Element{Size: e.Size, Start: -1, End: j, Origin: j})
		case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentMap:
			segAt, segDelta = append(segAt, j), append(segDelta, e.Size)
		case snapshot.ActionSegmentFree, snapshot.ActionSegmentUnmap:
			segAt, segDelta = append(segAt, j), append(segDelta, -e.Size)
		case snapshot.ActionOOM:
			t.OOMs = append(t.OOMs, jj)
		}
	}
	// A free_requested never completed within the trace ends the allocation where it was requested: it is not
	// live at the end (addFinalBlocks).
	open.Each(func(_ uint64, o openElement) {
		if o.freeReq >= 0 {
			t.Elements[o.i].End = o.freeReq
		}
	})
	finalRes := t.addFinalBlocks(open)
	t.series(segAt, segDelta, finalRes)
	t.stackIdx, t.refIdx = nil, nil
	return t, nil
}

// warned reports whether kind was warned of already, and if so tells warn of this one without an example (see
// Warn); the caller words the first.
func (t *Trace) warned(kind string) bool {
	if t.warnedOf[kind] {
		t.warn(kind, "")
		return true
	}
	if t.warnedOf == nil {
		t.warnedOf = map[string]bool{}
	}
	t.warnedOf[kind] = true
	return false
}

// addEvent appends el, seen at trace event e, with e's stack.
func (t *Trace) addEvent(e *snapshot.TraceEntry, el Element) {
	el.Stack = t.entryStackIndex(e.Stack)
	if !t.Categorized && e.Extra != 0 && t.snap.EntryExtra(e).Category != "" {
		t.Categorized = true
	}
	t.Elements, t.addrs = append(t.Elements, el), append(t.addrs, e.Addr)
}

// entryStackIndex returns the index in t.Stacks of the trace stack r names (stackIndex), remembered by r so that
// the events need no map.
func (t *Trace) entryStackIndex(r snapshot.StackRef) int32 {
	if r <= 0 || int(r) >= len(t.snap.TraceStacks) {
		return t.stackIndex(nil)
	}
	if t.refIdx == nil {
		t.refIdx = make([]int32, len(t.snap.TraceStacks))
	}
	if k := t.refIdx[r]; k > 0 {
		return k - 1
	}
	k := t.stackIndex(t.snap.TraceStacks[r])
	t.refIdx[r] = k + 1
	return k
}

// stackIndex returns the index of s in t.Stacks, adding it when new. Stacks shared by many events decode to one
// pointer, so a trace has far fewer distinct stacks than elements.
func (t *Trace) stackIndex(s *snapshot.Stack) int32 {
	k, ok := t.stackIdx[s]
	if !ok {
		k = int32(len(t.Stacks))
		t.stackIdx[s] = k
		t.Stacks = append(t.Stacks, s)
	}
	return k
}

// countActions counts the events by action (one pass, which also sizes the replay: elementBound).
func (t *Trace) countActions() {
	for i := range t.Events {
		e := &t.Events[i]
		t.Actions[e.Action]++
		if e.Action == snapshot.ActionOther {
			if t.OtherActions == nil {
				t.OtherActions = map[string]int{}
			}
			t.OtherActions[t.snap.ActionName(e)]++
		}
	}
}

// elementBound is the capacity that holds the elements of the device's replay without a reallocation on
// ordinary traces: one per alloc, one per free beyond the allocs (frees of blocks allocated before the trace
// window), one per block live in the final state. A fixed share of the events reserved half as much again on
// traces of alloc, free_requested and free_completed, a tenth of the replay's memory.
func (t *Trace) elementBound() int {
	allocs, freeReq, freeDone := t.Actions[snapshot.ActionAlloc], t.Actions[snapshot.ActionFreeRequested], t.Actions[snapshot.ActionFreeCompleted]
	n := allocs + max(0, max(freeReq, freeDone)-allocs)
	for i := range t.snap.Segments {
		if seg := &t.snap.Segments[i]; seg.Device == t.Device {
			for j := range seg.Blocks {
				if seg.Blocks[j].State == snapshot.BlockActiveAllocated {
					n++
				}
			}
		}
	}
	return n + 16
}

// addFinalBlocks adds the live blocks of the final state whose alloc is not in the trace (they were live all
// along) and returns the device's segment bytes in the final state. open holds the elements still allocated,
// those with a free_requested among them ended there.
func (t *Trace) addFinalBlocks(open *addrtab.Table[openElement]) int64 {
	n32 := int32(len(t.Events))
	var finalRes int64
	for i := range t.snap.Segments {
		seg := &t.snap.Segments[i]
		if seg.Device != t.Device {
			continue
		}
		finalRes += seg.TotalSize
		for j := range seg.Blocks {
			b := &seg.Blocks[j]
			if o, ok := open.Get(b.Address); b.State != snapshot.BlockActiveAllocated || ok && o.freeReq < 0 {
				continue
			}
			t.Elements = append(t.Elements, Element{Size: b.RequestedSize, Start: -1, End: n32, Origin: int32(-1 - len(t.preBlocks)), Stack: t.stackIndex(b.Stack)})
			t.addrs = append(t.addrs, b.Address)
			t.preBlocks = append(t.preBlocks, blockRef{i, j})
		}
	}
	return finalRes
}

// series turns the elements and the segment events' deltas (segDelta at events segAt) into the allocated and
// reserved series. Reserved memory is rebuilt backwards from the final state (finalRes), as the viewer's
// allocator-state view does.
func (t *Trace) series(segAt []int32, segDelta []int64, finalRes int64) {
	n := len(t.Events)
	n32 := int32(n)
	delta := make([]int64, n)
	for i := range t.Elements {
		el := &t.Elements[i]
		if el.Start < 0 {
			t.Initial += el.Size
		} else {
			delta[el.Start] += el.Size
		}
		if el.End < n32 {
			delta[el.End] -= el.Size
		}
	}
	// The running sums replace the deltas in place: one array of one word per event fewer.
	t.Allocated = delta
	var net int64
	for _, d := range segDelta {
		net += d
	}
	res := finalRes - net
	if res < 0 {
		t.warn("reserved-negative", fmt.Sprintf("device %d: segment events free %d bytes more than the snapshot holds plus the trace allocated; reserved timeline starts at 0", t.Device, -res))
		res = 0
	}
	t.Reserved = stepsFrom(res, segAt, segDelta)
	cur := t.Initial
	for j := range n {
		cur += delta[j]
		t.Allocated[j] = cur
	}
}

// Block returns the final-state block of an element with a negative origin, and its segment.
func (t *Trace) Block(origin int32) (*snapshot.Block, *snapshot.Segment) {
	ref := t.preBlocks[-1-origin]
	seg := &t.snap.Segments[ref.seg]
	return &seg.Blocks[ref.blk], seg
}

// Stack returns the stack of element i: its trace event's, or its final-state block's.
func (t *Trace) Stack(i int) *snapshot.Stack { return t.Stacks[t.Elements[i].Stack] }

// TraceCategory returns the category element i's origin event carries (snapshots synthesised by profile_plot),
// "" when it has none or is a final-state block.
func (t *Trace) TraceCategory(i int) string {
	if o := t.Elements[i].Origin; t.Categorized && o >= 0 {
		return t.snap.EntryExtra(&t.Events[o]).Category
	}
	return ""
}

// PeakIndex returns the first event at the highest live allocated memory and that memory; the index is −1 only
// when memory before the first event was higher than ever after.
func (t *Trace) PeakIndex() (int, int64) { return peakOf(t.Initial, t.Allocated) }

// peakOf returns the first index of the highest value of series, −1 only when initial, the value before it, is
// higher than all of it (so that a trace that returns to its initial level names its first event at that level).
func peakOf(initial int64, series []int64) (int, int64) {
	idx, best := -1, int64(math.MinInt64)
	for j, v := range series {
		if v > best {
			idx, best = j, v
		}
	}
	if initial > best {
		return -1, initial
	}
	return idx, best
}
