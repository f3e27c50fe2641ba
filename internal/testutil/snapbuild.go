package testutil

import (
	"fmt"
	"regexp"
	"strconv"

	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/snapshot"
)

// SnapBuilder assembles allocator snapshots in Go for tests: segments with consistent sizes and block addresses,
// and device traces. Segment addresses are handed out from a counter so blocks never overlap.
type SnapBuilder struct {
	S    *snapshot.Snapshot
	next uint64
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

// Event appends trace entries to a device's trace, numbering times 1000, 1001, ... when they have none.
func (b *SnapBuilder) Event(dev int, es ...snapshot.TraceEntry) {
	for _, e := range es {
		if !e.HasTime {
			e.TimeUS, e.HasTime = int64(1000+len(b.S.DeviceTraces[dev])), true
		}
		b.S.DeviceTraces[dev] = append(b.S.DeviceTraces[dev], e)
	}
}

// Ev builds a trace entry.
func Ev(a snapshot.Action, addr uint64, size int64, st *snapshot.Stack) snapshot.TraceEntry {
	return snapshot.TraceEntry{Action: a, Addr: addr, Size: size, Stack: st}
}

// Input wraps the snapshot as a decoded input named path.
func (b *SnapBuilder) Input(path string) *load.Input {
	return &load.Input{Path: path, Format: "pickle-v4", Snapshot: b.S}
}

var frameSpec = regexp.MustCompile(`^(.*?):(\d+):(.*)$`)

// Stack builds a stack from "file:line:function" strings, innermost first. The first ":<digits>:" separates the
// parts, so Windows drive letters and C++ names with "::" survive.
func Stack(frames ...string) *snapshot.Stack {
	st := &snapshot.Stack{}
	for _, f := range frames {
		m := frameSpec.FindStringSubmatch(f)
		if m == nil {
			panic(fmt.Sprintf("testutil.Stack: %q is not file:line:function", f))
		}
		line, _ := strconv.Atoi(m[2])
		st.Frames = append(st.Frames, snapshot.Frame{Filename: m[1], Line: line, Name: m[3]})
	}
	return st
}
