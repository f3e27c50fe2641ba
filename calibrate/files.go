package calibrate

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/memscan/memscan/plots"
)

// Files a calibration writes into its run directory.
const (
	FileMarkdown = "calibration.md"
	FileJSON     = "calibration.json"
)

// WriteFiles writes calibration.md, calibration.json and, unless noPlots, calibration_components.png and
// calibration_scatter.png into dir. It returns the paths written; a chart that cannot be drawn (e.g. no run
// measured a peak) is skipped and reported in the error after the other files are written.
func (c *Calibration) WriteFiles(dir string, noPlots bool) ([]string, error) {
	var written []string
	for _, f := range []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{FileMarkdown, func(b *bytes.Buffer) error { return c.WriteMarkdown(b) }},
		{FileJSON, func(b *bytes.Buffer) error { return c.WriteJSON(b) }},
	} {
		var b bytes.Buffer
		if err := f.write(&b); err != nil {
			return written, fmt.Errorf("rendering %s: %w", f.name, err)
		}
		p := filepath.Join(dir, f.name)
		if err := os.WriteFile(p, b.Bytes(), 0o644); err != nil {
			return written, fmt.Errorf("writing %s: %w", f.name, err)
		}
		written = append(written, p)
	}
	if c.Model != nil {
		p := filepath.Join(dir, "corrections.json")
		if err := c.Model.WriteFile(p); err != nil {
			return written, err
		}
		written = append(written, p)
	}
	if noPlots {
		return written, nil
	}
	var errs []error
	names, pred, meas := c.ComponentTotals()
	var corr []float64
	if c.Model != nil {
		corr = c.correctedTotals(names)
	}
	p := filepath.Join(dir, "calibration_components.png")
	if len(names) == 0 {
		errs = append(errs, errors.New("calibration_components.png: no rows"))
	} else if err := plots.CalibrationComponents(p, "Predicted vs measured per component (sum over runs)", names, pred, meas, corr); err != nil {
		errs = append(errs, err)
	} else {
		written = append(written, p)
	}
	var runs []plots.ScatterRun
	for _, pt := range c.PeakPoints() {
		runs = append(runs, plots.ScatterRun{Label: pt.ID, Predicted: pt.Predicted, Corrected: pt.Corrected, Measured: pt.Measured})
	}
	p = filepath.Join(dir, "calibration_scatter.png")
	if len(runs) == 0 {
		errs = append(errs, errors.New("calibration_scatter.png: no run measured peak allocated"))
	} else if err := plots.CalibrationScatter(p, "Peak allocated: predicted vs measured", runs, 0.10); err != nil {
		errs = append(errs, err)
	} else {
		written = append(written, p)
	}
	return written, errors.Join(errs...)
}

// correctedTotals sums corrected bytes per name, like ComponentTotals does for the raw prediction.
func (c *Calibration) correctedTotals(names []string) []float64 {
	sum := map[string]float64{}
	for _, r := range c.Rows {
		if r.CorrectedBytes != nil {
			sum[r.Component] += float64(*r.CorrectedBytes)
		}
	}
	out := make([]float64, len(names))
	for i, n := range names {
		out[i] = sum[n]
	}
	return out
}
