package phasedetect

// addrTable maps the addresses of open blocks to an int32: an open-addressing hash table with linear probing, a
// few times faster than a Go map for the three operations per block that pairing a multi-million-event trace
// needs. Address 0 (no real block has it) is the empty key and kept aside.
type addrTable struct {
	keys []uint64
	vals []int32
	n    int
	zero int32 // the value of address 0, −1 when absent
}

func newAddrTable() *addrTable {
	return &addrTable{keys: make([]uint64, 1024), vals: make([]int32, 1024), zero: -1}
}

// slot spreads an address (aligned, so its low bits say little) over the table: the finalizer of MurmurHash3.
func (t *addrTable) slot(k uint64) int {
	k ^= k >> 33
	k *= 0xff51afd7ed558ccd
	k ^= k >> 33
	return int(k) & (len(t.keys) - 1)
}

// put sets the value of address k.
func (t *addrTable) put(k uint64, v int32) {
	if k == 0 {
		t.zero = v
		return
	}
	if 2*(t.n+1) > len(t.keys) {
		t.grow()
	}
	i := t.slot(k)
	for t.keys[i] != 0 && t.keys[i] != k {
		i = (i + 1) & (len(t.keys) - 1)
	}
	if t.keys[i] == 0 {
		t.n++
	}
	t.keys[i], t.vals[i] = k, v
}

// take removes address k and returns its value.
func (t *addrTable) take(k uint64) (int32, bool) {
	if k == 0 {
		v := t.zero
		t.zero = -1
		return v, v >= 0
	}
	mask := len(t.keys) - 1
	i := t.slot(k)
	for t.keys[i] != k {
		if t.keys[i] == 0 {
			return 0, false
		}
		i = (i + 1) & mask
	}
	v := t.vals[i]
	// Backward-shift deletion: pull later entries of the probe run into the hole, so that no lookup stops early.
	for {
		t.keys[i] = 0
		j := i
		for {
			j = (j + 1) & mask
			if t.keys[j] == 0 {
				t.n--
				return v, true
			}
			// The entry at j may move into the hole at i unless its home slot lies cyclically in (i, j].
			h := t.slot(t.keys[j])
			if (j > i && (h <= i || h > j)) || (j < i && h <= i && h > j) {
				break
			}
		}
		t.keys[i], t.vals[i] = t.keys[j], t.vals[j]
		i = j
	}
}

func (t *addrTable) grow() {
	keys, vals := t.keys, t.vals
	t.keys, t.vals, t.n = make([]uint64, 2*len(keys)), make([]int32, 2*len(keys)), 0
	for i, k := range keys {
		if k != 0 {
			t.put(k, vals[i])
		}
	}
}
