package replay

// openTable maps the address of each allocation still open during a replay to its element: open addressing with
// linear probing and deletion by shifting the probe run back, so that it needs no tombstones. A Go map spent
// about a fifth of a replay's time on its lookups, inserts and deletes (three per allocation).
type openTable struct {
	slots []openSlot
	shift uint // 64 − log2(len(slots))
	n     int
}

// openSlot is one entry; i1 is the element's index plus one, 0 for an empty slot.
type openSlot struct {
	addr    uint64
	i1      int32
	freeReq int32
}

const openTableMinBits = 8

func newOpenTable() *openTable {
	return &openTable{slots: make([]openSlot, 1<<openTableMinBits), shift: 64 - openTableMinBits}
}

// home is addr's first slot: Fibonacci hashing keeps the high bits, which aligned addresses' low zero bits do not
// disturb.
func (t *openTable) home(addr uint64) uint64 { return (addr * 0x9e3779b97f4a7c15) >> t.shift }

// find returns addr's slot index and whether it holds addr (else the empty slot where it would go).
func (t *openTable) find(addr uint64) (uint64, bool) {
	mask := uint64(len(t.slots) - 1)
	for i := t.home(addr); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.i1 == 0 {
			return i, false
		}
		if s.addr == addr {
			return i, true
		}
	}
}

// get returns the open element at addr.
func (t *openTable) get(addr uint64) (openElement, bool) {
	i, ok := t.find(addr)
	if !ok {
		return openElement{}, false
	}
	s := &t.slots[i]
	return openElement{s.i1 - 1, s.freeReq}, true
}

// set makes o the open element at addr.
func (t *openTable) set(addr uint64, o openElement) {
	i, ok := t.find(addr)
	t.slots[i] = openSlot{addr: addr, i1: o.i + 1, freeReq: o.freeReq}
	if ok {
		return
	}
	t.n++
	if t.n*2 > len(t.slots) { // at most half full, so probe runs stay short
		t.grow()
	}
}

// del removes addr, moving back the entries of its probe run that would no longer be found past the hole.
func (t *openTable) del(addr uint64) {
	i, ok := t.find(addr)
	if !ok {
		return
	}
	t.n--
	mask := uint64(len(t.slots) - 1)
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		s := t.slots[j]
		if s.i1 == 0 {
			break
		}
		// The entry at j may fill the hole at i unless its home lies cyclically in (i, j].
		if h := t.home(s.addr); (j-h)&mask >= (j-i)&mask {
			t.slots[i] = s
			i = j
		}
	}
	t.slots[i] = openSlot{}
}

func (t *openTable) grow() {
	old := t.slots
	t.slots = make([]openSlot, 2*len(old))
	t.shift--
	mask := uint64(len(t.slots) - 1)
	for _, s := range old {
		if s.i1 == 0 {
			continue
		}
		i := t.home(s.addr)
		for t.slots[i].i1 != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}

// each calls f with every address and its open element, in no particular order; f must not change the table.
func (t *openTable) each(f func(addr uint64, o openElement)) {
	for _, s := range t.slots {
		if s.i1 != 0 {
			f(s.addr, openElement{s.i1 - 1, s.freeReq})
		}
	}
}
