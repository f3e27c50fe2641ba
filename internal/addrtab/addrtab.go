// Package addrtab maps memory addresses to values: the tables that the allocator model and the trace replay look
// up once or more per event of a trace of millions, where a Go map spent a fifth to a half of their time.
package addrtab

// Table maps addresses to values of type V: open addressing with linear probing from a Fibonacci hash, at most half
// full, deleting by moving its probe run back over the hole so that it needs no tombstones. The zero Table is not
// ready: use New.
type Table[V any] struct {
	slots []slot[V]
	shift uint // 64 − log2(len(slots))
	n     int
}

type slot[V any] struct {
	addr uint64
	v    V
	used bool
}

// minBits sizes a new table: 256 slots.
const minBits = 8

// New returns an empty table.
func New[V any]() *Table[V] {
	return &Table[V]{slots: make([]slot[V], 1<<minBits), shift: 64 - minBits}
}

// Len returns the number of addresses in the table.
func (t *Table[V]) Len() int { return t.n }

// home is addr's first slot: Fibonacci hashing keeps the high bits of the product, which the low zero bits of
// aligned addresses do not disturb.
func (t *Table[V]) home(addr uint64) uint64 { return (addr * 0x9e3779b97f4a7c15) >> t.shift }

// find returns addr's slot and whether it holds addr (else the empty slot where addr would go).
func (t *Table[V]) find(addr uint64) (uint64, bool) {
	mask := uint64(len(t.slots) - 1)
	for i := t.home(addr); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if !s.used {
			return i, false
		}
		if s.addr == addr {
			return i, true
		}
	}
}

// Get returns addr's value.
func (t *Table[V]) Get(addr uint64) (V, bool) {
	i, ok := t.find(addr)
	return t.slots[i].v, ok
}

// Set makes v addr's value.
func (t *Table[V]) Set(addr uint64, v V) {
	i, ok := t.find(addr)
	t.slots[i] = slot[V]{addr: addr, v: v, used: true}
	if !ok {
		t.added()
	}
}

// GetOrAdd returns addr's value, giving it v when it has none (added reports that), in one probe.
func (t *Table[V]) GetOrAdd(addr uint64, v V) (got V, added bool) {
	i, ok := t.find(addr)
	if ok {
		return t.slots[i].v, false
	}
	t.slots[i] = slot[V]{addr: addr, v: v, used: true}
	t.added()
	return v, true
}

func (t *Table[V]) added() {
	t.n++
	if t.n*2 > len(t.slots) { // at most half full, so probe runs stay short
		t.grow()
	}
}

// Delete removes addr, moving back the entries of its probe run that the hole would otherwise hide.
func (t *Table[V]) Delete(addr uint64) {
	i, ok := t.find(addr)
	if !ok {
		return
	}
	t.n--
	mask := uint64(len(t.slots) - 1)
	for j := (i + 1) & mask; t.slots[j].used; j = (j + 1) & mask {
		// The entry at j may fill the hole at i unless its home lies cyclically in (i, j].
		if h := t.home(t.slots[j].addr); (j-h)&mask >= (j-i)&mask {
			t.slots[i] = t.slots[j]
			i = j
		}
	}
	t.slots[i] = slot[V]{}
}

func (t *Table[V]) grow() {
	old := t.slots
	t.slots = make([]slot[V], 2*len(old))
	t.shift--
	mask := uint64(len(t.slots) - 1)
	for _, s := range old {
		if !s.used {
			continue
		}
		i := t.home(s.addr)
		for t.slots[i].used {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}

// Each calls f with every address and its value, in no particular order; f must not change the table.
func (t *Table[V]) Each(f func(addr uint64, v V)) {
	for i := range t.slots {
		if s := &t.slots[i]; s.used {
			f(s.addr, s.v)
		}
	}
}
