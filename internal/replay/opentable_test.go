package replay

import (
	"math/rand/v2"
	"testing"
)

// TestOpenTable holds the table to a Go map under random sets, updates and deletes: aligned addresses as a trace
// has them, addresses that differ only in high bits (so that many share a home slot and probe runs wrap around
// the table's end), and enough of them to grow it several times and shrink back.
func TestOpenTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, keys := range []func() uint64{
		func() uint64 { return 0x7f0000000000 + uint64(rng.IntN(4096))*512 },
		func() uint64 { return uint64(rng.IntN(64)) << 58 },
		func() uint64 { return uint64(rng.IntN(3000)) },
	} {
		tab, want := newOpenTable(), map[uint64]openElement{}
		for step := range 200_000 {
			addr := keys()
			switch rng.IntN(3) {
			case 0, 1:
				o := openElement{int32(step), int32(rng.IntN(5)) - 1}
				tab.set(addr, o)
				want[addr] = o
			default:
				tab.del(addr)
				delete(want, addr)
			}
			if step%997 == 0 || step > 199_000 {
				for a, o := range want {
					if got, ok := tab.get(a); !ok || got != o {
						t.Fatalf("step %d: get(%#x) = %v, %v; want %v", step, a, got, ok, o)
					}
				}
				n := 0
				tab.each(func(a uint64, o openElement) {
					n++
					if w, ok := want[a]; !ok || w != o {
						t.Fatalf("step %d: each gave %#x %v, want %v (present %v)", step, a, o, w, ok)
					}
				})
				if n != len(want) || tab.n != len(want) {
					t.Fatalf("step %d: %d entries (count %d), want %d", step, n, tab.n, len(want))
				}
			}
			other := addr ^ 1<<63
			if _, ok := tab.get(other); ok != (func() bool { _, in := want[other]; return in })() {
				t.Fatalf("step %d: get(%#x) = %v, the map disagrees", step, other, ok)
			}
		}
	}
}
