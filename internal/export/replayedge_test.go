package export

import (
	"context"
	"testing"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/snapshot"
)

// The pprof and perfetto exports replay traces with replay.ReplayDevice, so they agree with memscan's report on
// the edge cases where export's former replay did not. Every expected number is derived by hand below.

// counterArgs returns the args of the counter events named name, in order.
func counterArgs(t *testing.T, tr *Trace, name string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, e := range tr.TraceEvents {
		if e.Phase == "C" && e.Name == name {
			out = append(out, e.Args)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no %q counters", name)
	}
	return out
}

// TestPeakTieTakesTheEvent: when the state before the first event equals the highest state after an event, the
// peak is that event (as analyze's Peak.EventIndex), not the initial state.
func TestPeakTieTakesTheEvent(t *testing.T) {
	s := &snapshot.Snapshot{
		Segments: []snapshot.Segment{{Device: 0, Address: 0x1000, TotalSize: 4096, Stream: 0, Type: snapshot.SegmentSmall,
			Blocks: []snapshot.Block{
				{Address: 0x1000, Size: 512, RequestedSize: 100, State: snapshot.BlockActiveAllocated, Stack: stackModel},
				{Address: 0x2000, Size: 512, RequestedSize: 60, State: snapshot.BlockActiveAllocated, Stack: stackModel},
			}}},
		TraceStacks: fixtureStacks,
		DeviceTraces: [][]snapshot.TraceEntry{{
			{Action: snapshot.ActionFreeCompleted, Addr: 0x3000, Size: 60, Stack: refOpt}, // allocated before the trace
			{Action: snapshot.ActionAlloc, Addr: 0x2000, Size: 60, Stack: refModel},
		}},
	}
	ctx := context.Background()
	// Before the trace: the block at 0x1000 (100, never in the trace) + the one freed at event 0 (60) = 160.
	// After event 0: 160 − 60 = 100. After event 1: 100 + 60 = 160, a tie with the initial state: the peak is
	// event 1, live = 0x1000 (100, activation) + 0x2000 (60, activation); optimizer holds nothing there.
	rep, err := analyze.AnalyzeSnapshot(ctx, s, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Peak == nil || rep.Peak.EventIndex != 1 || rep.Peak.Bytes != 160 {
		t.Fatalf("analysis peak %+v, want event 1 with 160 bytes", rep.Peak)
	}
	p, err := BuildProfile(ctx, s, ProfileOptions{At: AtPeak, Classify: fixtureClassifier})
	if err != nil {
		t.Fatal(err)
	}
	var objs, total int64
	byCat := map[string]int64{}
	for _, smp := range p.Sample {
		objs += smp.Value[0]
		total += smp.Value[1]
		byCat[smp.Label["category"][0]] += smp.Value[1]
	}
	if objs != 2 || total != 160 || byCat["activation"] != 160 || byCat["optimizer"] != 0 {
		t.Errorf("profile at peak: %d objects, %d bytes, by category %v; want 2, 160, activation 160", objs, total, byCat)
	}
}

// TestNegativeStartingReservedClamps: segment events that allocate more than the final state holds would put the
// reserved bytes below zero before the trace; the replay starts them at 0.
func TestNegativeStartingReservedClamps(t *testing.T) {
	s := &snapshot.Snapshot{
		Segments: []snapshot.Segment{{Device: 0, Address: 0x7f0000000000, TotalSize: 2 * mib, Stream: 0, Type: snapshot.SegmentLarge,
			Blocks: []snapshot.Block{{Address: 0x7f0000000000, Size: 2 * mib, State: snapshot.BlockInactive}}}},
		TraceStacks: fixtureStacks,
		DeviceTraces: [][]snapshot.TraceEntry{{
			{Action: snapshot.ActionSegmentAlloc, Addr: 0x7f0000400000, Size: 4 * mib, Stack: refOpt},
			{Action: snapshot.ActionAlloc, Addr: 0x7f0000400000, Size: 500, Stack: refModel},
			{Action: snapshot.ActionFreeRequested, Addr: 0x7f0000400000, Size: 500, Stack: refModel},
			{Action: snapshot.ActionFreeCompleted, Addr: 0x7f0000400000, Size: 500, Stack: refModel},
		}},
	}
	tr, err := BuildTrace(context.Background(), s, TraceOptions{Classify: fixtureClassifier})
	if err != nil {
		t.Fatal(err)
	}
	// Reserved before the trace: 2 MiB final − 4 MiB allocated in the trace = −2 MiB, clamped to 0; after event 0
	// it is 0 + 4 MiB = 4 MiB and stays there. Allocated: 0, then 500 after event 1, 0 again after event 3.
	type point struct{ alloc, reserved int64 }
	var got []point
	for _, a := range counterArgs(t, tr, "GPU0 memory") {
		got = append(got, point{a["allocated"].(int64), a["reserved"].(int64)})
	}
	want := []point{{0, 0}, {0, 4 * mib}, {500, 4 * mib}, {0, 4 * mib}, {0, 4 * mib}}
	if len(got) != len(want) {
		t.Fatalf("memory counters %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("memory counter %d: %v, want %v", i, got[i], want[i])
		}
	}
}

// TestAllocOverLiveMovesCategory: an alloc at an address still live without a recorded free ends the old
// allocation there, so its bytes leave its own category and the new one's bytes join theirs.
func TestAllocOverLiveMovesCategory(t *testing.T) {
	s := &snapshot.Snapshot{
		Segments: []snapshot.Segment{{Device: 0, Address: 0x1000, TotalSize: 4096, Stream: 0, Type: snapshot.SegmentSmall,
			Blocks: []snapshot.Block{{Address: 0x1000, Size: 512, RequestedSize: 400, State: snapshot.BlockActiveAllocated, Stack: stackModel}}}},
		TraceStacks: fixtureStacks,
		DeviceTraces: [][]snapshot.TraceEntry{{
			{Action: snapshot.ActionAlloc, Addr: 0x1000, Size: 1000, Stack: refOpt},
			{Action: snapshot.ActionAlloc, Addr: 0x1000, Size: 400, Stack: refModel},
		}},
	}
	tr, err := BuildTrace(context.Background(), s, TraceOptions{Classify: fixtureClassifier})
	if err != nil {
		t.Fatal(err)
	}
	// Before the trace nothing is live. After event 0: optimizer 1000. After event 1 the optimizer allocation has
	// ended (1000 − 1000 = 0) and activation holds the new one (0 + 400 = 400); allocated is 0 + 400 = 400. The
	// last counter is the final state again.
	cats := counterArgs(t, tr, "GPU0 by category")
	want := []map[string]int64{
		{"activation": 0, "optimizer": 0},
		{"activation": 0, "optimizer": 1000},
		{"activation": 400, "optimizer": 0},
		{"activation": 400, "optimizer": 0},
	}
	if len(cats) != len(want) {
		t.Fatalf("%d category counters %v, want %d", len(cats), cats, len(want))
	}
	for i, w := range want {
		if len(cats[i]) != len(w) {
			t.Errorf("category counter %d: %v, want %v", i, cats[i], w)
		}
		for c, v := range w {
			if got, _ := cats[i][c].(int64); got != v {
				t.Errorf("category counter %d: %s = %v, want %d", i, c, cats[i][c], v)
			}
		}
	}
	mem := counterArgs(t, tr, "GPU0 memory")
	if a := mem[len(mem)-1]["allocated"].(int64); a != 400 {
		t.Errorf("final allocated %d, want 400", a)
	}
}
