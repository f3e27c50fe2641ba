package analyze_test

import (
	"context"
	"strings"
	"testing"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/internal/snapbuild"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/snapshot"
)

// TestReplayPhantomFrees checks frees of addresses the trace never allocated. One inside a segment is an
// allocation from before the trace window (the viewer's rule) and counts from the start; 2,000 outside every
// segment are warned about, with the first one's event index, and add nothing (the report had them add 2,000
// phantom blocks to the peak).
func TestReplayPhantomFrees(t *testing.T) {
	const mib = 1 << 20
	st := snapbuild.Stack("train.py:10:step")
	build := func(phantoms int) *snapbuild.SnapBuilder {
		b := snapbuild.NewSnap(1)
		seg := b.Segment(snapbuild.SegOpts{}, snapbuild.Free(8*mib), snapbuild.Free(8*mib))
		b.Event(0,
			snapbuild.Ev(snapshot.ActionFreeCompleted, seg+8*mib, 2*mib, st), // allocated before the window
			snapbuild.Ev(snapshot.ActionAlloc, seg, 4*mib, st),
		)
		for k := range phantoms {
			b.Event(0, snapbuild.Ev(snapshot.ActionFreeCompleted, 0x10000000+uint64(k)<<20, mib, st))
		}
		b.Event(0, snapbuild.Ev(snapshot.ActionFreeCompleted, seg, 4*mib, st))
		return b
	}
	clean, err := analyze.Analyze(context.Background(), testutil.Input(build(0), "clean.pickle"), analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hostile, err := analyze.Analyze(context.Background(), testutil.Input(build(2000), "hostile.pickle"), analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// By hand: 2 MiB live before the window until event 0 frees it; then the 4 MiB alloc at event 1.
	const wantPeak = 4 * mib
	for _, r := range []*report.Report{clean, hostile} {
		if r.Peak == nil || r.Peak.Bytes != wantPeak || r.Peak.EventIndex != 1 {
			t.Errorf("%s: peak %+v, want %d bytes at event 1", r.File, r.Peak, wantPeak)
		}
		s, ok := r.Part.(*report.SnapshotReport)
		if !ok {
			t.Fatalf("%s: part %T", r.File, r.Part)
		}
		if len(s.Timeline) != 1 || s.Timeline[0].Allocated[0] != 0 {
			t.Errorf("%s: allocated after event 0 = %v, want 0 (the pre-window block freed)", r.File, s.Timeline)
		}
	}
	var warned string
	for _, w := range hostile.Warnings {
		if strings.Contains(w, "no segment covers") {
			warned = w
		}
	}
	want := "device 0 trace event 2: free_completed of 0x10000000 (1048576 bytes), an address the trace never allocated and no segment covers; ignored (and 1999 more like it)"
	if warned != want {
		t.Errorf("warning %q, want %q", warned, want)
	}
	for _, w := range clean.Warnings {
		if strings.Contains(w, "no segment covers") {
			t.Errorf("clean trace warned: %s", w)
		}
	}
}
