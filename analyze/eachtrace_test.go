package analyze

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/internal/gen"
	"github.com/memscan/memscan/internal/replay"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/snapshot"
)

// TestEachTraceAhead: replaying several devices side by side hands f the same replays in the same order, with the
// same warnings in the same order, as replaying them one after the other; and the iterations found beside a
// replay are those its own DeviceTrace finds.
func TestEachTraceAhead(t *testing.T) {
	s := testutil.Generated(t, gen.Config{Seed: 21, Entries: 6000, Devices: 4}).Snapshot
	// Devices 1 and 3 get an alloc over a live block (a warning naming the device: the report words the first
	// and counts the rest); device 2's trace is emptied, so that devices and trace positions differ.
	s.DeviceTraces[2] = nil
	for _, dev := range []int{1, 3} {
		tr := s.DeviceTraces[dev]
		for i, e := range tr {
			if e.Action == snapshot.ActionAlloc {
				s.DeviceTraces[dev] = append(tr[:i+1:i+1], append([]snapshot.TraceEntry{e}, tr[i+1:]...)...)
				break
			}
		}
	}
	type seen struct {
		dev, events, elements int
		peak                  int64
		iterations            int
	}
	run := func(ahead int) ([]seen, []string) {
		a := &analysis{ctx: context.Background(), snap: s, cat: categorize.NewCategorizer(nil), warns: newWarnings()}
		var got []seen
		err := a.eachTrace(ahead, func(dev int) bool { return dev != 1 }, func(dev int, tr *replay.Trace) {
			d := tr.DeviceTrace()
			_, peak := tr.PeakIndex()
			got = append(got, seen{dev, len(tr.Events), len(tr.Elements), peak, len(d.Timeline().Iterations)})
			if fresh, err := replay.Run(context.Background(), s, dev, nil); err != nil || !reflect.DeepEqual(d.Timeline(), fresh.DeviceTrace().Timeline()) {
				t.Errorf("ahead %d: device %d's timeline differs from a fresh replay's (%v)", ahead, dev, err)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		return got, a.warns.lines()
	}
	want, wantWarns := run(1)
	if len(want) != 3 || want[0].dev != 0 || want[1].dev != 1 || want[2].dev != 3 {
		t.Fatalf("one at a time: devices %+v, want 0, 1 and 3", want)
	}
	if len(wantWarns) != 1 || !strings.HasPrefix(wantWarns[0], "device 1 trace event") || !strings.HasSuffix(wantWarns[0], "(and 1 more like it)") {
		t.Fatalf("one at a time: warnings %q, want device 1's worded and device 3's counted", wantWarns)
	}
	for _, ahead := range []int{2, 4, 8} {
		got, warns := run(ahead)
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(warns, wantWarns) {
			t.Errorf("ahead %d: %+v, warnings %q; one at a time: %+v, %q", ahead, got, warns, want, wantWarns)
		}
	}
}
