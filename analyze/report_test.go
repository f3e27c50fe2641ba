package analyze

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"
)

// TestReportPart analyzes one committed input of each kind and checks that Part is that kind's part of the report
// itself (not a copy), and that every other part is zero: the renderers read only the part Part returns, so an
// analyzer that filled another part's fields would have them silently left out of every report.
func TestReportPart(t *testing.T) {
	tests := []struct {
		file string
		kind string
		// part is the embedded field that the kind fills, by address.
		part func(*Report) Part
	}{
		{"../testdata/example/rank0_memory_snapshot.pickle", KindSnapshot, func(r *Report) Part { return &r.SnapshotReport }},
		{"../tracer/testdata/small_rank0.json", KindTracer, func(r *Report) Part { return &r.TracerReport }},
		{"../memtimeline/testdata/small_memory_timeline.json", KindTimeline, func(r *Report) Part { return &r.TimelineReport }},
		{"../trainlog/testdata/megatron.log", KindLog, func(r *Report) Part { return &r.LogReport }},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			r, err := AnalyzeFile(context.Background(), tc.file, Options{})
			if err != nil {
				t.Fatal(err)
			}
			p := r.Part()
			if p != tc.part(r) {
				t.Fatalf("Part() = %T %p, want the report's own %s part %p", p, p, tc.kind, tc.part(r))
			}
			if p.Kind() != tc.kind || r.Kind() != tc.kind {
				t.Errorf("Part().Kind() = %q, Kind() = %q, want %q", p.Kind(), r.Kind(), tc.kind)
			}
			for _, other := range []Part{&r.SnapshotReport, &r.TracerReport, &r.TimelineReport, &r.LogReport} {
				if other != p && !reflect.ValueOf(other).Elem().IsZero() {
					t.Errorf("a %s report has a non-zero %s part: %+v", tc.kind, other.Kind(), other)
				}
			}
		})
	}
}

// TestReportPartByField: the kind follows from the one view each non-snapshot part always sets, so a report
// decoded from summary.json or report.msgpack gets its part back; with none set it is a snapshot.
func TestReportPartByField(t *testing.T) {
	tests := []struct {
		name string
		r    Report
		want string
	}{
		{"empty", Report{}, KindSnapshot},
		{"totals only", Report{SnapshotReport: SnapshotReport{Totals: Totals{ReservedBytes: 1}}}, KindSnapshot},
		{"tracer view", Report{TracerReport: TracerReport{Tracer: &TracerView{}}}, KindTracer},
		{"tracer numbers without a view", Report{TracerReport: TracerReport{PeakBytes: 5}}, KindSnapshot},
		{"memory timeline", Report{TimelineReport: TimelineReport{MemoryTimeline: &TimelineView{}}}, KindTimeline},
		{"log", Report{LogReport: LogReport{Log: &LogView{}}}, KindLog},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.Part().Kind(); got != tc.want {
				t.Errorf("Part().Kind() = %q, want %q", got, tc.want)
			}
		})
	}
}
