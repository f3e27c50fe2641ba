package analyze

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/memscan/memscan/report"
)

// TestReportPart analyzes one committed input of each kind and checks that its Part is that kind's part, with the
// view the wire form tells the kind by, and that the kind-independent accessors read that part: allocator totals
// only for a snapshot.
func TestReportPart(t *testing.T) {
	tests := []struct {
		file string
		kind string
		// view is the part's field that marks the kind on the wire (nil for a snapshot, which has none).
		view func(report.Part) any
	}{
		{"../testdata/example/rank0_memory_snapshot.pickle", report.KindSnapshot, nil},
		{"../tracer/testdata/small_rank0.json", report.KindTracer, func(p report.Part) any { return p.(*report.TracerReport).Tracer }},
		{"../memtimeline/testdata/small_memory_timeline.json", report.KindTimeline, func(p report.Part) any { return p.(*report.TimelineReport).MemoryTimeline }},
		{"../trainlog/testdata/megatron.log", report.KindLog, func(p report.Part) any { return p.(*report.LogReport).Log }},
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
			if s, snapshot := r.Part.(*report.SnapshotReport); snapshot {
				if !ok || totals != s.Totals || totals.ReservedBytes == 0 || !reflect.DeepEqual(r.OOMs(), s.OOMs) {
					t.Errorf("AllocatorTotals() = %+v, %v; OOMs() = %v; want the part's %+v, %v", totals, ok, r.OOMs(), s.Totals, s.OOMs)
				}
			} else if ok || totals != (report.Totals{}) || r.OOMs() != nil {
				t.Errorf("a %s report has allocator totals %+v (%v) or OOMs %v", tc.kind, totals, ok, r.OOMs())
			}
		})
	}
}

// partOf returns r's part as a P, failing the test when r is of another kind.
func partOf[P report.Part](t testing.TB, r *report.Report) P {
	t.Helper()
	p, ok := r.Part.(P)
	if !ok {
		t.Fatalf("%s: part is %T, want %T", r.File, r.Part, p)
	}
	return p
}
