package detect

import (
	"slices"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/snapshot"
)

// segment is one cudaMalloc (or one expandable-segment mapping) of a device, reserved after events start..end−1.
type segment struct {
	addr       uint64
	size       int64
	start, end int
}

func (s *segment) contains(addr uint64) bool { return s.addr <= addr && addr < s.addr+uint64(s.size) }

// segments rebuilds the device's segments over time from its segment events and the final state: segments the
// trace never created were there before it began.
func (d *Device) segments(s *snapshot.Snapshot) []segment {
	n := len(d.Trace)
	var out []segment
	open := map[uint64]int{}
	for j := range d.Trace {
		e := &d.Trace[j]
		switch e.Action {
		case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentMap:
			open[e.Addr] = len(out)
			out = append(out, segment{addr: e.Addr, size: e.Size, start: j, end: n})
		case snapshot.ActionSegmentFree, snapshot.ActionSegmentUnmap:
			if i, ok := open[e.Addr]; ok {
				out[i].end = j
				delete(open, e.Addr)
			} else {
				out = append(out, segment{addr: e.Addr, size: e.Size, start: -1, end: j})
			}
		}
	}
	for i := range s.Segments {
		seg := &s.Segments[i]
		if seg.Device != d.Device {
			continue
		}
		covered := false
		for _, k := range open {
			if seg.Address <= out[k].addr && out[k].addr < seg.Address+uint64(seg.TotalSize) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, segment{addr: seg.Address, size: seg.TotalSize, start: -1, end: n})
		}
	}
	slices.SortFunc(out, func(a, b segment) int {
		if a.addr != b.addr {
			if a.addr < b.addr {
				return -1
			}
			return 1
		}
		return a.start - b.start
	})
	return out
}

// segmentOf returns the index of the segment holding addr while event j is live, −1 when none does (a trace that
// misses segment events).
func segmentOf(segs []segment, addr uint64, j int) int {
	hi, _ := slices.BinarySearchFunc(segs, addr, func(s segment, a uint64) int {
		if s.addr <= a {
			return -1
		}
		return 1
	})
	// Segments at lower addresses may still contain addr; a reused range has several, told apart by time.
	for i, steps := hi-1, 0; i >= 0 && steps < 256; i, steps = i-1, steps+1 {
		if segs[i].contains(addr) && segs[i].start <= j && j < segs[i].end {
			return i
		}
	}
	return -1
}

// roundBlock is the allocator's block size for a request: 512-byte granularity.
func roundBlock(n int64) int64 { return (n + 511) &^ 511 }

// smallSegment is the small pool's segment size: requests up to 1 MiB share 2 MiB segments.
const smallSegment = 2 << 20

// cacheState describes the cache after one event: its segments and the holes between live blocks.
type cacheState struct {
	segments, mostlyFree int
	reserved, live, free int64
	largestFree          int64
	smallPoolBytes       int64 // reserved in 2 MiB small-pool segments
	largeLiveRounded     int64 // live blocks outside the small pool, at block granularity
	freeInPartlyUsed     int64 // free bytes in segments that also hold live blocks (cannot be released)
	freeInEmpty          int64 // bytes of segments holding nothing
}

// usedAt groups the blocks live after event j by the segment (index into segs) that holds them.
func (d *Device) usedAt(segs []segment, j int) map[int][]Block {
	used := map[int][]Block{}
	for _, b := range d.live(j) {
		if k := segmentOf(segs, b.Addr, j); k >= 0 {
			used[k] = append(used[k], b)
		}
	}
	return used
}

// cacheAt rebuilds the cache's layout after event j from the segments and the live blocks.
func (d *Device) cacheAt(segs []segment, j int) cacheState {
	return cacheOf(segs, j, d.usedAt(segs, j))
}

// cacheOf is cacheAt from the live blocks already grouped by usedAt(segs, j); it sorts each group by address.
func cacheOf(segs []segment, j int, used map[int][]Block) cacheState {
	var cs cacheState
	for k := range segs {
		sg := &segs[k]
		if !(sg.start <= j && j < sg.end) {
			continue
		}
		cs.segments++
		cs.reserved += sg.size
		blocks := used[k]
		slices.SortFunc(blocks, func(a, b Block) int {
			if a.Addr < b.Addr {
				return -1
			}
			if a.Addr > b.Addr {
				return 1
			}
			return 0
		})
		var inUse int64
		cursor := sg.addr
		for _, b := range blocks {
			if b.Addr > cursor {
				cs.largestFree = max(cs.largestFree, int64(b.Addr-cursor))
			}
			sz := roundBlock(b.Size)
			inUse += sz
			cursor = max(cursor, b.Addr+uint64(sz))
		}
		if end := sg.addr + uint64(sg.size); end > cursor {
			cs.largestFree = max(cs.largestFree, int64(end-cursor))
		}
		free := max(sg.size-inUse, 0)
		cs.live += inUse
		cs.free += free
		if 2*free >= sg.size {
			cs.mostlyFree++
		}
		switch {
		case len(blocks) == 0:
			cs.freeInEmpty += sg.size
		default:
			cs.freeInPartlyUsed += free
		}
		if sg.size == smallSegment {
			cs.smallPoolBytes += sg.size
		} else {
			cs.largeLiveRounded += inUse
		}
	}
	return cs
}

// pinnedBy sums, by category, the live blocks (grouped by usedAt) that sit in segments also holding at least
// smallSegment free: the allocations that keep the cache's free memory in pieces.
func pinnedBy(segs []segment, used map[int][]Block) []findings.Share {
	out := map[string]*findings.Share{}
	for k, blocks := range used {
		var inUse int64
		for _, b := range blocks {
			inUse += roundBlock(b.Size)
		}
		if segs[k].size-inUse < smallSegment {
			continue
		}
		for _, b := range blocks {
			if b.Attr != nil {
				s := out[b.Attr.Category]
				if s == nil {
					s = &findings.Share{Name: b.Attr.Category}
					out[b.Attr.Category] = s
				}
				s.Bytes += b.Size
				s.Count++
			}
		}
	}
	return sorted(out, 0)
}
