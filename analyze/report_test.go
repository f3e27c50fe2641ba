package analyze

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
)

// TestReportPart analyzes one committed input of each kind and checks that its Part is that kind's part, with the
// view the wire form tells the kind by, and that the kind-independent accessors read that part: allocator totals
// only for a snapshot.
func TestReportPart(t *testing.T) {
	tests := []struct {
		file string
		kind string
		// view is the part's field that marks the kind on the wire (nil for a snapshot, which has none).
		view func(Part) any
	}{
		{"../testdata/example/rank0_memory_snapshot.pickle", KindSnapshot, nil},
		{"../tracer/testdata/small_rank0.json", KindTracer, func(p Part) any { return p.(*TracerReport).Tracer }},
		{"../memtimeline/testdata/small_memory_timeline.json", KindTimeline, func(p Part) any { return p.(*TimelineReport).MemoryTimeline }},
		{"../trainlog/testdata/megatron.log", KindLog, func(p Part) any { return p.(*LogReport).Log }},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			r, err := AnalyzeFile(context.Background(), tc.file, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Part == nil || r.Part.Kind() != tc.kind || r.Kind() != tc.kind {
				t.Fatalf("Part = %T, Kind() = %q, want a %s part", r.Part, r.Kind(), tc.kind)
			}
			if tc.view != nil && reflect.ValueOf(tc.view(r.Part)).IsNil() {
				t.Errorf("a %s report without its view: the wire form would read it back as a snapshot", tc.kind)
			}
			totals, ok := r.AllocatorTotals()
			if s, snapshot := r.Part.(*SnapshotReport); snapshot {
				if !ok || totals != s.Totals || totals.ReservedBytes == 0 || !reflect.DeepEqual(r.OOMs(), s.OOMs) {
					t.Errorf("AllocatorTotals() = %+v, %v; OOMs() = %v; want the part's %+v, %v", totals, ok, r.OOMs(), s.Totals, s.OOMs)
				}
			} else if ok || totals != (Totals{}) || r.OOMs() != nil {
				t.Errorf("a %s report has allocator totals %+v (%v) or OOMs %v", tc.kind, totals, ok, r.OOMs())
			}
		})
	}
}

// TestReportWithoutPart: a Report nobody filled has no kind, no totals and no OOMs, rather than a panic.
func TestReportWithoutPart(t *testing.T) {
	var r Report
	if _, ok := r.AllocatorTotals(); r.Kind() != "" || ok || r.OOMs() != nil {
		t.Errorf("Kind() = %q, AllocatorTotals ok %v, OOMs %v", r.Kind(), ok, r.OOMs())
	}
	if p, ok := r.RecordedPeak(); ok || p != 0 {
		t.Errorf("RecordedPeak() = %d, %v", p, ok)
	}
}

// TestWirePartByField: the flat wire form names no kind; the view each non-snapshot part always sets tells it,
// so a report decoded from summary.json or report.msgpack gets its part back; with none set it is a snapshot.
func TestWirePartByField(t *testing.T) {
	tests := []struct {
		name string
		w    reportWire
		want string
	}{
		{"empty", reportWire{}, KindSnapshot},
		{"totals only", reportWire{Totals: Totals{ReservedBytes: 1}}, KindSnapshot},
		{"tracer view", reportWire{Tracer: &TracerView{}}, KindTracer},
		{"tracer numbers without a view", reportWire{PeakBytes: 5}, KindSnapshot},
		{"memory timeline", reportWire{MemoryTimeline: &TimelineView{}}, KindTimeline},
		{"log", reportWire{Log: &LogView{}}, KindLog},
		{"tracer before timeline and log", reportWire{Tracer: &TracerView{}, MemoryTimeline: &TimelineView{}, Log: &LogView{}}, KindTracer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.w.report().Kind(); got != tc.want {
				t.Errorf("Kind() = %q, want %q", got, tc.want)
			}
		})
	}
}

// partOf returns r's part as a P, failing the test when r is of another kind.
func partOf[P Part](t testing.TB, r *Report) P {
	t.Helper()
	p, ok := r.Part.(P)
	if !ok {
		t.Fatalf("%s: part is %T, want %T", r.File, r.Part, p)
	}
	return p
}
