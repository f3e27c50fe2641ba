package addrtab

import (
	"math/rand/v2"
	"testing"
)

// TestTable holds the table to a Go map under random sets, first-time adds and deletes, over address patterns that
// stress it: aligned addresses (low bits zero), addresses that differ only in their high bits or by one table
// size (so that many share a home slot and probe runs wrap around the end), zero and the largest address, and
// enough of them to grow the table many times.
func TestTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name string
		addr func() uint64
	}{
		{"aligned", func() uint64 { return 0x7f0000000000 + uint64(rng.IntN(5000))*512 }},
		{"high bits", func() uint64 { return uint64(rng.IntN(64)) << 58 }},
		{"table stride", func() uint64 { return uint64(rng.IntN(3000)) << minBits }},
		{"small", func() uint64 { return uint64(rng.IntN(3000)) }},
		{"zero and max", func() uint64 { return []uint64{0, ^uint64(0), 1}[rng.IntN(3)] }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tab, want := New[int64](), map[uint64]int64{}
			for step := range 100_000 {
				a := tc.addr()
				switch rng.IntN(4) {
				case 0:
					tab.Set(a, int64(step))
					want[a] = int64(step)
				case 1:
					got, added := tab.GetOrAdd(a, int64(step))
					w, seen := want[a]
					if !seen {
						want[a], w = int64(step), int64(step)
					}
					if added == seen || got != w {
						t.Fatalf("step %d: GetOrAdd(%#x) = %d, %v; want %d, %v", step, a, got, added, w, !seen)
					}
				default:
					tab.Delete(a)
					delete(want, a)
				}
				if _, ok := tab.Get(a ^ 1<<62); ok != has(want, a^1<<62) {
					t.Fatalf("step %d: Get(%#x) found %v, the map disagrees", step, a^1<<62, ok)
				}
				if step%991 != 0 && step < 99_900 {
					continue
				}
				for a, w := range want {
					if got, ok := tab.Get(a); !ok || got != w {
						t.Fatalf("step %d: Get(%#x) = %d, %v; want %d", step, a, got, ok, w)
					}
				}
				n := 0
				tab.Each(func(a uint64, v int64) {
					n++
					if w, ok := want[a]; !ok || w != v {
						t.Fatalf("step %d: Each gave %#x = %d, want %d (present %v)", step, a, v, w, ok)
					}
				})
				if n != len(want) || tab.Len() != len(want) {
					t.Fatalf("step %d: %d entries, Len %d, want %d", step, n, tab.Len(), len(want))
				}
			}
		})
	}
}

func has(m map[uint64]int64, a uint64) bool {
	_, ok := m[a]
	return ok
}
