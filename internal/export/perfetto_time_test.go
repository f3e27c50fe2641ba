package export

import (
	"context"
	"slices"
	"testing"
)

// TestPerfettoTimeBase checks the trace's clock: counters and instants of a timed trace sit at the allocator's own
// time_us, the clock of the snapshot's annotations (record_function START/END) and of a Kineto trace of the same
// run, so that all three line up in Perfetto. Every expected time is read from the fixture's entries, not from
// the export.
func TestPerfettoTimeBase(t *testing.T) {
	s := fixtureSnapshot()
	tr := s.DeviceTraces[0]
	out, err := BuildTrace(context.Background(), s, TraceOptions{Classify: fixtureClassifier})
	if err != nil {
		t.Fatal(err)
	}
	times := map[int64]int{} // time_us → entry index
	for i, e := range tr {
		times[e.TimeUS] = i
	}
	type point struct {
		ts        int64
		allocated int64
	}
	var mem []point
	instants := map[string][]int64{}
	for _, e := range out.TraceEvents {
		switch {
		case e.Phase == "C" && e.Name == "GPU0 memory":
			mem = append(mem, point{e.TS, e.Args["allocated"].(int64)})
		case e.Phase == "i":
			instants[e.Name] = append(instants[e.Name], e.TS)
		}
	}
	if len(mem) < 3 {
		t.Fatalf("%d memory counters", len(mem))
	}
	// The state before the first entry sits one microsecond before it; every other counter at an entry's time_us.
	if mem[0].ts != tr[0].TimeUS-1 {
		t.Errorf("initial counter at %d, want %d (one before the first entry)", mem[0].ts, tr[0].TimeUS-1)
	}
	for _, p := range mem[1:] {
		if _, ok := times[p.ts]; !ok {
			t.Errorf("counter at %d is no entry's time_us (entries run from %d to %d)", p.ts, tr[0].TimeUS, tr[len(tr)-1].TimeUS)
			break
		}
	}
	if last := mem[len(mem)-1].ts; last != tr[len(tr)-1].TimeUS {
		t.Errorf("last counter at %d, want the last entry's time_us %d", last, tr[len(tr)-1].TimeUS)
	}
	// Entry 2 allocates 10,000,000 bytes: the counter at its time_us is exactly that much above the one before.
	at := func(ts int64) int { return slices.IndexFunc(mem, func(p point) bool { return p.ts == ts }) }
	if i := at(tr[2].TimeUS); i < 1 || mem[i].allocated-mem[i-1].allocated != tr[2].Size || mem[i-1].ts != tr[1].TimeUS {
		t.Errorf("no counter step of %d bytes at entry 2's time_us %d after entry 1's %d: %v", tr[2].Size, tr[2].TimeUS, tr[1].TimeUS, mem)
	}
	// The OOM (entry 6) and the snapshot (entry 10) are marked at their entries' times.
	if got := instants["OOM"]; len(got) != 1 || got[0] != tr[6].TimeUS {
		t.Errorf("OOM instants at %v, want [%d]", got, tr[6].TimeUS)
	}
	if got := instants["snapshot"]; len(got) != 1 || got[0] != tr[10].TimeUS {
		t.Errorf("snapshot instants at %v, want [%d]", got, tr[10].TimeUS)
	}
	// The annotation keeps its own time_us, which falls between entries 1 and 2: the memory counters around it are
	// those two entries'.
	ann := s.ExternalAnnotations[0]
	got := instants[ann.Name]
	if len(got) != 1 || got[0] != ann.TimeUS {
		t.Fatalf("annotation instants %v, want [%d]", got, ann.TimeUS)
	}
	before := slices.IndexFunc(mem, func(p point) bool { return p.ts > ann.TimeUS }) - 1
	if before < 0 || mem[before].ts != tr[1].TimeUS || mem[before+1].ts != tr[2].TimeUS {
		t.Errorf("annotation at %d is not between the counters of entries 1 (%d) and 2 (%d): %v", ann.TimeUS, tr[1].TimeUS, tr[2].TimeUS, mem)
	}
}
