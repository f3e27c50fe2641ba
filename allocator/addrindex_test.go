package allocator

import "testing"

// TestAddrIndex checks the table against a map over address patterns that stress it: aligned addresses (low
// bits zero), addresses one table size apart, and enough of them to grow the table many times.
func TestAddrIndex(t *testing.T) {
	tests := []struct {
		name string
		addr func(i int) uint64
	}{
		{"aligned", func(i int) uint64 { return 0x7f0000000000 + uint64(i%5000)*512 }},
		{"table-stride", func(i int) uint64 { return uint64(i%3000) << addrIndexMinBits }},
		{"high-bits", func(i int) uint64 { return uint64(i%7000) << 40 }},
		{"zero-and-max", func(i int) uint64 { return []uint64{0, ^uint64(0), 1}[i%3] }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := newAddrIndex()
			want := map[uint64]int32{}
			for i := range 20000 {
				a := tc.addr(i)
				k, added := x.getOrAdd(a, int32(len(want)))
				w, seen := want[a]
				if !seen {
					w = int32(len(want))
					want[a] = w
				}
				if added == seen || k != w {
					t.Fatalf("event %d: getOrAdd(%#x) = %d, %v; want %d, %v", i, a, k, added, w, !seen)
				}
			}
			if x.n != len(want) {
				t.Fatalf("%d addresses counted, want %d", x.n, len(want))
			}
			for k, a := range x.byNumber() {
				if want[a] != int32(k) {
					t.Fatalf("byNumber: %#x at %d, want %d", a, k, want[a])
				}
			}
			for a, w := range want {
				if k, ok := x.get(a); !ok || k != w {
					t.Fatalf("get(%#x) = %d, %v; want %d", a, k, ok, w)
				}
			}
			const absent = 0xdead_beef_0003 // odd and past every pattern's range
			if k, ok := x.get(absent); ok {
				t.Fatalf("get(%#x) = %d for an address never added", uint64(absent), k)
			}
		})
	}
}
