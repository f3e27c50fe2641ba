package allocator

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestTreeMatchesSortedSlice drives both tree orders through random inserts and removes — growing to thousands of
// blocks, then draining to none — and checks every query against a sorted slice of the same blocks.
func TestTreeMatchesSortedSlice(t *testing.T) {
	for _, byAddr := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(1, 2))
		tr := &tree{byAddr: byAddr}
		var in []*block // the blocks in the tree, in tree order
		cmp := func(a, b *block) int {
			switch ka, kb := tr.keyOf(a), tr.keyOf(b); {
			case tr.less(ka, kb):
				return -1
			case tr.less(kb, ka):
				return 1
			}
			return 0
		}
		addr := uint64(0)
		randomKey := func() key {
			return key{stream: uint64(rng.IntN(3)), size: int64(rng.IntN(64)) * 512, addr: uint64(rng.IntN(40000)) * 8}
		}
		check := func(step int) {
			if got := tr.appendAll(nil); !slices.Equal(got, in) || tr.n != len(in) {
				t.Fatalf("byAddr %v step %d: %d blocks in order (n %d), want %d", byAddr, step, len(got), tr.n, len(in))
			}
			for range 8 {
				k := randomKey()
				probe := &block{stream: k.stream, size: k.size, addr: k.addr}
				i, _ := slices.BinarySearchFunc(in, probe, cmp)
				var want *block
				if i < len(in) {
					want = in[i]
				}
				if got := tr.lowerBound(k); got != want {
					t.Fatalf("byAddr %v step %d: lowerBound(%v) wrong", byAddr, step, k)
				}
				j := i
				for j < len(in) && cmp(in[j], probe) == 0 {
					j++
				}
				want = nil
				if j < len(in) {
					want = in[j]
				}
				if got := tr.next(probe); got != want {
					t.Fatalf("byAddr %v step %d: next(%v) wrong", byAddr, step, k)
				}
				want = nil
				if i > 0 {
					want = in[i-1]
				}
				if got := tr.prevOf(k); got != want {
					t.Fatalf("byAddr %v step %d: prevOf(%v) wrong", byAddr, step, k)
				}
			}
		}
		for step := range 30000 {
			grow := step < 15000 && rng.IntN(10) < 7 || step >= 15000 && rng.IntN(10) < 3
			if grow || len(in) == 0 {
				addr += 8 // addresses are unique among a tree's blocks
				b := &block{stream: uint64(rng.IntN(3)), size: int64(rng.IntN(64)) * 512, addr: addr}
				tr.insert(b)
				i, _ := slices.BinarySearchFunc(in, b, cmp)
				in = slices.Insert(in, i, b)
			} else {
				i := rng.IntN(len(in))
				tr.remove(in[i])
				if in[i].inTree {
					t.Fatalf("removed block still marked in the tree")
				}
				in = slices.Delete(in, i, i+1)
			}
			if step%97 == 0 || step > 29900 {
				check(step)
			}
		}
		for len(in) > 0 {
			tr.remove(in[len(in)-1])
			in = in[:len(in)-1]
		}
		if tr.root != nil || tr.n != 0 || tr.lowerBound(key{}) != nil {
			t.Fatalf("byAddr %v: drained tree not empty", byAddr)
		}
	}
}
