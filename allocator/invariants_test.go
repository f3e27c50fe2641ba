package allocator

import "fmt"

// checkInvariants verifies the model's structure: blocks tile each segment exactly with contiguous addresses, no
// two free neighbours of the same mapped state are left unmerged, every free block is in its pool's tree and every
// allocated one in the live map, and the counters equal what the blocks add up to (so reserved ≥ allocated).
func (a *Allocator) checkInvariants() error {
	segs := map[*segment]*block{}
	inTrees := 0
	note := func(b *block) { segs[b.seg] = b }
	for _, b := range a.live {
		if !b.allocated || b.inTree {
			return fmt.Errorf("live block 0x%x: allocated %v, in a tree %v", b.addr, b.allocated, b.inTree)
		}
		note(b)
	}
	for _, p := range a.pools() {
		for _, b := range p.blocks.appendAll(nil) {
			if b.allocated || !b.mapped || b.pool != p {
				return fmt.Errorf("pool block 0x%x: allocated %v mapped %v", b.addr, b.allocated, b.mapped)
			}
			note(b)
			inTrees++
		}
		for _, b := range p.unmapped.appendAll(nil) {
			if b.mapped || b.allocated {
				return fmt.Errorf("unmapped block 0x%x is mapped or allocated", b.addr)
			}
			note(b)
			inTrees++
		}
		if p.blocks.n+p.unmapped.n != len(p.blocks.appendAll(nil))+len(p.unmapped.appendAll(nil)) {
			return fmt.Errorf("tree counts disagree with their contents")
		}
	}
	var reserved, allocated, requested, empty int64
	walked := 0
	for seg, b := range segs {
		for b.prev != nil {
			b = b.prev
		}
		if b.addr != seg.addr {
			return fmt.Errorf("segment 0x%x starts with a block at 0x%x", seg.addr, b.addr)
		}
		var span, mapped int64
		live := 0
		for ; b != nil; b = b.next {
			walked++
			if b.seg != seg || b.addr != seg.addr+uint64(span) || b.size <= 0 {
				return fmt.Errorf("segment 0x%x: block 0x%x (size %d) does not follow at offset %d", seg.addr, b.addr, b.size, span)
			}
			if b.next != nil && b.next.prev != b {
				return fmt.Errorf("segment 0x%x: broken links at 0x%x", seg.addr, b.addr)
			}
			if b.next != nil && !b.allocated && !b.next.allocated && b.mapped == b.next.mapped {
				return fmt.Errorf("segment 0x%x: free neighbours 0x%x and 0x%x left unmerged", seg.addr, b.addr, b.next.addr)
			}
			if !b.allocated && !b.inTree {
				return fmt.Errorf("free block 0x%x is in no pool", b.addr)
			}
			span += b.size
			if b.mapped {
				mapped += b.size
			}
			if b.allocated {
				live++
				allocated += b.size
				requested += b.requested
			}
		}
		want := seg.size
		if seg.expandable {
			want = seg.virt
		}
		if span != want || mapped != seg.size {
			return fmt.Errorf("segment 0x%x: blocks span %d (mapped %d), segment %d (virtual %d)", seg.addr, span, mapped, seg.size, seg.virt)
		}
		if live != seg.allocated {
			return fmt.Errorf("segment 0x%x: %d live blocks, counted %d", seg.addr, live, seg.allocated)
		}
		reserved += seg.size
		if live == 0 {
			empty += seg.size
		}
	}
	if walked != inTrees+len(a.live) {
		return fmt.Errorf("%d blocks in segments, %d in pools and the live map", walked, inTrees+len(a.live))
	}
	if len(segs) != a.segments {
		return fmt.Errorf("%d segments hold blocks, counted %d", len(segs), a.segments)
	}
	if reserved != a.reserved || allocated != a.allocated || requested != a.requested || empty != a.emptyBytes {
		return fmt.Errorf("counters reserved %d allocated %d requested %d empty %d; blocks say %d, %d, %d, %d",
			a.reserved, a.allocated, a.requested, a.emptyBytes, reserved, allocated, requested, empty)
	}
	if a.reserved < a.allocated || a.allocated < a.requested || a.peak < a.reserved {
		return fmt.Errorf("reserved %d, allocated %d, requested %d, peak %d out of order", a.reserved, a.allocated, a.requested, a.peak)
	}
	return nil
}

// blockView is one block as a snapshot shows it.
type blockView struct {
	Addr      uint64
	Size      int64
	Allocated bool
}

// layout returns the model's memory as a snapshot lists it: each contiguous mapped range (a whole segment, or a
// mapped run of an expandable range) keyed by its address, with its blocks in address order.
func (a *Allocator) layout() map[uint64][]blockView {
	out := map[uint64][]blockView{}
	seen := map[*segment]bool{}
	visit := func(b *block) {
		if seen[b.seg] {
			return
		}
		seen[b.seg] = true
		for b.prev != nil {
			b = b.prev
		}
		var start uint64
		inRun := false
		for ; b != nil; b = b.next {
			if !b.mapped {
				inRun = false
				continue
			}
			if !inRun {
				start, inRun = b.addr, true
			}
			out[start] = append(out[start], blockView{b.addr, b.size, b.allocated})
		}
	}
	for _, b := range a.live {
		visit(b)
	}
	for _, p := range a.pools() {
		for _, b := range p.blocks.appendAll(nil) {
			visit(b)
		}
		for _, b := range p.unmapped.appendAll(nil) {
			visit(b)
		}
	}
	return out
}

// pools lists the default pool pair and every private pool's pair.
func (a *Allocator) pools() []*pool {
	out := []*pool{&a.small, &a.large}
	for _, pp := range a.private {
		out = append(out, &pp.small, &pp.large)
	}
	return out
}
