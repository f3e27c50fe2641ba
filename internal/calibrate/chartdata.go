package calibrate

import (
	"math"
)

// ApplyModel adds corrected figures to every run and row and recomputes the summary.
func (c *Calibration) ApplyModel(m *Model) error {
	c.Model = m
	c.Rows = c.Rows[:0]
	for _, r := range c.Runs {
		if err := r.applyModel(m); err != nil {
			return err
		}
		c.Rows = append(c.Rows, r.Rows...)
	}
	c.Summary = Summarize(c.Rows)
	return nil
}

// ScatterPoint is one run's predicted and measured peak, for the scatter chart.
type ScatterPoint struct {
	ID        string
	Predicted float64
	Measured  float64
	Corrected float64 // 0 when no model
}

// PeakPoints lists predicted vs measured peak allocated over all runs.
func (c *Calibration) PeakPoints() []ScatterPoint {
	var out []ScatterPoint
	for _, r := range c.Rows {
		if r.Metric != MetricPeakAllocated {
			continue
		}
		p := ScatterPoint{ID: r.ID, Predicted: float64(r.PredictedBytes), Measured: float64(r.MeasuredBytes)}
		if r.CorrectedBytes != nil {
			p.Corrected = float64(*r.CorrectedBytes)
		}
		out = append(out, p)
	}
	return out
}

// ComponentTotals sums predicted and measured bytes per component (and total metrics) over all rows, in
// summary order, for the components chart.
func (c *Calibration) ComponentTotals() (names []string, predicted, measured []float64) {
	pred, meas := map[string]float64{}, map[string]float64{}
	for _, r := range c.Rows {
		pred[r.Component] += float64(r.PredictedBytes)
		meas[r.Component] += float64(r.MeasuredBytes)
	}
	for _, k := range SummaryOrder(c.Summary) {
		if math.Max(pred[k], meas[k]) == 0 {
			continue
		}
		names = append(names, k)
		predicted = append(predicted, pred[k])
		measured = append(measured, meas[k])
	}
	return names, predicted, measured
}

// CorrectedTotals sums corrected bytes per name, like ComponentTotals does for the raw prediction.
func (c *Calibration) CorrectedTotals(names []string) []float64 {
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
