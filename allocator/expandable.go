package allocator

// Expandable segments (expandable_segments:True, torch ≥ 2.1): each pool and stream grows one virtual range
// by mapping pages (2 MiB in a small pool, the large segment size in a large pool) instead of cudaMalloc'ing
// segments; reserved memory is the mapped bytes.

// pageSize is the mapping unit of a pool's expandable ranges.
func (a *Allocator) pageSize(p *pool) int64 {
	if p.small {
		return smallBuffer
	}
	return a.cfg.largeSegment()
}

// allocExpandable is try_allocate_expandable_block: find free and unmapped address space for s bytes, map the
// missing pages, and take the resulting block out of the pool; nil when a mapping does not fit the capacity.
func (a *Allocator) allocExpandable(p *pool, s int64, stream uint64) *block {
	c := a.findExpandable(p, s, stream)
	if c == nil || (!c.mapped && !a.mapBlock(c, min(c.size, s))) {
		return nil
	}
	for c.size < s {
		// c is free and mapped, the unmapped block after it supplies the rest; mapping merges c into it.
		n := c.next
		if n == nil || n.mapped || !a.mapBlock(n, min(s-c.size, n.size)) {
			return nil
		}
		c = n
	}
	p.blocks.remove(c)
	return c
}

// allocatable reports whether b could become part of a new allocation (free, mapped or not).
func allocatable(b *block) bool { return b != nil && !b.allocated }

// findExpandable is find_expandable_block: the first unmapped block of the pool and stream (by address), or
// the free block just before it, from which consecutive free or unmapped blocks add up to s; a new virtual
// range of 1.125 × the device memory when none has room; nil when even a new range is too small.
func (a *Allocator) findExpandable(p *pool, s int64, stream uint64) *block {
	for c := p.unmapped.lowerBound(key{stream: stream}); c != nil && c.stream == stream; c = p.unmapped.next(c) {
		start := c
		if allocatable(c.prev) {
			start = c.prev
		}
		var room int64
		for b := start; room < s && allocatable(b); b = b.next {
			room += b.size
		}
		if room >= s {
			return start
		}
	}
	page := a.pageSize(p)
	space := a.total + a.total/8
	virt := (space + page - 1) / page * page
	if s > virt {
		return nil
	}
	first := min((s+page-1)/page*page, virt)
	addr := a.segmentAddress(SegmentMap, first, virt)
	seg := &segment{addr: addr, virt: virt, page: page, stream: stream, pool: p, expandable: true}
	a.addSegment(seg)
	b := a.newBlock(addr, virt, stream, p, seg)
	b.mapped = false
	p.unmapped.insert(b)
	return b
}

// mapBlock maps whole pages at the start of the unmapped block b to cover size bytes, merges them with free
// neighbours and puts the result in the pool; false when the pages do not fit the capacity.
func (a *Allocator) mapBlock(b *block, size int64) bool {
	seg, p := b.seg, b.pool
	bytes := min((size+seg.page-1)/seg.page*seg.page, b.size)
	if !a.fits(bytes) {
		return false
	}
	p.unmapped.remove(b)
	b.mapped = true
	if bytes < b.size {
		rest := a.newBlock(b.addr+uint64(bytes), b.size-bytes, b.stream, p, seg)
		rest.mapped = false
		rest.prev, rest.next = b, b.next
		if b.next != nil {
			b.next.prev = rest
		}
		b.next = rest
		p.unmapped.insert(rest)
		b.size = bytes
	}
	addr := b.addr
	a.tryMerge(b, b.prev)
	a.tryMerge(b, b.next)
	a.insertFree(b)
	a.grow(seg, bytes, SegmentMap, addr)
	return true
}

// unmapBlock unmaps the pages lying entirely inside the free expandable block b; the partial pages at its ends
// stay mapped as free blocks.
func (a *Allocator) unmapBlock(b *block) {
	seg, p := b.seg, b.pool
	off := int64(b.addr - seg.addr)
	begin := (off + seg.page - 1) / seg.page * seg.page
	end := (off + b.size) / seg.page * seg.page
	if end <= begin {
		return
	}
	p.blocks.remove(b)
	if before := begin - off; before > 0 {
		f := a.newBlock(b.addr, before, b.stream, p, seg)
		f.prev, f.next = b.prev, b
		if b.prev != nil {
			b.prev.next = f
		}
		b.prev = f
		a.insertFree(f)
	}
	if after := off + b.size - end; after > 0 {
		f := a.newBlock(seg.addr+uint64(end), after, b.stream, p, seg)
		f.prev, f.next = b, b.next
		if b.next != nil {
			b.next.prev = f
		}
		b.next = f
		a.insertFree(f)
	}
	b.addr, b.size, b.mapped = seg.addr+uint64(begin), end-begin, false
	addr, bytes := b.addr, b.size
	a.tryMerge(b, b.prev)
	a.tryMerge(b, b.next)
	p.unmapped.insert(b)
	a.shrink(seg, bytes, SegmentUnmap, addr)
}

// releaseExpandable drops a range whose whole virtual space is unmapped (b is then its only block).
func (a *Allocator) releaseExpandable(b *block) {
	if b.mapped || b.size != b.seg.virt {
		return
	}
	b.pool.unmapped.remove(b)
	a.segments--
	b.pool.segments--
}
