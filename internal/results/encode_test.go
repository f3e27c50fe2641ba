package results

import (
	"bytes"
	"testing"

	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/phases"
	"github.com/memscan/memscan/report"
)

// iterationsRun is a snapshot whose trace has training and inference iterations, spans with and without times,
// an iteration table, a missing input and a failure: every shape of the summary's per-iteration lists.
func iterationsRun() *report.Run {
	sp := func(a, b int, us int64) phases.Span {
		return phases.Span{Start: a, End: b, StartUS: us * int64(a), EndUS: us * int64(b)}
	}
	prefill, decode := sp(40, 50, 0), sp(50, 70, 0)
	its := []phases.Iteration{
		{Index: 1, Span: sp(0, 30, 10), Forward: sp(0, 10, 10), Backward: sp(10, 20, 10), Optimizer: sp(20, 30, 10), Complete: true},
		{Index: 2, Span: sp(30, 40, 0), Forward: sp(30, 40, 0), Backward: phases.NoSpan, Optimizer: phases.NoSpan},
		{Index: 3, Span: sp(40, 70, 0), Forward: sp(40, 70, 0), Backward: phases.NoSpan, Optimizer: phases.NoSpan,
			Prefill: &prefill, Decode: &decode, Complete: true},
	}
	rows := []report.IterationRow{
		{Device: 0, Iteration: 1, Complete: true, PeakAllocatedBytes: 1 << 30, PeakRequestedBytes: 1<<30 - 7, PeakReservedBytes: 2 << 30,
			PeakEvent: 12, PeakPhase: "backward", Phases: []report.PhaseEnd{
				{Phase: "forward", Span: sp(0, 10, 10), AllocatedBytes: 5, RequestedBytes: 4, ReservedBytes: 9},
				{Phase: "optimizer", Span: sp(20, 30, 0), RequestedBytes: 0, ReservedBytes: -1}}},
		{Device: 1, Iteration: 2, PeakEvent: -1, PeakPhase: "", Phases: []report.PhaseEnd{}},
		{Device: 1, Iteration: 3},
	}
	r := &report.Report{
		Header: report.Header{File: "a <b> & c.pickle", Format: "pickle-v4", Devices: []int{0, 1}},
		Part: &report.SnapshotReport{
			Iterations:     []phases.Timeline{{Device: 0, Events: 70, Source: "annotations", Setup: phases.NoSpan, Iterations: its, OOM: -1}, {Device: 1}},
			IterationTable: rows,
		},
	}
	return &report.Run{Version: report.ReportVersion, Tool: "memscan test", Inputs: []*report.Report{r, nil},
		Failures: []report.Failure{{File: "x", Error: "bad <input>"}}}
}

// TestJSONFormIdentical: the summary streamed by Run.EncodeJSON is byte for byte what encoding the run itself, each
// input through Report.MarshalJSON, writes.
func TestJSONFormIdentical(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  *report.Run
	}{
		{"sample", sampleRun()},
		{"single", singleRun()},
		{"views", viewsRun()},
		{"repeated", repeatedRun()},
		{"tracer only", tracerOnlyRun()},
		{"html", htmlSampleRun()},
		{"iterations", iterationsRun()},
		{"long trace", longIterationsRun(6000)},
		{"empty", &report.Run{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want, got bytes.Buffer
			if err := units.WriteJSONRows(&want, normalized(tc.run), summaryRowLimit); err != nil {
				t.Fatal(err)
			}
			if err := WriteJSON(&got, tc.run); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("summary differs from the run's own encoding:\n got %.400s\nwant %.400s", got.Bytes(), want.Bytes())
			}
		})
	}
}
