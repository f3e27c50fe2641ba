package report

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"

	"github.com/memscan/memscan/phases"
)

// TestIterationRowJSONByHand: a row's hand-written JSON is byte for byte what encoding/json writes for its fields
// with HTML escaping off, for zero and extreme values, unseen phases and names that need escaping.
func TestIterationRowJSONByHand(t *testing.T) {
	type plain IterationRow // the fields without the method
	for _, r := range []IterationRow{
		{},
		{Phases: []PhaseEnd{}},
		{Device: 1, Iteration: 2, Complete: true, PeakAllocatedBytes: 1 << 40, PeakRequestedBytes: 5, PeakReservedBytes: 6, PeakEvent: 7, PeakPhase: "backward",
			Phases: []PhaseEnd{
				{Phase: "forward", Span: phases.Span{Start: 0, End: 10, StartUS: 3, EndUS: 9}, AllocatedBytes: 4, RequestedBytes: 3, ReservedBytes: 8},
				{Phase: "optimizer", Span: phases.NoSpan, RequestedBytes: -1}}},
		{Device: -1, Iteration: math.MaxInt, PeakAllocatedBytes: math.MinInt64, PeakRequestedBytes: math.MaxInt64, PeakEvent: -1,
			PeakPhase: "a <b> & \"c\"\\\n\u00e9\u2028\x7f", Phases: []PhaseEnd{{Phase: "<p>\t"}}},
	} {
		got, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(plain(r)); err != nil {
			t.Fatal(err)
		}
		if w := bytes.TrimSuffix(want.Bytes(), []byte("\n")); !bytes.Equal(got, w) {
			t.Errorf("row %d:\n got %s\nwant %s", r.Iteration, got, w)
		}
	}
}
