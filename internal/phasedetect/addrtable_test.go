package phasedetect

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

// TestIsNativeBackward: the substring guard in front of nativeBackward never turns away a frame the regexp
// matches (each alternative written out), and turns away what it does not.
func TestIsNativeBackward(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"torch::autograd::generated::MmBackward0::apply(...)", true},
		{"torch::autograd::generated::SoftmaxBackward::apply", true},
		{"torch::autograd::Engine::evaluate_function(...)", true},
		{"torch::autograd::AccumulateGrad::apply(...)", true},
		{"torch::autograd::CopyBackwards::apply(...)", true},
		{"at::native::mm(...)", false},
		{"torch::autograd::VariableType::mm", false},
		{"MmBackward0", false}, // a Python-side node name, not the native apply
		{"forward", false},
	} {
		if got := isNativeBackward(tc.name); got != tc.want || got != nativeBackward.MatchString(tc.name) {
			t.Errorf("isNativeBackward(%q) = %v, want %v (regexp alone: %v)", tc.name, got, tc.want, nativeBackward.MatchString(tc.name))
		}
	}
}
