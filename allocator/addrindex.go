package allocator

// addrIndex numbers addresses: an open-addressing table (linear probing, multiplicative hash) from address to
// its number. Record looks up every alloc and free event's address once; a Go map spent most of Record's time
// there (a 2.4 M-event trace: 90 ms of 200), this table about a third of that.
type addrIndex struct {
	slots []addrSlot
	shift uint // 64 − log2(len(slots))
	n     int
}

// addrSlot is one table entry; k is the number plus one, 0 for an empty slot.
type addrSlot struct {
	addr uint64
	k    int32
}

const addrIndexMinBits = 10

func newAddrIndex() *addrIndex {
	return &addrIndex{slots: make([]addrSlot, 1<<addrIndexMinBits), shift: 64 - addrIndexMinBits}
}

// home is addr's first slot: Fibonacci hashing keeps the high bits, which the low zero bits of aligned
// addresses do not disturb.
func (x *addrIndex) home(addr uint64) uint64 { return (addr * 0x9e3779b97f4a7c15) >> x.shift }

// get returns addr's number.
func (x *addrIndex) get(addr uint64) (int32, bool) {
	mask := uint64(len(x.slots) - 1)
	for i := x.home(addr); ; i = (i + 1) & mask {
		s := &x.slots[i]
		if s.k == 0 {
			return 0, false
		}
		if s.addr == addr {
			return s.k - 1, true
		}
	}
}

// getOrAdd returns addr's number, giving it next when it has none (added reports that).
func (x *addrIndex) getOrAdd(addr uint64, next int32) (k int32, added bool) {
	mask := uint64(len(x.slots) - 1)
	i := x.home(addr)
	for ; ; i = (i + 1) & mask {
		s := &x.slots[i]
		if s.k == 0 {
			break
		}
		if s.addr == addr {
			return s.k - 1, false
		}
	}
	x.slots[i] = addrSlot{addr: addr, k: next + 1}
	x.n++
	if x.n*2 > len(x.slots) { // at most half full, so probes stay short
		x.grow()
	}
	return next, true
}

func (x *addrIndex) grow() {
	old := x.slots
	x.slots = make([]addrSlot, 2*len(old))
	x.shift--
	mask := uint64(len(x.slots) - 1)
	for _, s := range old {
		if s.k == 0 {
			continue
		}
		i := x.home(s.addr)
		for x.slots[i].k != 0 {
			i = (i + 1) & mask
		}
		x.slots[i] = s
	}
}

// byNumber returns the addresses in the order of their numbers.
func (x *addrIndex) byNumber() []uint64 {
	out := make([]uint64, x.n)
	for _, s := range x.slots {
		if s.k != 0 {
			out[s.k-1] = s.addr
		}
	}
	return out
}
