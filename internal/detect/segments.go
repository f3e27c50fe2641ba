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
// trace never created were there before it began. It is computed once per device.
func (d *Device) segments(s *snapshot.Snapshot) []segment {
	if d.segs == nil {
		d.segs = buildSegments(s, d.Device, d.Trace)
	}
	return d.segs
}

func buildSegments(s *snapshot.Snapshot, dev int, trace []snapshot.TraceEntry) []segment {
	n := len(trace)
	out := []segment{}
	open := map[uint64]int{}
	for j := range trace {
		e := &trace[j]
		switch e.Action {
		case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentMap:
			open[e.Addr] = len(out)
			out = append(out, segment{addr: e.Addr, size: e.Size, start: j, end: n})
		case snapshot.ActionSegmentFree, snapshot.ActionSegmentUnmap:
			if i, ok := open[e.Addr]; ok {
				out[i].end = j
				delete(open, e.Addr)
			} else {
				out = append(out, segment{addr: e.Addr, size: e.Size, start: -1, end: n})
			}
		}
	}
	// A final-state segment is new unless a segment the trace left open starts inside it: the open segments'
	// addresses, sorted, answer that by binary search.
	openAddrs := make([]uint64, 0, len(open))
	for _, k := range open {
		openAddrs = append(openAddrs, out[k].addr)
	}
	slices.Sort(openAddrs)
	for i := range s.Segments {
		seg := &s.Segments[i]
		if seg.Device != dev {
			continue
		}
		k, _ := slices.BinarySearch(openAddrs, seg.Address)
		if covered := k < len(openAddrs) && openAddrs[k] < seg.Address+uint64(seg.TotalSize); !covered {
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

// blockPlaces returns every element's address and the segment holding it when it was allocated (segmentOf at its
// start, −1 when none), computed once per device: the cache is rebuilt at many events, each reading every block.
func (d *Device) blockPlaces(segs []segment) (addrs []uint64, seg []int32) {
	if d.addrs == nil {
		d.addrs, d.seg = d.Addrs(), make([]int32, len(d.Elements))
		for i := range d.Elements {
			d.seg[i] = int32(segmentOf(segs, d.addrs[i], max(int(d.Elements[i].Start), 0)))
		}
	}
	return d.addrs, d.seg
}

// placeAt is the segment holding a block at addr while event j is live: home, the one that held it when allocated
// (blockPlaces), while that is still there, else the one segmentOf finds (−1: none).
func placeAt(segs []segment, addr uint64, home int32, j int) int {
	if k := int(home); k >= 0 && segs[k].start <= j && j < segs[k].end {
		return k
	}
	return segmentOf(segs, addr, j)
}

// segmentOf returns the index of the segment holding addr while event j is live, −1 when none does (a trace that
// misses segment events).
func segmentOf(segs []segment, addr uint64, j int) int {
	// The first segment above addr, by a search written out: slices.BinarySearchFunc called its comparison,
	// with a copy of the segment, at every step, which was most of blockPlaces' time (a call per element).
	lo, hi := 0, len(segs)
	for lo < hi {
		if m := int(uint(lo+hi) >> 1); segs[m].addr <= addr {
			lo = m + 1
		} else {
			hi = m
		}
	}
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

// liveBlock is a block live at some event: its address, size and element index.
type liveBlock struct {
	addr uint64
	size int64
	i    int
}

// usedAt groups the blocks live after event j by the segment (index into segs) that holds them: the one that held
// them when allocated while it is still there, else the one segmentOf finds.
func (d *Device) usedAt(segs []segment, j int) map[int][]liveBlock {
	addrs, seg := d.blockPlaces(segs)
	used := map[int][]liveBlock{}
	for i := range d.Elements {
		el := &d.Elements[i]
		if !(int(el.Start) <= j && j < int(el.End)) {
			continue
		}
		if k := placeAt(segs, addrs[i], seg[i], j); k >= 0 {
			used[k] = append(used[k], liveBlock{addrs[i], el.Size, i})
		}
	}
	return used
}

// cacheAt rebuilds the cache's layout after event j from the segments and the live blocks.
func (d *Device) cacheAt(segs []segment, j int) cacheState {
	return cacheOf(segs, j, d.usedAt(segs, j))
}

// cacheOf is cacheAt from the live blocks already grouped by usedAt(segs, j); it sorts each group by address.
func cacheOf(segs []segment, j int, used map[int][]liveBlock) cacheState {
	var cs cacheState
	for k := range segs {
		sg := &segs[k]
		if !(sg.start <= j && j < sg.end) {
			continue
		}
		cs.segments++
		cs.reserved += sg.size
		blocks := used[k]
		inUse, largest := layoutOf(sg, blocks)
		cs.largestFree = max(cs.largestFree, largest)
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

// layoutOf sorts the live blocks of segment sg by address and returns the bytes they take at block granularity and
// the largest free range between them and the segment's ends.
func layoutOf(sg *segment, blocks []liveBlock) (inUse, largestFree int64) {
	slices.SortFunc(blocks, func(a, b liveBlock) int {
		if a.addr < b.addr {
			return -1
		}
		if a.addr > b.addr {
			return 1
		}
		return 0
	})
	cursor := sg.addr
	for _, b := range blocks {
		if b.addr > cursor {
			largestFree = max(largestFree, int64(b.addr-cursor))
		}
		sz := roundBlock(b.size)
		inUse += sz
		cursor = max(cursor, b.addr+uint64(sz))
	}
	if end := sg.addr + uint64(sg.size); end > cursor {
		largestFree = max(largestFree, int64(end-cursor))
	}
	return inUse, largestFree
}

// pinnedBy sums, by category, the live blocks (grouped by usedAt) that sit in segments also holding at least
// smallSegment free: the allocations that keep the cache's free memory in pieces.
func (d *Device) pinnedBy(segs []segment, used map[int][]liveBlock) []findings.Share {
	out := map[string]*findings.Share{}
	for k, blocks := range used {
		var inUse int64
		for _, b := range blocks {
			inUse += roundBlock(b.size)
		}
		if segs[k].size-inUse < smallSegment {
			continue
		}
		for _, b := range blocks {
			cat := d.Attr(b.i).Category
			s := out[cat]
			if s == nil {
				s = &findings.Share{Name: cat}
				out[cat] = s
			}
			s.Bytes += b.size
			s.Count++
		}
	}
	return sorted(out, 0)
}

// cacheSweep rebuilds the cache's free ranges after events taken in decreasing order, applying only the blocks
// allocated or freed in between and re-reading only the segments they touched: the fragmentation detector rebuilds
// the cache before dozens of cudaMallocs, and reading every block for each made it quadratic on a growing trace.
type cacheSweep struct {
	d     *Device
	segs  []segment
	addrs []uint64
	seg   []int32
	at    int // the state is the cache after event at; len(trace) before the first move
	// members are the live elements per segment (in no order); where is each element's segment while live
	// (−1: in none, −2: not live) and slot its index in members[where].
	members     [][]int32
	where, slot []int32
	// largest is each segment's largest free range, up to date unless dirty.
	largest []int64
	dirty   []bool
	// starts lists the elements allocated in the trace (ascending start); byEnd the elements freed in it, by the
	// event that frees them: byEnd[endOff[j]:endOff[j+1]] end at event j.
	starts []int32
	byEnd  []int32
	endOff []int32
	buf    []liveBlock
}

func newCacheSweep(d *Device, segs []segment) *cacheSweep {
	n := len(d.Trace)
	s := &cacheSweep{d: d, segs: segs, at: n, members: make([][]int32, len(segs)), largest: make([]int64, len(segs)), dirty: make([]bool, len(segs))}
	s.addrs, s.seg = d.blockPlaces(segs)
	for k := range s.dirty {
		s.dirty[k] = true // an empty segment is one free range: read every segment once
	}
	s.where, s.slot = make([]int32, len(d.Elements)), make([]int32, len(d.Elements))
	s.starts = make([]int32, 0, len(d.Elements))
	// A counting sort by end event that fills each bucket from its end, elements in descending order: endOff
	// ends up holding the buckets' starts (in ascending element order) without a second array of one int32 per
	// event, which set the analysis's peak heap.
	s.endOff = make([]int32, n+1)
	for i := range d.Elements {
		el := &d.Elements[i]
		s.where[i] = -2
		if el.Start >= 0 {
			s.starts = append(s.starts, int32(i))
		}
		if int(el.End) < n {
			s.endOff[el.End]++
		}
	}
	for j := 1; j < len(s.endOff); j++ {
		s.endOff[j] += s.endOff[j-1]
	}
	s.byEnd = make([]int32, s.endOff[n])
	for i := len(d.Elements) - 1; i >= 0; i-- {
		if e := d.Elements[i].End; int(e) < n {
			s.endOff[e]--
			s.byEnd[s.endOff[e]] = int32(i)
		}
	}
	return s
}

// moveTo brings the state to the cache after event j (j < s.at).
func (s *cacheSweep) moveTo(j int) {
	els := s.d.Elements
	if s.at == len(s.d.Trace) {
		for i := range els {
			if int(els[i].Start) <= j && j < int(els[i].End) {
				s.add(i, j)
			}
		}
		s.at = j
		return
	}
	// Allocated after j: not live yet.
	lo, _ := slices.BinarySearchFunc(s.starts, j+1, func(i int32, t int) int { return int(els[i].Start) - t })
	for _, i := range s.starts[lo:] {
		if int(els[i].Start) > s.at {
			break
		}
		s.remove(int(i))
	}
	// Freed after j, allocated by then: live again.
	for _, i := range s.byEnd[s.endOff[j+1]:s.endOff[s.at+1]] {
		if int(els[i].Start) <= j {
			s.add(int(i), j)
		}
	}
	s.at = j
}

// add makes element i live at event j, in the segment usedAt would put it in.
func (s *cacheSweep) add(i, j int) {
	k := placeAt(s.segs, s.addrs[i], s.seg[i], j)
	s.where[i] = int32(k)
	if k >= 0 {
		s.slot[i] = int32(len(s.members[k]))
		s.members[k] = append(s.members[k], int32(i))
		s.dirty[k] = true
	}
}

func (s *cacheSweep) remove(i int) {
	k := s.where[i]
	s.where[i] = -2
	if k < 0 {
		return
	}
	m := s.members[k]
	last := m[len(m)-1]
	m[s.slot[i]] = last
	s.slot[last] = s.slot[i]
	s.members[k] = m[:len(m)-1]
	s.dirty[k] = true
}

// largestFreeAfter is cacheOf's largestFree for the cache after event j; calls come with decreasing j.
func (s *cacheSweep) largestFreeAfter(j int) int64 {
	s.moveTo(j)
	var best int64
	for k := range s.segs {
		sg := &s.segs[k]
		if !(sg.start <= j && j < sg.end) {
			continue
		}
		if s.dirty[k] {
			s.buf = s.blocks(k, s.buf[:0])
			_, s.largest[k] = layoutOf(sg, s.buf)
			s.dirty[k] = false
		}
		best = max(best, s.largest[k])
	}
	return best
}

// blocks appends segment k's live blocks to dst.
func (s *cacheSweep) blocks(k int, dst []liveBlock) []liveBlock {
	for _, i := range s.members[k] {
		dst = append(dst, liveBlock{s.addrs[i], s.d.Elements[i].Size, int(i)})
	}
	return dst
}

// used is usedAt(segs, j) for the current state (j the event moved to last).
func (s *cacheSweep) used() map[int][]liveBlock {
	out := map[int][]liveBlock{}
	for k := range s.segs {
		if sg := &s.segs[k]; len(s.members[k]) > 0 && sg.start <= s.at && s.at < sg.end {
			out[k] = s.blocks(k, nil)
		}
	}
	return out
}
