// Package snapbuild builds allocator snapshots in memory, segment by segment and event by event: the fixtures of
// memscan's tests and the training loops memscan-gen writes.
package snapbuild

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/memscan/memscan/snapshot"
)

// SnapBuilder assembles allocator snapshots in Go for tests: segments with consistent sizes and block addresses,
// and device traces. Segment addresses are handed out from a counter so blocks never overlap.
type SnapBuilder struct {
	S      *snapshot.Snapshot
	next   uint64
	tables *snapshot.TraceTables
}

// NewSnap starts an empty snapshot with devices device traces (all empty).
func NewSnap(devices int) *SnapBuilder {
	return &SnapBuilder{S: &snapshot.Snapshot{DeviceTraces: make([][]snapshot.TraceEntry, devices), TorchFormat: "2.1+"}, next: 0x7f0000000000}
}

// BlockSpec describes one block of a built segment.
type BlockSpec struct {
	Size, Requested int64
	State           snapshot.BlockState
	Stack           *snapshot.Stack
}

// Live is an active_allocated block of size bytes holding requested bytes.
func Live(size, requested int64, st *snapshot.Stack) BlockSpec {
	return BlockSpec{Size: size, Requested: requested, State: snapshot.BlockActiveAllocated, Stack: st}
}

// Pending is an active_pending_free block.
func Pending(size, requested int64, st *snapshot.Stack) BlockSpec {
	return BlockSpec{Size: size, Requested: requested, State: snapshot.BlockActivePendingFree, Stack: st}
}

// Free is an inactive (cached free) block.
func Free(size int64) BlockSpec { return BlockSpec{Size: size, State: snapshot.BlockInactive} }

// SegOpts are the optional segment attributes.
type SegOpts struct {
	Device     int
	Stream     uint64
	Type       snapshot.SegmentType // default large
	Pool       snapshot.PoolID
	Expandable bool
}

// Segment appends a segment made of blocks; total, allocated, active and requested sizes and block addresses are
// derived from the blocks, as a consistent allocator would record them. It returns the segment address.
func (b *SnapBuilder) Segment(o SegOpts, blocks ...BlockSpec) uint64 {
	if o.Type == "" {
		o.Type = snapshot.SegmentLarge
	}
	seg := snapshot.Segment{Device: o.Device, Address: b.next, Stream: o.Stream, Type: o.Type, Pool: o.Pool, IsExpandable: o.Expandable}
	addr := b.next
	for _, bs := range blocks {
		seg.Blocks = append(seg.Blocks, snapshot.Block{Address: addr, Size: bs.Size, RequestedSize: bs.Requested, State: bs.State, Stack: bs.Stack})
		addr += uint64(bs.Size)
		seg.TotalSize += bs.Size
		if bs.State == snapshot.BlockActiveAllocated {
			seg.AllocatedSize += bs.Size
		}
		if bs.State.Active() {
			seg.ActiveSize += bs.Size
			seg.RequestedSize += bs.Requested
		}
	}
	b.S.Segments = append(b.S.Segments, seg)
	// Leave a gap so segments never touch; round to 2 MiB like the allocator.
	b.next = (addr + 4<<20) &^ (2<<20 - 1)
	return seg.Address
}

// BlockAddr returns the address of block j of segment i.
func (b *SnapBuilder) BlockAddr(i, j int) uint64 { return b.S.Segments[i].Blocks[j].Address }

// Entry is a trace entry as a test writes it: its stack, rarely-set fields and stream themselves, which Event adds
// to the snapshot's tables (the TraceEntry's own Stack, Extra and Stream are ignored).
type Entry struct {
	snapshot.TraceEntry
	Stack  *snapshot.Stack
	Extra  snapshot.TraceExtra
	Stream uint64
}

// Event appends trace entries to a device's trace, numbering times 1000, 1001, ... when they have none.
func (b *SnapBuilder) Event(dev int, es ...Entry) {
	if b.tables == nil {
		b.tables = snapshot.NewTraceTables(b.S)
	}
	for _, x := range es {
		e := x.TraceEntry
		if !e.HasTime {
			e.TimeUS, e.HasTime = int64(1000+len(b.S.DeviceTraces[dev])), true
		}
		e.Stack, e.Extra, e.Stream = b.tables.Stack(x.Stack), b.tables.Extra(x.Extra), b.tables.Stream(x.Stream)
		b.S.DeviceTraces[dev] = append(b.S.DeviceTraces[dev], e)
	}
}

// Ev builds a trace entry.
func Ev(a snapshot.Action, addr uint64, size int64, st *snapshot.Stack) Entry {
	return Entry{TraceEntry: snapshot.TraceEntry{Action: a, Addr: addr, Size: size}, Stack: st}
}

var frameSpec = regexp.MustCompile(`^(.*?):(\d+):(.*)$`)

// Stack builds a stack from "file:line:function" strings, innermost first. The first ":<digits>:" separates the
// parts, so Windows drive letters and C++ names with "::" survive.
func Stack(frames ...string) *snapshot.Stack {
	st := &snapshot.Stack{}
	for _, f := range frames {
		m := frameSpec.FindStringSubmatch(f)
		if m == nil {
			panic(fmt.Sprintf("snapbuild.Stack: %q is not file:line:function", f))
		}
		line, _ := strconv.Atoi(m[2])
		st.Frames = append(st.Frames, snapshot.Frame{Filename: m[1], Line: line, Name: m[3]})
	}
	return st
}

// ReplayRules builds one device whose trace exercises every rule of the trace replay, with the stacks given to
// its five allocations: X0 (1000 B, live in the final state, never allocated in the trace), X1 (2000 B, allocated
// at event 1 and live at the end), Y (3000 B at 2, free requested at 3 and completed at 4), Z (700 B, allocated
// before the trace, freed at 5) and W (400 B at 6, free requested at 7 and never completed), after a segment_alloc
// of the one 8192-byte segment at 0 and before an oom at 8. It returns the builder and the segment's address.
func ReplayRules(x0, x1, y, z, w *snapshot.Stack) (*SnapBuilder, uint64) {
	b := NewSnap(1)
	seg := b.Segment(SegOpts{}, Live(1024, 1000, x0), Live(2048, 2000, x1), Pending(512, 400, w), Free(4608))
	ax1, aw := b.BlockAddr(0, 1), b.BlockAddr(0, 2)
	b.Event(0,
		Ev(snapshot.ActionSegmentAlloc, seg, 8192, nil),  // 0
		Ev(snapshot.ActionAlloc, ax1, 2000, x1),          // 1
		Ev(snapshot.ActionAlloc, aw, 3000, y),            // 2: Y, at W's address before W
		Ev(snapshot.ActionFreeRequested, aw, 3000, y),    // 3
		Ev(snapshot.ActionFreeCompleted, aw, 3000, y),    // 4
		Ev(snapshot.ActionFreeCompleted, aw+512, 700, z), // 5: allocated before the trace
		Ev(snapshot.ActionAlloc, aw, 400, w),             // 6
		Ev(snapshot.ActionFreeRequested, aw, 400, w),     // 7: never completed (record_stream)
		Entry{TraceEntry: snapshot.TraceEntry{Action: snapshot.ActionOOM, Size: 100000}, Extra: snapshot.TraceExtra{DeviceFree: 50}, Stack: y}, // 8
	)
	return b, seg
}
