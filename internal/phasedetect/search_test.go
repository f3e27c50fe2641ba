package phasedetect

import (
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"

	"github.com/memscan/memscan/internal/traingen"
	"github.com/memscan/memscan/snapshot"
)

// TestSearchNear: from any starting point, searchNear finds what sort.Search finds in sorted values with repeats,
// for targets below, among and above them.
func TestSearchNear(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 2, 3, 10, 100, 1000} {
		vals := make([]int64, n)
		for i := range vals {
			if i > 0 {
				vals[i] = vals[i-1] + int64(r.IntN(3)) // repeats and gaps
			}
		}
		for target := int64(-1); target <= int64(n)*2+1; target++ {
			want := sort.Search(n, func(i int) bool { return vals[i] >= target })
			for near := -1; near <= n+1; near++ {
				if got := searchNear(n, near, func(i int) bool { return vals[i] >= target }); got != want {
					t.Fatalf("n %d target %d from %d: %d, want %d", n, target, near, got, want)
				}
			}
		}
	}
}

// TestDetectOrderedAsDetect: on annotated training loops (varying shapes, a leak, an OOM), the search from the last
// window finds the windows and phases the whole-trace search finds, with annotations in time order or shuffled.
func TestDetectOrderedAsDetect(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	windows := 0
	defer func() {
		if windows == 0 {
			t.Error("no annotated windows in any fixture")
		}
	}()
	for _, c := range []traingen.TrainingLoop{
		{Iterations: 6, Layers: 3, WeightBytes: 2 << 20, ActivationBytes: 8 << 20, LogitsBytes: 16 << 20, Annotations: true},
		{Iterations: 5, Layers: 2, WeightBytes: 2 << 20, ActivationBytes: 8 << 20, LogitsBytes: 16 << 20, Annotations: true, Keep: true, Scale: []float64{1, 2, 1, 3, 1}},
		{Iterations: 3, Layers: 4, WeightBytes: 2 << 20, ActivationBytes: 8 << 20, LogitsBytes: 16 << 20, Annotations: true, OOMAtLayer: 3},
	} {
		s := c.Build()
		tr := s.DeviceTraces[0]
		for i := 1; i < len(tr); i++ {
			if tr[i].TimeUS < tr[i-1].TimeUS {
				t.Fatalf("fixture's times decrease at event %d", i)
			}
		}
		anns := s.ExternalAnnotations
		shuffled := append([]snapshot.Annotation(nil), anns...)
		// Shuffle whole START/END pairs, which keeps each pair's window.
		for i := len(shuffled)/2 - 1; i > 0; i-- {
			k := r.IntN(i + 1)
			shuffled[2*i], shuffled[2*k] = shuffled[2*k], shuffled[2*i]
			shuffled[2*i+1], shuffled[2*k+1] = shuffled[2*k+1], shuffled[2*i+1]
		}
		for name, a := range map[string][]snapshot.Annotation{"in order": anns, "shuffled": shuffled} {
			want := detectOrdered(tr, s.TraceStacks, a, 0, false)
			if len(want.Iterations) == 0 {
				t.Fatalf("%s: no iterations found; the fixture should show some", name)
			}
			if got := detectOrdered(tr, s.TraceStacks, a, 0, true); !reflect.DeepEqual(got, want) {
				t.Errorf("%s: ordered search found %+v, want %+v", name, got, want)
			}
			// Both kinds found in one walk are those found one kind at a time, by either search.
			both := annotated(tr, a, 0, true, "Optimizer.step", "zero_grad")
			for k, sub := range []string{"Optimizer.step", "zero_grad"} {
				want := annotated(tr, a, 0, false, sub)[0]
				windows += len(want)
				if got := annotated(tr, a, 0, true, sub)[0]; !reflect.DeepEqual(got, want) {
					t.Errorf("%s %s: windows %v, want %v", name, sub, got, want)
				}
				if !reflect.DeepEqual(both[k], want) {
					t.Errorf("%s %s: windows found beside the other kind's %v, want %v", name, sub, both[k], want)
				}
			}
		}
	}
}

// TestTimesOrdered: a trace is searched near the last answer only when its times never decrease; equal times
// (events within one microsecond) keep it ordered.
func TestTimesOrdered(t *testing.T) {
	at := func(times ...int64) []snapshot.TraceEntry {
		tr := make([]snapshot.TraceEntry, len(times))
		for i, us := range times {
			tr[i].TimeUS = us
		}
		return tr
	}
	for _, c := range []struct {
		name  string
		trace []snapshot.TraceEntry
		want  bool
	}{
		{"empty", nil, true},
		{"one event", at(5), true},
		{"rising", at(1, 2, 3), true},
		{"equal times", at(1, 1, 2, 2), true},
		{"steps back at the end", at(1, 2, 3, 2), false},
		{"steps back at the start", at(3, 2, 4, 5), false},
	} {
		if got := timesOrdered(c.trace); got != c.want {
			t.Errorf("%s: timesOrdered = %v, want %v", c.name, got, c.want)
		}
	}
}
