package replay

import (
	"fmt"
	"slices"
	"sort"

	"github.com/memscan/memscan/snapshot"
)

// phantomFree reports whether trace event j frees an address that no segment ever covered, and warns about it
// with the event's index. The memory viewer counts any free whose alloc is not in the trace as an allocation
// from before the trace window, live from the start; that is right for a ring buffer that dropped the alloc,
// but such a block lay in a segment, which the final state or the trace's segment events still show. A free
// outside every segment is of memory that never existed, and counting it would add phantom bytes to the peak.
func (t *Trace) phantomFree(j int, e *snapshot.TraceEntry) bool {
	if t.spans == nil {
		t.spans = segmentSpans(t.snap, t.Device, t.Events)
	}
	i := sort.Search(len(t.spans), func(k int) bool { return t.spans[k][0] > e.Addr }) - 1
	if i >= 0 && e.Addr < t.spans[i][1] {
		return false
	}
	if t.warned("free-unknown") {
		return true
	}
	t.warn("free-unknown", fmt.Sprintf("device %d trace event %d: %s of 0x%x (%d bytes), an address the trace never allocated and no segment covers; ignored",
		t.Device, j, t.snap.ActionName(e), e.Addr, e.Size))
	return true
}

// segmentSpans returns the address ranges of device dev's segments in the final state and in the trace's
// segment events, merged into sorted disjoint [start, end) spans. It is never nil.
func segmentSpans(s *snapshot.Snapshot, dev int, trace []snapshot.TraceEntry) [][2]uint64 {
	spans := [][2]uint64{}
	add := func(addr uint64, size int64) {
		if size > 0 && addr+uint64(size) > addr {
			spans = append(spans, [2]uint64{addr, addr + uint64(size)})
		}
	}
	for i := range s.Segments {
		if seg := &s.Segments[i]; seg.Device == dev {
			add(seg.Address, seg.TotalSize)
		}
	}
	for k := range trace {
		switch e := &trace[k]; e.Action {
		case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentFree, snapshot.ActionSegmentMap, snapshot.ActionSegmentUnmap:
			add(e.Addr, e.Size)
		}
	}
	slices.SortFunc(spans, func(a, b [2]uint64) int {
		switch {
		case a[0] < b[0]:
			return -1
		case a[0] > b[0]:
			return 1
		}
		return 0
	})
	merged := spans[:0]
	for _, sp := range spans {
		if n := len(merged); n > 0 && sp[0] <= merged[n-1][1] {
			merged[n-1][1] = max(merged[n-1][1], sp[1])
			continue
		}
		merged = append(merged, sp)
	}
	return merged
}
