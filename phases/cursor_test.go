package phases

import (
	"math/rand/v2"
	"testing"
)

// randomTimeline builds a timeline of n iterations over a trace of events: a setup, gaps between iterations,
// phases that tile part of each, and inference iterations with prefill and decode. ordered false swaps two
// iterations, so that their ends decrease somewhere.
func randomTimeline(r *rand.Rand, n int, ordered bool) *Timeline {
	t := &Timeline{Setup: NoSpan, OOM: -1}
	j := 0
	if r.IntN(2) == 0 {
		t.Setup = Span{Start: 0, End: 1 + r.IntN(20)}
		j = t.Setup.End
	}
	for i := range n {
		j += r.IntN(3) // a gap with no iteration, at times
		start := j
		f, b, o := 1+r.IntN(10), r.IntN(10), r.IntN(5)
		it := Iteration{Index: i + 1, Forward: Span{Start: start, End: start + f}, Backward: NoSpan, Optimizer: NoSpan}
		j += f
		if b > 0 {
			it.Backward = Span{Start: j, End: j + b}
			j += b
		}
		if o > 0 {
			it.Optimizer = Span{Start: j, End: j + o}
			j += o
		}
		j += r.IntN(2) // events in the iteration but in no phase
		it.Span = Span{Start: start, End: j}
		if r.IntN(5) == 0 {
			pre, dec := Span{Start: start, End: start + 1}, Span{Start: start + 1, End: it.Forward.End}
			it.Prefill, it.Decode = &pre, &dec
		}
		t.Iterations = append(t.Iterations, it)
	}
	if !ordered && n >= 2 {
		k := r.IntN(n - 1)
		t.Iterations[k], t.Iterations[k+1] = t.Iterations[k+1], t.Iterations[k]
	}
	t.Events = j + r.IntN(5)
	return t
}

// TestCursorAt: a cursor answers as At for every event, whether asked in order, at random, or alternating between
// an allocation and its free as detect.Prepare asks; on timelines with no iterations, one, many, and iterations out
// of order.
func TestCursorAt(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		n := []int{0, 1, 2, 5, 40, 300}[trial%6]
		tl := randomTimeline(r, n, trial%7 != 0)
		check := func(c *Cursor, j int, how string) {
			t.Helper()
			gi, gp := c.At(j)
			wi, wp := tl.At(j)
			if gi != wi || gp != wp {
				t.Fatalf("trial %d (%d iterations, %s): At(%d) = %d %v, want %d %v", trial, n, how, j, gi, gp, wi, wp)
			}
		}
		c := tl.Cursor()
		for j := -1; j <= tl.Events+2; j++ {
			check(&c, j, "in order")
		}
		for j := tl.Events + 2; j >= -1; j-- {
			check(&c, j, "backwards")
		}
		c = tl.Cursor()
		for range 2 * tl.Events {
			check(&c, r.IntN(tl.Events+4)-1, "at random")
		}
		starts, ends := tl.Cursor(), tl.Cursor()
		for j := -1; j < tl.Events; j++ {
			check(&starts, j, "allocations")
			check(&ends, j+r.IntN(tl.Events-j+2), "their frees")
		}
	}
}
