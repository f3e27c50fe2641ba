package phases

import (
	"math/rand/v2"
	"testing"
)

// TestAddrTable drives the table and a Go map with the same random puts and takes (addresses from a small pool, so
// that probe runs collide, wrap around the table's end and shrink under backward-shift deletion) and compares
// every answer.
func TestAddrTable(t *testing.T) {
	for _, pool := range []int{3, 100, 5000} {
		rng := rand.New(rand.NewPCG(uint64(pool), 7))
		tab, ref := newAddrTable(), map[uint64]int32{}
		addr := func() uint64 {
			if rng.IntN(50) == 0 {
				return 0 // the empty key, kept aside
			}
			return uint64(rng.IntN(pool)) << 9 // aligned, as block addresses are
		}
		for i := range 200_000 {
			k := addr()
			if rng.IntN(2) == 0 {
				tab.put(k, int32(i))
				ref[k] = int32(i)
				continue
			}
			v, ok := tab.take(k)
			w, wok := ref[k]
			delete(ref, k)
			if ok != wok || ok && v != w {
				t.Fatalf("pool %d op %d: take(%#x) = %d %v, want %d %v", pool, i, k, v, ok, w, wok)
			}
		}
		for k, w := range ref {
			if v, ok := tab.take(k); !ok || v != w {
				t.Fatalf("pool %d: left %#x = %d %v, want %d", pool, k, v, ok, w)
			}
		}
		if tab.n != 0 {
			t.Errorf("pool %d: %d entries left in an emptied table", pool, tab.n)
		}
	}
}
