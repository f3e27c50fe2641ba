package report

import "testing"

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
// so a report decoded from summary.json or msgpack gets its part back; with none set it is a snapshot.
func TestWirePartByField(t *testing.T) {
	tests := []struct {
		name string
		w    reportWire
		want string
	}{
		{"empty", reportWire{}, KindSnapshot},
		{"totals only", reportWire{wireHead: wireHead{Totals: Totals{ReservedBytes: 1}}}, KindSnapshot},
		{"tracer view", reportWire{wireTail: wireTail{Tracer: &TracerView{}}}, KindTracer},
		{"tracer numbers without a view", reportWire{wireTail: wireTail{PeakBytes: 5}}, KindSnapshot},
		{"memory timeline", reportWire{wireTail: wireTail{MemoryTimeline: &TimelineView{}}}, KindTimeline},
		{"log", reportWire{wireTail: wireTail{Log: &LogView{}}}, KindLog},
		{"tracer before timeline and log", reportWire{wireTail: wireTail{Tracer: &TracerView{}, MemoryTimeline: &TimelineView{}, Log: &LogView{}}}, KindTracer},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.w.report().Kind(); got != tc.want {
				t.Errorf("Kind() = %q, want %q", got, tc.want)
			}
		})
	}
}
