package allocator

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/snapbuild"
	"github.com/memscan/memscan/snapshot"
)

// Trace-building shorthands: addresses are the real allocator's, sizes requested bytes (segment bytes for segment
// events).
func tAlloc(addr uint64, size int64) snapshot.TraceEntry {
	return snapshot.TraceEntry{Action: snapshot.ActionAlloc, Addr: addr, Size: size}
}

func tFree(addr uint64, size int64) []snapshot.TraceEntry {
	return []snapshot.TraceEntry{{Action: snapshot.ActionFreeRequested, Addr: addr, Size: size}, {Action: snapshot.ActionFreeCompleted, Addr: addr, Size: size}}
}

func tSeg(a snapshot.Action, addr uint64, size int64) snapshot.TraceEntry {
	return snapshot.TraceEntry{Action: a, Addr: addr, Size: size}
}

// testExtras is the extras table of the hand-made traces: an oom event names entry 1.
var testExtras = []snapshot.TraceExtra{{}, {DeviceFree: 5 * MiB}}

func trace(parts ...any) []snapshot.TraceEntry {
	var out []snapshot.TraceEntry
	for _, p := range parts {
		switch v := p.(type) {
		case snapshot.TraceEntry:
			out = append(out, v)
		case []snapshot.TraceEntry:
			out = append(out, v...)
		}
	}
	return out
}

const (
	segA = uint64(0x7f0000000000)
	segB = uint64(0x7eff00000000)
	segC = uint64(0x7efe00000000)
)

// TestReplayTraces drives the trace driver with hand-made traces: which runs of segment frees are empty_cache
// calls, the capacity an oom implies, and what the replay reports.
func TestReplayTraces(t *testing.T) {
	sa, sf, so := snapshot.ActionSegmentAlloc, snapshot.ActionSegmentFree, snapshot.ActionOOM
	cases := []struct {
		name          string
		trace         []snapshot.TraceEntry
		capacity      int64 // RecordOptions / ReplayOptions capacity
		settings      Config
		wantEmpty     []int
		wantPeak      int64
		wantCreated   string
		wantCapacity  int64
		wantSource    string
		wantPartial   string // substring of the partial reason; "" for a complete replay
		wantOOMs      int    // reproduced oom events
		wantDivergent bool
	}{
		{
			// A segment free followed by the program's next alloc is an empty_cache call.
			name: "empty_cache call",
			trace: trace(tSeg(sa, segA, 20*MiB), tAlloc(segA, 5*MiB), tFree(segA, 5*MiB), tSeg(sf, segA, 20*MiB),
				tSeg(sa, segB, 20*MiB), tAlloc(segB, 5*MiB)),
			wantEmpty: []int{4}, wantPeak: 20 * MiB, wantCreated: "A20M A20M", wantSource: "none (unlimited)",
		},
		{
			// Capacity 30 MiB: 12 MiB (cached) + 14 MiB reserved and a 16 MiB segment next: the free is the
			// retry path, which the model must produce itself.
			name: "retry path with a known capacity",
			trace: trace(tSeg(sa, segA, 12*MiB), tAlloc(segA, 12*MiB), tSeg(sa, segB, 14*MiB), tAlloc(segB, 14*MiB),
				tFree(segA, 12*MiB), tSeg(sf, segA, 12*MiB), tSeg(sa, segC, 16*MiB), tAlloc(segC, 16*MiB)),
			capacity: 30 * MiB, wantPeak: 30 * MiB, wantCreated: "A12M A14M A16M", wantCapacity: 30 * MiB, wantSource: "input",
		},
		{
			// The same trace without a capacity: the frees fit an empty_cache call, replayed as one; same peak.
			name: "unknown capacity prefers empty_cache",
			trace: trace(tSeg(sa, segA, 12*MiB), tAlloc(segA, 12*MiB), tSeg(sa, segB, 14*MiB), tAlloc(segB, 14*MiB),
				tFree(segA, 12*MiB), tSeg(sf, segA, 12*MiB), tSeg(sa, segC, 16*MiB), tAlloc(segC, 16*MiB)),
			wantEmpty: []int{6}, wantPeak: 30 * MiB, wantCreated: "A12M A14M A16M", wantSource: "none (unlimited)",
		},
		{
			// Capacity 100 MiB: the new segment would have fit without the frees, so they were empty_cache.
			name: "known capacity, new segment fits: empty_cache",
			trace: trace(tSeg(sa, segA, 12*MiB), tAlloc(segA, 12*MiB), tSeg(sa, segB, 14*MiB), tAlloc(segB, 14*MiB),
				tFree(segA, 12*MiB), tSeg(sf, segA, 12*MiB), tSeg(sa, segC, 16*MiB), tAlloc(segC, 16*MiB)),
			capacity: 100 * MiB, wantEmpty: []int{6}, wantPeak: 30 * MiB, wantCreated: "A12M A14M A16M", wantCapacity: 100 * MiB, wantSource: "input",
		},
		{
			// Recorded with garbage collection active (threshold and fraction): frees right before a new segment
			// are the model's own GC, not empty_cache. (The fraction of the default 80 GiB is far above this
			// trace, so the replay's GC frees nothing and the baseline departs from the recording.)
			name: "garbage collection frees are the model's own",
			trace: trace(tSeg(sa, segA, 12*MiB), tAlloc(segA, 12*MiB), tFree(segA, 12*MiB), tSeg(sf, segA, 12*MiB),
				tSeg(sa, segB, 16*MiB), tAlloc(segB, 16*MiB)),
			settings: Config{GarbageCollectionThreshold: 0.5, PerProcessMemoryFraction: 0.5},
			wantPeak: 28 * MiB, wantCreated: "A12M A16M", wantSource: "none (unlimited)", wantDivergent: true,
		},
		{
			// 20 MiB reserved and 5 MiB free on the device: capacity 25 MiB; a 16 MiB request needs a 16 MiB
			// segment and must fail.
			name: "oom event",
			trace: trace(tSeg(sa, segA, 20*MiB), tAlloc(segA, 5*MiB),
				snapshot.TraceEntry{Action: so, Size: 16 * MiB, Extra: 1}), // testExtras[1]: 5 MiB free
			wantPeak: 20 * MiB, wantCreated: "A20M", wantCapacity: 25 * MiB, wantSource: "oom event", wantOOMs: 1,
		},
		{
			name:     "free of an address never allocated",
			trace:    trace(tSeg(sa, segA, 20*MiB), tAlloc(segA, 5*MiB), tFree(segB, 5*MiB)),
			wantPeak: 20 * MiB, wantCreated: "A20M", wantSource: "none (unlimited)",
			wantPartial: "event 3: 1 allocations freed in the trace were never allocated in it",
		},
		{
			// The start state gets the 20 MiB segment the trace frees; the 5 MiB request reuses it instead of
			// the trace's new segment, so the replay also diverges from the recording.
			name:      "segment free of a segment never allocated",
			trace:     trace(tSeg(sa, segA, 20*MiB), tAlloc(segA, 5*MiB), tSeg(sf, segB, 20*MiB)),
			wantEmpty: []int{2}, wantPeak: 20 * MiB, wantCreated: "", wantSource: "none (unlimited)",
			wantPartial: "event 2: 1 segments freed in the trace were never allocated in it", wantDivergent: true,
		},
		{
			name:     "alloc at a live address",
			trace:    trace(tSeg(sa, segA, 20*MiB), tAlloc(segA, 5*MiB), tAlloc(segA, 5*MiB)),
			wantPeak: 20 * MiB, wantCreated: "A20M", wantSource: "none (unlimited)",
			wantPartial: "event 2: alloc at 0x7f0000000000, which is still allocated",
		},
		{
			// The trace says a 2 MiB segment where the model needs 20 MiB: reserved diverges at the alloc.
			name:     "segment event contradicting the model",
			trace:    trace(tSeg(sa, segA, 2*MiB), tAlloc(segA, 5*MiB)),
			wantPeak: 20 * MiB, wantCreated: "A20M", wantSource: "none (unlimited)", wantDivergent: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := Record(tc.trace, RecordOptions{Capacity: tc.capacity, Settings: tc.settings, Extras: testExtras})
			if !slices.Equal(rec.EmptyCaches, tc.wantEmpty) {
				t.Errorf("empty_cache calls at %v, want %v", rec.EmptyCaches, tc.wantEmpty)
			}
			res, err := Replay(context.Background(), rec, tc.settings, ReplayOptions{Capacity: tc.capacity})
			if err != nil {
				t.Fatal(err)
			}
			if res.PeakReserved != tc.wantPeak {
				t.Errorf("peak %d, want %d", res.PeakReserved, tc.wantPeak)
			}
			if got := evs(res.Created); got != tc.wantCreated {
				t.Errorf("created %q, want %q", got, tc.wantCreated)
			}
			if res.Capacity != tc.wantCapacity || res.CapacitySource != tc.wantSource {
				t.Errorf("capacity %d (%s), want %d (%s)", res.Capacity, res.CapacitySource, tc.wantCapacity, tc.wantSource)
			}
			if tc.wantPartial == "" && res.Partial {
				t.Errorf("partial: %s", res.PartialReason())
			}
			if tc.wantPartial != "" && (!res.Partial || !strings.Contains(res.PartialReason(), tc.wantPartial)) {
				t.Errorf("partial %v %q, want it to say %q", res.Partial, res.PartialReason(), tc.wantPartial)
			}
			reproduced := 0
			for _, o := range res.OOMs {
				if o.Reproduced {
					reproduced++
				}
			}
			if reproduced != tc.wantOOMs || len(res.OOMs) != tc.wantOOMs {
				t.Errorf("ooms %+v, want %d reproduced", res.OOMs, tc.wantOOMs)
			}
			if (res.FirstDivergence >= 0) != tc.wantDivergent {
				t.Errorf("first divergence %d, want divergent %v", res.FirstDivergence, tc.wantDivergent)
			}
		})
	}
}

// TestReplayPartialStart rebuilds the state before a trace that begins after an allocation was made: the final
// segment holds a 5 MiB block the trace frees and a 4 MiB block it allocates there again.
func TestReplayPartialStart(t *testing.T) {
	b := snapbuild.NewSnap(1)
	base := b.Segment(snapbuild.SegOpts{}, snapbuild.Live(4*MiB, 4*MiB, nil), snapbuild.Free(16*MiB))
	b.Event(0, snapbuild.Ev(snapshot.ActionFreeRequested, base, 5*MiB, nil), snapbuild.Ev(snapshot.ActionFreeCompleted, base, 5*MiB, nil))
	b.Event(0, snapbuild.Ev(snapshot.ActionAlloc, base, 4*MiB, nil))
	sr, err := ReplaySnapshot(context.Background(), b.S, 0, &Config{ExpandableSegments: true}, ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec, base0 := sr.Recording, sr.Baseline
	if !rec.Partial || rec.InitialReserved != 20*MiB {
		t.Fatalf("partial %v, initial reserved %d; want partial from 20 MiB", rec.Partial, rec.InitialReserved)
	}
	if !strings.Contains(base0.PartialReason(), "starts after 20.0 MiB of segments were already reserved") ||
		!strings.Contains(base0.PartialReason(), "event 1: 1 allocations freed in the trace were never allocated in it") {
		t.Errorf("reason %q", base0.PartialReason())
	}
	// The rebuilt block is freed and merged, and the 4 MiB request reuses the segment at the recorded address.
	if base0.PeakReserved != 20*MiB || len(base0.Created) != 0 || base0.AddressMismatches != 0 || base0.FirstDivergence != -1 {
		t.Errorf("baseline peak %d, created %d, address mismatches %d, divergence %d", base0.PeakReserved, len(base0.Created), base0.AddressMismatches, base0.FirstDivergence)
	}
	if base0.FinalReserved != 20*MiB || base0.FinalAllocated != 4*MiB {
		t.Errorf("final reserved %d allocated %d", base0.FinalReserved, base0.FinalAllocated)
	}
	if sr.WhatIf == nil || !sr.WhatIf.Partial {
		t.Errorf("what-if must be partial too")
	}
}

func TestReservedAt(t *testing.T) {
	tl := Timeline{{Index: -1, Reserved: 5}, {Index: 3, Reserved: 9}, {Index: 7, Reserved: 4}}
	got := tl.ReservedAt([]int{-1, 0, 2, 3, 6, 7, 100})
	if want := []int64{5, 5, 5, 9, 9, 4, 4}; !slices.Equal(got, want) {
		t.Errorf("ReservedAt = %v, want %v", got, want)
	}
}

func TestFirstSizeMismatch(t *testing.T) {
	a20, a12, m20 := SegmentEvent{Kind: SegmentAlloc, Size: 20 * MiB}, SegmentEvent{Kind: SegmentAlloc, Size: 12 * MiB}, SegmentEvent{Kind: SegmentMap, Size: 20 * MiB}
	for _, tc := range []struct {
		name string
		a, b []SegmentEvent
		want int
	}{
		{"both empty", nil, nil, -1},
		{"same", []SegmentEvent{a20, a12}, []SegmentEvent{a20, a12}, -1},
		{"address does not count", []SegmentEvent{a20}, []SegmentEvent{{Kind: SegmentAlloc, Size: 20 * MiB, Addr: 1 << 40}}, -1},
		{"size", []SegmentEvent{a20, a12}, []SegmentEvent{a20, a20}, 1},
		{"kind", []SegmentEvent{a20}, []SegmentEvent{m20}, 0},
		{"first shorter", []SegmentEvent{a20}, []SegmentEvent{a20, a12}, 1},
		{"second shorter", []SegmentEvent{a20, a12}, nil, 0},
	} {
		if got := FirstSizeMismatch(tc.a, tc.b); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
