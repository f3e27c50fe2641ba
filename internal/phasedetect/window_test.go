package phasedetect

import (
	"slices"
	"testing"

	"github.com/memscan/memscan/snapshot"
)

// TestAnnotatedWindowEdges: an event belongs to a record_function window when its time lies in [START, END], both
// ends included, so an allocation stamped with the very microsecond the window closes (or opens) is inside it.
// Events at 100, 110, 120, 130 and 140 µs.
func TestAnnotatedWindowEdges(t *testing.T) {
	var trace []snapshot.TraceEntry
	for i := range 5 {
		trace = append(trace, snapshot.TraceEntry{Action: snapshot.ActionAlloc, TimeUS: int64(100 + 10*i), HasTime: true})
	}
	const step = "Optimizer.step#AdamW.step"
	ann := func(start, end int64) []snapshot.Annotation {
		return []snapshot.Annotation{{Stage: "START", Name: step, TimeUS: start}, {Stage: "END", Name: step, TimeUS: end}}
	}
	for _, tc := range []struct {
		name       string
		start, end int64
		want       window
	}{
		{"ends exactly on an event", 105, 130, window{1, 4}},
		{"starts exactly on an event", 110, 125, window{1, 3}},
		{"both ends on events", 110, 130, window{1, 4}},
		{"between events", 115, 125, window{2, 3}},
		{"ends on the last event", 100, 140, window{0, 5}},
	} {
		for _, ordered := range []bool{false, true} {
			got := annotated(trace, ann(tc.start, tc.end), 0, ordered, "Optimizer.step")[0]
			if !slices.Equal(got, []window{tc.want}) {
				t.Errorf("%s (ordered %v): [%d, %d] µs covers events %v, want %v", tc.name, ordered, tc.start, tc.end, got, []window{tc.want})
			}
		}
	}
}
