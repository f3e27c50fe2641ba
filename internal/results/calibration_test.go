package results

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/calibrate"
)

// handCalibration is a calibration built from hand-made rows, so its rendering does not depend on the estimator.
func handCalibration() *calibrate.Calibration {
	rows := []calibrate.Row{
		calibrate.NewRow("run-a", calibrate.MetricPeakAllocated, calibrate.MetricPeakAllocated, 11<<30, 10<<30, 1),
		calibrate.NewRow("run-a", calibrate.MetricAtPeak, calibrate.Weights, 2<<30, 2<<30, 0.9).WithTotal(10 << 30),
		calibrate.NewRow("run-a", calibrate.MetricAtPeak, calibrate.Activations, 6<<30, 5<<30, 0.7).WithTotal(10 << 30),
		// Predicted 20 MiB of a component the run did not hold: no relative error, 20 MiB of 10 GiB of the total.
		calibrate.NewRow("run-a", calibrate.MetricAtPeak, calibrate.Other, 20<<20, 0, 0.8).WithTotal(10 << 30),
		calibrate.NewRow("run-b", calibrate.MetricPeakAllocated, calibrate.MetricPeakAllocated, 9<<30, 12<<30, 1),
	}
	twenty := 20.0
	corr := int64(10 << 30)
	pct := calibrate.ErrorPct(corr, 10<<30)
	rows[0].CorrectedBytes, rows[0].CorrectedErrorPct = &corr, &pct
	a := &calibrate.RunResult{ID: "run-a", PeakStagePredicted: "backward", PeakStageObserved: "forward", Rows: rows[:4],
		Attribution: &calibrate.Attribution{Source: "snapshot-peak", TotalBytes: 10 << 30, UnattributedBytes: 1 << 30, Confidence: 0.7},
		Misses: []calibrate.Miss{{Component: calibrate.Activations, ErrorBytes: 1 << 30, ErrorPct: &twenty, ErrorOfTotalPct: 10,
			Sites:     []calibrate.SiteBytes{{Site: "model.py:12:forward", Category: "Activation", Component: calibrate.Activations, Bytes: 3 << 30}},
			Operators: []calibrate.OperatorBytes{{Name: "mlp", Phase: "forward", Bytes: 4 << 30}}}}}
	b := &calibrate.RunResult{ID: "run-b", PeakStagePredicted: "forward", Rows: rows[4:]}
	return &calibrate.Calibration{Version: calibrate.Version, Name: "hand", Runs: []*calibrate.RunResult{a, b}, Rows: rows, Summary: calibrate.Summarize(rows),
		Failures: []calibrate.Failure{{ID: "run-c", Error: "c.json: no such file"}}}
}

func TestCalibrationGolden(t *testing.T) {
	c := handCalibration()
	for _, tc := range []struct {
		file   string
		render func(*bytes.Buffer, *calibrate.Calibration) error
	}{
		{"calibration_hand.md", func(b *bytes.Buffer, c *calibrate.Calibration) error { return WriteCalibrationMarkdown(b, c) }},
		{"calibration_hand.txt", func(b *bytes.Buffer, c *calibrate.Calibration) error { return WriteCalibrationText(b, c) }},
	} {
		var b bytes.Buffer
		if err := tc.render(&b, c); err != nil {
			t.Fatal(err)
		}
		golden(t, tc.file, b.Bytes())
	}
	// The summary the golden files show: |+10 %| and |−25 %| → median 17.5 %, max 25 % (run-b).
	s := c.Summary[calibrate.MetricPeakAllocated]
	if s.MedianAbsPct != 17.5 || s.MaxAbsPct != 25 || s.MaxID != "run-b" {
		t.Errorf("summary %+v", s)
	}
}

// TestCalibrationUndefinedErrorText: a component predicted at 20 MiB whose run held 10 KiB of it (far below 1 %
// of the run's 10 GiB) has no relative error, so the console shows "-" rather than +204700.0 %
// ((20 MiB − 10 KiB) / 10 KiB).
func TestCalibrationUndefinedErrorText(t *testing.T) {
	row := calibrate.NewRow("r", calibrate.MetricAtPeak, calibrate.Gradients, 20<<20, 10<<10, 1).WithTotal(10 << 30)
	rows := []calibrate.Row{row}
	c := &calibrate.Calibration{Name: "u", Rows: rows, Summary: calibrate.Summarize(rows)}
	var text strings.Builder
	if err := WriteCalibrationText(&text, c); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(text.String(), "204") || !strings.Contains(text.String(), "0.020      0.000         -") {
		t.Errorf("console view shows a relative error to a negligible measurement:\n%s", text.String())
	}
}

// TestWriteCalibrationFiles writes the hand calibration with a corrections model: calibration.md,
// calibration.json, corrections.json and both charts; the JSON holds the rows it was given and the
// corrections load back.
func TestWriteCalibrationFiles(t *testing.T) {
	c := handCalibration()
	c.Model = &calibrate.Model{Version: calibrate.ModelVersion, Kind: calibrate.ModelKind, PersistentScale: 1, ActivationScale: 1}
	dir := t.TempDir()
	files, err := WriteCalibrationFiles(dir, c, false)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	want := []string{FileCalibrationMarkdown, FileCalibrationJSON, "corrections.json", "calibration_components.png", "calibration_scatter.png"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("wrote %v, want %v", names, want)
	}
	var doc struct {
		Rows []struct {
			ID             string `json:"id"`
			PredictedBytes int64  `json:"predicted_bytes"`
		} `json:"rows"`
	}
	b, err := os.ReadFile(filepath.Join(dir, FileCalibrationJSON))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Rows) != 5 || doc.Rows[0].ID != "run-a" || doc.Rows[0].PredictedBytes != 11<<30 {
		t.Errorf("calibration.json rows %+v, want the 5 hand rows (first run-a, 11 GiB predicted)", doc.Rows)
	}
	back, err := calibrate.LoadModel(filepath.Join(dir, "corrections.json"))
	if err != nil || back.PersistentScale != 1 {
		t.Errorf("corrections.json does not load back: %v %+v", err, back)
	}
}

// TestCalibrationBreakdown: one run with a breakdown gives a predicted and a measured bar stacked by the same
// components, the measured peak marked on both; a run measured without a breakdown gives only its predicted bar;
// components neither side has stay out of the legend.
func TestCalibrationBreakdown(t *testing.T) {
	const gib = 1 << 30
	c := &calibrate.Calibration{Runs: []*calibrate.RunResult{
		{ID: "a", Measured: calibrate.Measured{PeakAllocatedBytes: 10 * gib},
			Prediction: calibrate.Prediction{AtPeak: map[string]int64{calibrate.Weights: 2 * gib, calibrate.Activations: 9 * gib}},
			Attribution: &calibrate.Attribution{UnattributedBytes: 1 * gib, Components: []calibrate.ComponentBytes{
				{Component: calibrate.Weights, Bytes: 2 * gib}, {Component: calibrate.Activations, Bytes: 7 * gib}}}},
		{ID: "b", Measured: calibrate.Measured{PeakAllocatedBytes: 5 * gib},
			Prediction: calibrate.Prediction{AtPeak: map[string]int64{calibrate.Weights: 1 * gib, calibrate.Temporaries: 3 * gib}}},
		{ID: "not measured", Prediction: calibrate.Prediction{AtPeak: map[string]int64{calibrate.Weights: 1}}},
	}}
	groups, series, measured := calibrationBreakdown(c, 6)
	if want := []string{"a predicted", "a measured", "b predicted"}; !slices.Equal(groups, want) {
		t.Fatalf("groups %v, want %v", groups, want)
	}
	if want := []float64{10 * gib, 10 * gib, 5 * gib}; !slices.Equal(measured, want) {
		t.Errorf("measured marks %v, want %v", measured, want)
	}
	want := map[string][]float64{
		calibrate.Weights:     {2 * gib, 2 * gib, 1 * gib},
		calibrate.Activations: {9 * gib, 7 * gib, 0},
		calibrate.Temporaries: {0, 0, 3 * gib},
		"unattributed":        {0, 1 * gib, 0},
	}
	if len(series) != len(want) {
		t.Errorf("%d series, want %d (%v)", len(series), len(want), series)
	}
	for _, s := range series {
		if !slices.Equal(s.Values, want[s.Name]) {
			t.Errorf("%s: %v, want %v", s.Name, s.Values, want[s.Name])
		}
	}
	if g, _, _ := calibrationBreakdown(c, 1); len(g) != 2 {
		t.Errorf("bounded to one run: groups %v", g)
	}
}
