package phasedetect

import (
	"math/rand/v2"
	"testing"

	"github.com/memscan/memscan/snapshot"
)

// TestExtendZeroGradMatchesScan: the binary search over the zero_grad windows finds the window a scan in start
// order finds first, on random windows that overlap, nest and repeat.
func TestExtendZeroGradMatchesScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 200 {
		n := 5 + rng.IntN(60)
		trace := make([]snapshot.TraceEntry, n)
		for j := range trace {
			trace[j].Action = snapshot.ActionFreeCompleted
			if rng.IntN(3) == 0 {
				trace[j].Action = snapshot.ActionAlloc
			}
		}
		var zero []window
		for range rng.IntN(8) {
			s := rng.IntN(n)
			zero = append(zero, window{s, s + rng.IntN(n-s+1)})
		}
		d := &detector{trace: trace}
		d.zero = zero
		// annotated sorts by start; setReach expects that order.
		sortWindows(d.zero)
		d.setZeroReach()
		for end := 0; end <= n; end++ {
			next := end
			for next < n && trace[next].Action != snapshot.ActionAlloc {
				next++
			}
			want := end
			for _, z := range d.zero {
				if z.start <= next && z.end > end {
					want = z.end
					break
				}
			}
			if got := d.extendZeroGrad(end); got != want {
				t.Fatalf("trial %d: windows %v, end %d: got %d, want %d", trial, d.zero, end, got, want)
			}
		}
	}
}
