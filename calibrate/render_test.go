package calibrate

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

// handCalibration is a calibration built from hand-made rows, so its rendering does not depend on the estimator.
func handCalibration() *Calibration {
	rows := []Row{
		newRow("run-a", MetricPeakAllocated, MetricPeakAllocated, 11<<30, 10<<30, 1),
		newRow("run-a", MetricAtPeak, Weights, 2<<30, 2<<30, 0.9).withTotal(10 << 30),
		newRow("run-a", MetricAtPeak, Activations, 6<<30, 5<<30, 0.7).withTotal(10 << 30),
		// Predicted 20 MiB of a component the run did not hold: no relative error, 20 MiB of 10 GiB of the total.
		newRow("run-a", MetricAtPeak, Other, 20<<20, 0, 0.8).withTotal(10 << 30),
		newRow("run-b", MetricPeakAllocated, MetricPeakAllocated, 9<<30, 12<<30, 1),
	}
	twenty := 20.0
	corr := int64(10 << 30)
	pct := ErrorPct(corr, 10<<30)
	rows[0].CorrectedBytes, rows[0].CorrectedErrorPct = &corr, &pct
	a := &RunResult{ID: "run-a", PeakStagePredicted: "backward", PeakStageObserved: "forward", Rows: rows[:4],
		Attribution: &Attribution{Source: "snapshot-peak", TotalBytes: 10 << 30, UnattributedBytes: 1 << 30, Confidence: 0.7},
		Misses: []Miss{{Component: Activations, ErrorBytes: 1 << 30, ErrorPct: &twenty, ErrorOfTotalPct: 10,
			Sites:     []SiteBytes{{Site: "model.py:12:forward", Category: "Activation", Component: Activations, Bytes: 3 << 30}},
			Operators: []OperatorBytes{{Name: "mlp", Phase: "forward", Bytes: 4 << 30}}}}}
	b := &RunResult{ID: "run-b", PeakStagePredicted: "forward", Rows: rows[4:]}
	return &Calibration{Version: Version, Name: "hand", Runs: []*RunResult{a, b}, Rows: rows, Summary: Summarize(rows),
		Failures: []Failure{{ID: "run-c", Error: "c.json: no such file"}}}
}

func TestRenderGolden(t *testing.T) {
	c := handCalibration()
	for _, tc := range []struct {
		file  string
		write func(*bytes.Buffer) error
	}{
		{"hand.md", func(b *bytes.Buffer) error { return c.WriteMarkdown(b) }},
		{"hand.txt", func(b *bytes.Buffer) error { return c.WriteText(b) }},
	} {
		var b bytes.Buffer
		if err := tc.write(&b); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", tc.file)
		if *update {
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create)", err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("%s differs from the golden file (run with -update after checking):\n%s", tc.file, b.String())
		}
	}
	// The summary the golden files show: |+10 %| and |−25 %| → median 17.5 %, max 25 % (run-b).
	s := c.Summary[MetricPeakAllocated]
	if s.MedianAbsPct != 17.5 || s.MaxAbsPct != 25 || s.MaxID != "run-b" {
		t.Errorf("summary %+v", s)
	}
}
