package allocator

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/memscan/memscan/internal/addrtab"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/snapshot"
)

// Recording is what one device trace says by itself: the reserved memory its segment events add up to, the
// segments it created, where it called empty_cache, its capacity, and — for a trace that does not begin at the
// process's first allocation — the state at its start. Compute it once with Record; every replay of the trace
// (baseline and what-ifs) reads it.
type Recording struct {
	Trace []snapshot.TraceEntry
	// InitialReserved is the segment bytes before the first event (0 for a complete trace).
	InitialReserved int64
	// PeakReserved is the highest reserved the segment events reach (max_memory_reserved for a complete
	// trace); PeakIndex the first event after which it is reached, −1 when the state before the trace is highest.
	PeakReserved int64
	PeakIndex    int
	// FinalReserved is the reserved bytes after the last event.
	FinalReserved int64
	// Created holds the trace's segment_alloc and segment_map events in order (Reserved as recorded).
	Created []SegmentEvent
	// EmptyCaches are the indices of the events that begin an empty_cache call: runs of segment_free /
	// segment_unmap that the allocator's own retry path does not explain.
	EmptyCaches []int
	// OOMs are the indices of the trace's oom events.
	OOMs []int
	// Capacity is the usable capacity the first oom event implies (reserved then + its device_free); 0 when the
	// trace has no oom.
	Capacity int64
	// Partial is true when the trace does not start at the process's first allocation (or contradicts itself);
	// Issues say why.
	Partial bool
	Issues  []Issue

	freeAction snapshot.Action
	extras     []snapshot.TraceExtra // the snapshot's TraceExtras (RecordOptions.Extras)
	streams    []uint64              // the snapshot's TraceStreams (RecordOptions.Streams)
	initial    []seedSegment
	// slot gives each alloc and free event the index of its address among the trace's distinct addresses (−1 for
	// the other events), and addrs lists the addresses by slot. A replay keeps its live blocks in a table indexed
	// by slot: the addresses are hashed once here, not once per replay and event.
	slot  []int32
	addrs []uint64
	// ignoreSlots are the slots whose next free is to be skipped: allocations live at the start that the start state
	// could not place.
	ignoreSlots []int32
}

// Issue is one thing a trace or its replay could not explain. Index is the trace event, −1 for the trace as a whole.
type Issue struct {
	Index  int    `json:"index"`
	Reason string `json:"reason"`
}

func (i Issue) String() string {
	if i.Index < 0 {
		return i.Reason
	}
	return fmt.Sprintf("event %d: %s", i.Index, i.Reason)
}

// maxIssues bounds the issues kept; later ones are counted in the last.
const maxIssues = 20

func addIssue(list []Issue, idx int, format string, args ...any) []Issue {
	if len(list) >= maxIssues {
		return list
	}
	return append(list, Issue{Index: idx, Reason: fmt.Sprintf(format, args...)})
}

// RecordOptions are what Record needs besides the trace.
type RecordOptions struct {
	// Final is the snapshot's segments (those of other devices are ignored); nil when unknown, which leaves a
	// trace that starts late detectable only by frees of allocations it never made.
	Final  []snapshot.Segment
	Device int
	// Settings is the configuration the trace was recorded under: it decides the sizes of blocks live before
	// the trace and whether a run of segment frees before a new segment was garbage collection.
	Settings Config
	// Capacity is the usable capacity when known from outside the trace (an oom event overrides it); it
	// decides whether a run of segment frees right before a new segment was empty_cache or the retry path.
	Capacity int64
	// Extras is the snapshot's TraceExtras, which the trace's entries index (their pools, an oom's free bytes), and
	// Streams its TraceStreams (their CUDA streams).
	Extras  []snapshot.TraceExtra
	Streams []uint64
}

// pool returns the pool of trace event e.
func (r *Recording) pool(e *snapshot.TraceEntry) PoolID {
	return PoolID(snapshot.ExtraOf(r.extras, e).Pool)
}

// stream returns the CUDA stream of trace event e.
func (r *Recording) stream(e *snapshot.TraceEntry) uint64 { return snapshot.StreamOf(r.streams, e) }

// ignorable reports events that neither allocate nor change segments.
func ignorable(a snapshot.Action) bool {
	switch a {
	case snapshot.ActionAlloc, snapshot.ActionFreeRequested, snapshot.ActionFreeCompleted,
		snapshot.ActionSegmentAlloc, snapshot.ActionSegmentFree, snapshot.ActionSegmentMap,
		snapshot.ActionSegmentUnmap, snapshot.ActionOOM:
		return false
	}
	return true
}

// Record reads one device trace.
func Record(trace []snapshot.TraceEntry, opt RecordOptions) *Recording {
	r := &Recording{Trace: trace, PeakIndex: -1, freeAction: snapshot.ActionFreeCompleted, extras: opt.Extras, streams: opt.Streams}
	// Traces older than free_completed (or filtered ones) only say free_requested.
	hasCompleted, hasRequested := false, false
	for i := 0; i < len(trace) && !hasCompleted; i++ {
		hasCompleted = trace[i].Action == snapshot.ActionFreeCompleted
		hasRequested = hasRequested || trace[i].Action == snapshot.ActionFreeRequested
	}
	if !hasCompleted && hasRequested {
		r.freeAction = snapshot.ActionFreeRequested
	}
	f := r.forward()
	r.rebuildStart(opt, f)
	r.finish(opt, f)
	return r
}

// forwardPass is what Record's one walk forwards through the trace finds before the start state is known: the
// trace is read once there (and its segment events once more, backwards), because reading a trace of millions of
// events is most of Record's cost. Reserved memory is counted from 0 (rel); finish adds InitialReserved.
type forwardPass struct {
	of *addrtab.Table[int32]
	// orphans are the slots whose first event is a free, with that event's index: allocations live at the start.
	orphans []slotEvent
	// segEvents are the indices of the segment events, for the walk backwards to the start state.
	segEvents []int32
	// firstOOM is the first oom event (−1: none) and relOOM the reserved memory before it.
	firstOOM int
	relOOM   int64
	// runs are the runs of segment frees that may be empty_cache calls (retryRun decides once reserved is known).
	runs []segRun
	// relPeak is the highest reserved memory, relFinal the last.
	relPeak, relFinal int64
	// issues are the segment events without bytes.
	issues []Issue
}

type slotEvent struct {
	slot  int32
	index int32
}

// segRun is a run of segment frees starting at event i with rel reserved before it, followed by event next
// (len(trace) when the run ends the trace) after any ignorable events.
type segRun struct {
	i, next int32
	rel     int64
}

// forward numbers the addresses the trace allocates and frees (see Recording.slot) and reads what rebuildStart
// and finish need (forwardPass).
func (r *Recording) forward() *forwardPass {
	trace := r.Trace
	f := &forwardPass{of: addrtab.New[int32](), firstOOM: -1}
	r.slot = make([]int32, len(trace))
	var rel int64
	inRun := false
	var n int32 // addresses numbered so far
	for i := range trace {
		e := &trace[i]
		if e.Action == snapshot.ActionAlloc || e.Action == r.freeAction {
			k, added := f.of.GetOrAdd(e.Addr, n)
			if added {
				n++
				if e.Action == r.freeAction {
					f.orphans = append(f.orphans, slotEvent{slot: k, index: int32(i)})
				}
			}
			r.slot[i] = k
			inRun = false
			continue
		}
		r.slot[i] = -1
		switch e.Action {
		case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentMap:
			f.segEvents = append(f.segEvents, int32(i))
			inRun = false
		case snapshot.ActionSegmentFree, snapshot.ActionSegmentUnmap:
			f.segEvents = append(f.segEvents, int32(i))
			if !inRun {
				f.runs = append(f.runs, segRun{i: int32(i), next: int32(r.runEnd(i)), rel: rel})
			}
			inRun = true
		case snapshot.ActionOOM:
			if f.firstOOM < 0 {
				f.firstOOM, f.relOOM = i, rel
			}
			r.OOMs = append(r.OOMs, i)
			inRun = false
		default:
			if !ignorable(e.Action) { // the free action the trace does not replay
				inRun = false
			}
		}
		d := segDelta(e)
		if d == 0 && kindOf(e.Action) != 0 {
			f.issues = addIssue(f.issues, i, "%s of %d bytes", e.Action, e.Size)
		}
		if d > 0 {
			r.Created = append(r.Created, SegmentEvent{Kind: kindOf(e.Action), Addr: e.Addr, Size: e.Size, Stream: r.stream(e), Pool: r.pool(e), Reserved: rel + e.Size})
		}
		rel += d
		if rel > f.relPeak {
			f.relPeak, r.PeakIndex = rel, i
		}
	}
	f.relFinal = rel
	// The addresses by slot, read off the table once it is complete: exactly sized, where appending them as
	// they came would allocate twice their bytes.
	r.addrs = byNumber(f.of)
	return f
}

// runEnd is the first event after the run of segment frees starting at i that is neither a segment free nor
// ignorable (len(trace) when there is none).
func (r *Recording) runEnd(i int) int {
	trace := r.Trace
	j := i
	for j < len(trace) && (trace[j].Action == snapshot.ActionSegmentFree || trace[j].Action == snapshot.ActionSegmentUnmap || ignorable(trace[j].Action)) {
		j++
	}
	return j
}

// startSeg is a segment of the start state while it is rebuilt.
type startSeg struct {
	size    int64
	stream  uint64
	pool    PoolID
	small   bool
	freedAt int // the trace event that frees it, −1 when it is still there at the end
}

// rebuildStart works backwards from the final segments through the trace to the state before its first event:
// which segments existed and which allocations were live. A complete trace starts empty.
func (r *Recording) rebuildStart(opt RecordOptions, f *forwardPass) {
	trace := r.Trace
	of := f.of
	segs := map[uint64]startSeg{}
	// What is live at the start by address slot (of): absent, or freed by trace event at. Walking back through
	// the allocs and frees would leave each slot as its first event says: absent after an alloc, freed by it
	// after a free (forwardPass.orphans), whatever the final state holds there. The final state's live blocks at
	// addresses the trace never names stay live all along (untouched).
	const absent = -1
	at := make([]int32, len(r.addrs))
	for k := range at {
		at[k] = absent
	}
	for _, o := range f.orphans {
		at[o.slot] = o.index
	}
	finals := map[int32]bool{} // the slots of the final state's live blocks
	untouched := map[uint64]seedBlock{}
	var finalReserved int64
	for _, s := range opt.Final {
		if s.Device != opt.Device {
			continue
		}
		finalReserved += s.TotalSize
		segs[s.Address] = startSeg{size: s.TotalSize, stream: s.Stream, pool: PoolID(s.Pool), small: s.Type == snapshot.SegmentSmall, freedAt: -1}
		for _, b := range s.Blocks {
			if b.State.Active() {
				if k, ok := of.Get(b.Address); ok {
					finals[k] = true
				} else {
					untouched[b.Address] = seedBlock{id: b.Address, addr: b.Address, size: b.Size, requested: b.RequestedSize, freedAt: -1, slot: -1}
				}
			}
		}
	}
	finalLive := len(finals) + len(untouched)
	var net int64 // what the segment events add to reserved (netSegmentBytes), summed on the way back
	expandable := false
	freedBefore := 0
	firstSegFree, segFreedBefore := -1, 0 // segment frees of segments the trace never allocated
	for x := len(f.segEvents) - 1; x >= 0; x-- {
		i := int(f.segEvents[x])
		e := &trace[i]
		switch e.Action {
		case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentMap:
			net += e.Size
		case snapshot.ActionSegmentFree, snapshot.ActionSegmentUnmap:
			net -= e.Size
		}
		switch e.Action {
		case snapshot.ActionSegmentAlloc:
			delete(segs, e.Addr)
		case snapshot.ActionSegmentFree:
			if e.Size <= 0 {
				continue
			}
			segs[e.Addr] = startSeg{size: e.Size, stream: r.stream(e), pool: r.pool(e), small: e.Size == smallBuffer, freedAt: i}
		case snapshot.ActionSegmentMap, snapshot.ActionSegmentUnmap:
			expandable = true
			if e.Size > 0 {
				r.rewindMapping(segs, e)
			}
		}
	}
	if opt.Final != nil {
		r.InitialReserved = finalReserved - net
	}
	firstFreedBefore := -1
	liveSlots := 0
	for _, i := range at {
		if i == absent {
			continue
		}
		liveSlots++
		if i >= 0 {
			freedBefore++
			if firstFreedBefore < 0 || int(i) < firstFreedBefore {
				firstFreedBefore = int(i)
			}
		}
	}
	for _, sg := range segs {
		if sg.freedAt >= 0 {
			segFreedBefore++
			if firstSegFree < 0 || sg.freedAt < firstSegFree {
				firstSegFree = sg.freedAt
			}
		}
	}
	// live is the start state's allocations by address, built only for a trace that does not start empty.
	live := func() map[uint64]seedBlock {
		m := maps.Clone(untouched)
		for k, i := range at {
			if i >= 0 {
				e := &trace[i]
				m[e.Addr] = seedBlock{id: e.Addr, addr: e.Addr, size: RoundSize(opt.Settings, e.Size), requested: max(e.Size, 0), freedAt: int(i), slot: int32(k)}
			}
		}
		return m
	}
	liveBefore := liveSlots + len(untouched) - freedBefore
	switch {
	case r.InitialReserved < 0:
		r.Issues = addIssue(r.Issues, -1, "the trace's segment events release %d bytes more than the final segments hold", -r.InitialReserved)
		r.InitialReserved = 0
		return
	case r.InitialReserved > 0:
		r.Issues = addIssue(r.Issues, -1, "the trace starts after %s of segments were already reserved, because history recording began later or its ring buffer dropped the oldest events; the state at its start was rebuilt from the final segments", units.Bytes(r.InitialReserved))
	}
	if opt.Final == nil && segFreedBefore > 0 {
		r.Issues = addIssue(r.Issues, firstSegFree, "%d segments freed in the trace were never allocated in it (first here)", segFreedBefore)
	}
	if freedBefore > 0 {
		r.Issues = addIssue(r.Issues, firstFreedBefore, "%d allocations freed in the trace were never allocated in it (first here); they were made before it began", freedBefore)
	}
	if liveBefore > 0 && finalLive > 0 {
		r.Issues = addIssue(r.Issues, -1, "%d allocations live at the end were made before the trace began", liveBefore)
	}
	if len(r.Issues) == 0 {
		return
	}
	r.Partial = true
	if opt.Final == nil {
		for _, sg := range segs {
			r.InitialReserved += sg.size
		}
	}
	if expandable {
		r.Issues = addIssue(r.Issues, -1, "expandable pages mapped before the trace began are replayed as fixed segments")
	}
	r.placeStart(segs, live())
}

// rewindMapping undoes one segment_map / segment_unmap on the start segments (walking backwards): a mapping
// shrinks or removes the range it extended, an unmapping restores its bytes.
func (r *Recording) rewindMapping(segs map[uint64]startSeg, e *snapshot.TraceEntry) {
	end := e.Addr + uint64(e.Size)
	for a, s := range segs {
		sEnd := a + uint64(s.size)
		if e.Action == snapshot.ActionSegmentMap && e.Addr >= a && end <= sEnd {
			switch {
			case e.Addr == a && end == sEnd:
				delete(segs, a)
			case end == sEnd:
				s.size -= e.Size
				segs[a] = s
			case e.Addr == a:
				delete(segs, a)
				s.size -= e.Size
				segs[end] = s
			}
			return
		}
		if e.Action == snapshot.ActionSegmentUnmap && sEnd == e.Addr {
			s.size += e.Size
			segs[a] = s
			return
		}
	}
	if e.Action == snapshot.ActionSegmentUnmap {
		segs[e.Addr] = startSeg{size: e.Size, stream: r.stream(e), pool: r.pool(e), small: e.Size%largeBuffer != 0, freedAt: -1}
	}
}

// placeStart turns the rebuilt start state into seed segments, each with the live allocations inside it.
func (r *Recording) placeStart(segs map[uint64]startSeg, live map[uint64]seedBlock) {
	for _, a := range slices.Sorted(maps.Keys(segs)) {
		s := segs[a]
		r.initial = append(r.initial, seedSegment{addr: a, size: s.size, stream: s.stream, pool: s.pool, small: s.small})
	}
	outside := 0
	for _, b := range live {
		i, found := slices.BinarySearchFunc(r.initial, b.addr, func(s seedSegment, a uint64) int { return cmp.Compare(s.addr, a) })
		if !found {
			i--
		}
		if i < 0 || b.addr >= r.initial[i].addr+uint64(r.initial[i].size) {
			outside++
			if b.slot >= 0 {
				r.ignoreSlots = append(r.ignoreSlots, b.slot)
			}
			continue
		}
		r.initial[i].live = append(r.initial[i].live, b)
	}
	// Sorted here, once, because the replays that share this recording only read it.
	for i := range r.initial {
		slices.SortFunc(r.initial[i].live, func(x, y seedBlock) int { return cmp.Compare(x.addr, y.addr) })
	}
	if outside > 0 {
		r.Issues = addIssue(r.Issues, -1, "%d allocations live at the start lie outside every segment the trace implies; their frees are skipped", outside)
	}
}

// finish turns the forward pass's reserved memory, counted from 0, into bytes now that InitialReserved is known
// (recorded reserved, its peak, the created segments, the capacity an oom implies) and decides which runs of
// segment frees were empty_cache calls.
func (r *Recording) finish(opt RecordOptions, f *forwardPass) {
	base := r.InitialReserved
	r.PeakReserved, r.FinalReserved = base+f.relPeak, base+f.relFinal
	for i := range r.Created {
		r.Created[i].Reserved += base
	}
	capacity := opt.Capacity
	if f.firstOOM >= 0 {
		// reserved at the oom event + what the device still had free.
		r.Capacity = base + f.relOOM + snapshot.ExtraOf(r.extras, &r.Trace[f.firstOOM]).DeviceFree
		capacity = r.Capacity
	}
	gc := opt.Settings.GarbageCollectionThreshold > 0 && opt.Settings.PerProcessMemoryFraction > 0 && opt.Settings.PerProcessMemoryFraction < 1
	for _, run := range f.runs {
		if !r.retryRun(run, base+run.rel, capacity, gc) {
			r.EmptyCaches = append(r.EmptyCaches, int(run.i))
		}
	}
	for _, is := range f.issues {
		r.Issues = addIssue(r.Issues, is.Index, "%s", is.Reason)
		r.Partial = true
	}
}

// retryRun decides whether the run of segment frees starting at i is the allocator's own retry path (or GC):
// it is when the run is directly followed by an oom, or by a new segment that would not have fit without it.
func (r *Recording) retryRun(run segRun, reserved, capacity int64, gc bool) bool {
	trace := r.Trace
	j := int(run.next)
	if j == len(trace) {
		return false
	}
	switch trace[j].Action {
	case snapshot.ActionOOM:
		return true
	case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentMap:
		return gc || (capacity > 0 && reserved+trace[j].Size > capacity)
	}
	return false
}

func kindOf(a snapshot.Action) EventKind {
	switch a {
	case snapshot.ActionSegmentAlloc:
		return SegmentAlloc
	case snapshot.ActionSegmentFree:
		return SegmentFree
	case snapshot.ActionSegmentMap:
		return SegmentMap
	case snapshot.ActionSegmentUnmap:
		return SegmentUnmap
	}
	return 0
}

// segDelta is what one event adds to reserved; a segment event without a positive size adds nothing (Record
// reports it).
func segDelta(e *snapshot.TraceEntry) int64 {
	if e.Size <= 0 {
		return 0
	}
	switch e.Action {
	case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentMap:
		return e.Size
	case snapshot.ActionSegmentFree, snapshot.ActionSegmentUnmap:
		return -e.Size
	}
	return 0
}

// byNumber returns the addresses of of in the order of their numbers.
func byNumber(of *addrtab.Table[int32]) []uint64 {
	out := make([]uint64, of.Len())
	of.Each(func(addr uint64, k int32) { out[k] = addr })
	return out
}
