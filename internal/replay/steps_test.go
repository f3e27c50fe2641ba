package replay

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSteps holds every query of Steps to the same query answered on the dense series by brute force, on series
// that start above, below and at their later values, never change, or change at every event.
func TestSteps(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		name    string
		initial int64
		dense   []int64
	}{
		{"empty", 5, nil},
		{"flat", 5, []int64{5, 5, 5}},
		{"starts higher", 9, []int64{1, 2, 3}},
		{"rises then falls", 0, []int64{0, 4, 4, 8, 8, 2, 8}},
		{"changes at every event", 1, []int64{2, 3, 1, 7, 7 - 1, 9}},
		{"one change at the first event", 0, []int64{3}},
	}
	for range 50 {
		n := rng.IntN(200)
		d := make([]int64, n)
		v := rng.Int64N(10)
		for j := range d {
			if rng.IntN(8) == 0 {
				v += rng.Int64N(11) - 5
			}
			d[j] = v
		}
		cases = append(cases, struct {
			name    string
			initial int64
			dense   []int64
		}{"random", rng.Int64N(10), d})
	}
	for _, c := range cases {
		s := StepsOf(c.initial, c.dense)
		n := len(c.dense)
		at := func(j int) int64 {
			if j < 0 {
				return c.initial
			}
			return c.dense[j]
		}
		if got := expand(&s, n); !slices.Equal(got, c.dense) && n > 0 {
			t.Fatalf("%s: Expand = %v, want %v", c.name, got, c.dense)
		}
		changes := 0
		for j := range n {
			if at(j) != at(j-1) {
				changes++
			}
		}
		if s.Changes() != changes {
			t.Errorf("%s: %d changes, want %d", c.name, s.Changes(), changes)
		}
		for j := -1; j < n; j++ {
			if s.At(j) != at(j) {
				t.Fatalf("%s: At(%d) = %d, want %d", c.name, j, s.At(j), at(j))
			}
			for hi := j + 1; hi <= n; hi++ {
				want := at(j)
				for k := j; k < hi; k++ {
					want = max(want, at(k))
				}
				if got := s.Max(j, hi); got != want {
					t.Fatalf("%s: Max(%d, %d) = %d, want %d", c.name, j, hi, got, want)
				}
			}
		}
		wantIdx, wantBest := -1, int64(-1<<63)
		for j := range n {
			if c.dense[j] > wantBest {
				wantIdx, wantBest = j, c.dense[j]
			}
		}
		if c.initial > wantBest {
			wantIdx, wantBest = -1, c.initial
		}
		if idx, best := s.ArgMax(n); idx != wantIdx || best != wantBest {
			t.Errorf("%s: ArgMax = %d, %d; want %d, %d", c.name, idx, best, wantIdx, wantBest)
		}
	}
}

// TestStepsFrom: deltas at segment events sum from the initial value, and a zero delta is no change.
func TestStepsFrom(t *testing.T) {
	s := stepsFrom(100, []int32{2, 5, 6, 9}, []int64{50, 0, -30, 30})
	want := []int64{100, 100, 150, 150, 150, 150, 120, 120, 120, 150, 150}
	if got := expand(&s, len(want)); !slices.Equal(got, want) || s.Changes() != 3 || s.At(-1) != 100 {
		t.Errorf("series %v with %d changes, want %v with 3", got, s.Changes(), want)
	}
}

// expand is s as one value an event, read by At.
func expand(s *Steps, n int) []int64 {
	out := make([]int64, n)
	for j := range out {
		out[j] = s.At(j)
	}
	return out
}
