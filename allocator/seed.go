package allocator

// seedBlock is an allocation that was live before a replay began.
type seedBlock struct {
	id        uint64
	addr      uint64
	size      int64
	requested int64
	freedAt   int   // the trace event that frees it, −1 when it is still live at the end
	slot      int32 // its address's slot in the recording (Recording.slot), −1 when the trace never names it
}

// seedSegment is a segment that existed before a replay began, with the allocations live in it.
type seedSegment struct {
	addr   uint64
	size   int64
	stream uint64
	pool   PoolID
	small  bool
	live   []seedBlock
}

// seed installs a segment that predates the replay: its live blocks (sorted by address) at their addresses and
// free blocks in the gaps. It records no event (the segment was not created by the replay) but counts as reserved.
// Blocks that overlap an earlier one are dropped and returned; place receives the others with their blocks (the
// caller keeps them). s is only read: replays of one recording run side by side and share it.
func (a *Allocator) seed(s seedSegment, place func(seedBlock, *block)) (dropped []seedBlock) {
	var p *pool
	if s.small {
		p = a.poolFor(smallSize, s.pool)
	} else {
		p = a.poolFor(smallSize+1, s.pool)
	}
	seg := &segment{addr: s.addr, size: s.size, stream: s.stream, pool: p}
	a.addSegment(seg)
	a.lowest = min(a.lowest, s.addr)
	a.reserved += s.size
	a.emptyBytes += s.size
	a.peak = max(a.peak, a.reserved)
	end := s.addr + uint64(s.size)
	var last *block
	cur := s.addr
	link := func(b *block) {
		b.prev = last
		if last != nil {
			last.next = b
		}
		last = b
	}
	for _, lb := range s.live {
		if lb.addr < cur || lb.addr >= end {
			dropped = append(dropped, lb)
			continue
		}
		if lb.addr > cur {
			f := a.newBlock(cur, int64(lb.addr-cur), s.stream, p, seg)
			link(f)
			a.insertFree(f)
		}
		size := min(lb.size, int64(end-lb.addr))
		b := a.newBlock(lb.addr, size, s.stream, p, seg)
		b.allocated, b.requested = true, min(lb.requested, size)
		link(b)
		if seg.allocated == 0 {
			a.emptyBytes -= seg.size
		}
		seg.allocated++
		a.allocated += b.size
		a.requested += b.requested
		place(lb, b)
		cur = lb.addr + uint64(size)
	}
	if cur < end {
		f := a.newBlock(cur, int64(end-cur), s.stream, p, seg)
		link(f)
		a.insertFree(f)
	}
	return dropped
}
