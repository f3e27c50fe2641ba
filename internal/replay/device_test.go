package replay

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/snapbuild"
	"github.com/memscan/memscan/internal/traingen"
	"github.com/memscan/memscan/snapshot"
)

// The five allocations of snapbuild.ReplayRules, each with its own stack.
var stX0, stX1, stY, stZ, stW = snapbuild.Stack("a.py:1:x0"), snapbuild.Stack("a.py:2:x1"), snapbuild.Stack("a.py:3:y"), snapbuild.Stack("a.py:4:z"), snapbuild.Stack("a.py:5:w")

func TestReplayDevice(t *testing.T) {
	b, _ := snapbuild.ReplayRules(stX0, stX1, stY, stZ, stW)
	d, err := ReplayDevice(context.Background(), b.S, 0)
	if err != nil {
		t.Fatal(err)
	}
	// By hand, as in TestTimelineReplay: X0 (1000, live block never allocated in the trace) and Z (700, freed at 5)
	// are live from the start; +2000 X1 at 1, +3000 Y at 2, −3000 Y at 4 (its free_completed), −700 Z at 5,
	// +400 W at 6, −400 W at 7 (free_requested never completed). Reserved: 8192 final − 8192 segment_alloc = 0 before.
	if d.InitialAllocated != 1700 || d.Reserved.At(-1) != 0 {
		t.Errorf("initial allocated %d reserved %d, want 1700 and 0", d.InitialAllocated, d.Reserved.At(-1))
	}
	if want := []int64{1700, 3700, 6700, 6700, 3700, 3000, 3400, 3000, 3000}; !slices.Equal(d.Allocated, want) {
		t.Errorf("allocated %v, want %v", d.Allocated, want)
	}
	if d.PeakIndex != 2 || d.PeakBytes != 6700 {
		t.Errorf("peak %d bytes at %d, want 6700 at 2", d.PeakBytes, d.PeakIndex)
	}
	// The same peak found in the series alone, as for a device built without a replay.
	bare := &DeviceTrace{Series: d.Series}
	for _, got := range [][2]int64{pair(d.Peak()), pair(bare.Peak())} {
		if got != [2]int64{2, 6700} {
			t.Errorf("Peak = %v, want event 2 at 6700 bytes", got)
		}
	}
	x0 := b.BlockAddr(0, 0)
	want := []Lifetime{
		{Addr: b.BlockAddr(0, 1), Size: 2000, Stack: stX1, Event: 1, Start: 1, End: 9},      // X1, live at the end
		{Addr: b.BlockAddr(0, 2), Size: 3000, Stack: stY, Event: 2, Start: 2, End: 4},       // Y
		{Addr: b.BlockAddr(0, 2) + 512, Size: 700, Stack: stZ, Event: 5, Start: -1, End: 5}, // Z
		{Addr: b.BlockAddr(0, 2), Size: 400, Stack: stW, Event: 6, Start: 6, End: 7},        // W
		{Addr: x0, Size: 1000, Stack: stX0, Event: -1, Start: -1, End: 9},                   // X0
	}
	if !slices.Equal(d.Lifetimes(), want) {
		t.Errorf("lifetimes\n%+v\nwant\n%+v", d.Lifetimes(), want)
	}
	sizes := func(ls []Lifetime) (out []int64) {
		for _, l := range ls {
			out = append(out, l.Size)
		}
		return out
	}
	if got := sizes(d.LiveAfter(-1)); !slices.Equal(got, []int64{700, 1000}) {
		t.Errorf("live before the first event %v, want Z 700 and X0 1000", got)
	}
	if got := sizes(d.LiveAfter(2)); !slices.Equal(got, []int64{2000, 3000, 700, 1000}) {
		t.Errorf("live at the peak %v, want X1, Y, Z, X0", got)
	}
	if none, err := ReplayDevice(context.Background(), b.S, 3); err != nil || len(none.Elements) != 0 || none.PeakIndex != -1 {
		t.Errorf("device without a trace: %+v, %v", none, err)
	}
}

// TestElementStacks: each element's Stack indexes the stack of the event or final-state block it came from (as
// Lifetime reads it there), its address is the origin's too, the stacks are distinct, and TraceCategory is the origin event's own category.
func TestElementStacks(t *testing.T) {
	b, _ := snapbuild.ReplayRules(stX0, stX1, stY, stZ, stW)
	loop := traingen.TrainingLoop{Iterations: 3, Layers: 3, WeightBytes: 2 << 20, ActivationBytes: 4 << 20, LogitsBytes: 8 << 20, Annotations: true}.Build()
	for name, s := range map[string]*snapshot.Snapshot{"replay rules": b.S, "training loop": loop} {
		d, err := ReplayDevice(context.Background(), s, 0)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[*snapshot.Stack]bool{}
		for _, st := range d.Stacks {
			if seen[st] {
				t.Errorf("%s: stack %p listed twice", name, st)
			}
			seen[st] = true
		}
		for i := range d.Elements {
			if got, want := d.Stack(i), d.Lifetime(i).Stack; got != want {
				t.Errorf("%s: element %d has stack %p, its origin %p", name, i, got, want)
			}
			if got, want := d.Addrs()[i], d.Lifetime(i).Addr; got != want || d.Addr(i) != want {
				t.Errorf("%s: element %d has address 0x%x (Addr 0x%x), its origin 0x%x", name, i, got, d.Addr(i), want)
			}
			if d.TraceCategory(i) != "" {
				t.Errorf("%s: element %d has category %q; no event carries one", name, i, d.TraceCategory(i))
			}
		}
	}
	// A profile_plot snapshot's category is its event's.
	s := b.S
	e := &s.DeviceTraces[0][2]
	e.Extra = snapshot.NewTraceTables(s).Extra(snapshot.TraceExtra{Category: "ACTIVATION"})
	d, err := ReplayDevice(context.Background(), s, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range d.Elements {
		want := ""
		if d.Event(i) == 2 {
			want = "ACTIVATION"
		}
		if got := d.TraceCategory(i); got != want {
			t.Errorf("element %d (event %d): category %q, want %q", i, d.Event(i), got, want)
		}
	}
}

// TestUseTimeline: Phases finds the fixture's three iterations without a replay (and none on a device without a
// trace), and a replay given a timeline hands that one to its DeviceTraces instead of finding its own.
func TestUseTimeline(t *testing.T) {
	s := traingen.TrainingLoop{Iterations: 3, Layers: 2, WeightBytes: 2 << 20, ActivationBytes: 4 << 20, LogitsBytes: 8 << 20, Annotations: true}.Build()
	found := Phases(s, 0)
	if len(found.Iterations) != 3 || !found.Training() {
		t.Fatalf("Phases found %d iterations (%s), want the fixture's 3 training iterations", len(found.Iterations), found.Source)
	}
	if none := Phases(s, 1); len(none.Iterations) != 0 || none.Source != "empty trace" {
		t.Errorf("a device without a trace: %+v", none)
	}
	tr, err := Run(context.Background(), s, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if own := tr.DeviceTrace().Timeline(); own == found || len(own.Iterations) != 3 {
		t.Errorf("a replay given no timeline: %d iterations, shared with Phases' %v", len(own.Iterations), own == found)
	}
	tr.UseTimeline(found)
	if got := tr.DeviceTrace().Timeline(); got != found {
		t.Error("a replay given a timeline found another")
	}
}

// TestWarnFirstWorded: every inconsistency reaches warn, the first of each kind with its example and the rest of
// that kind without one (wording each would cost more than the replay on a damaged trace).
func TestWarnFirstWorded(t *testing.T) {
	s := traingen.TrainingLoop{Iterations: 2, Layers: 2, WeightBytes: 2 << 20, ActivationBytes: 4 << 20, LogitsBytes: 8 << 20}.Build()
	tr := s.DeviceTraces[0]
	// Each alloc repeated at once: an alloc over a block still live, as many times as the trace allocates.
	var doubled []snapshot.TraceEntry
	allocs := 0
	for _, e := range tr {
		doubled = append(doubled, e)
		if e.Action == snapshot.ActionAlloc {
			doubled = append(doubled, e)
			allocs++
		}
	}
	s.DeviceTraces[0] = doubled
	var examples []string
	if _, err := Run(context.Background(), s, 0, func(kind, example string) {
		if kind == "alloc-over-live" {
			examples = append(examples, example)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if len(examples) != allocs {
		t.Fatalf("%d alloc-over-live warnings, want one per doubled alloc (%d)", len(examples), allocs)
	}
	if !strings.Contains(examples[0], "still allocated since event") {
		t.Errorf("first example %q is not worded", examples[0])
	}
	for i, ex := range examples[1:] {
		if ex != "" {
			t.Errorf("warning %d has example %q, want none after the first", i+2, ex)
		}
	}
}

func pair(i int, b int64) [2]int64 { return [2]int64{int64(i), b} }
