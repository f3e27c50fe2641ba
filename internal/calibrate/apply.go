package calibrate

import (
	"github.com/memscan/memscan/static"
)

// Applied is one config's raw and corrected prediction side by side (what `memscan static --calibration` adds).
type Applied struct {
	Version     int    `json:"version"`
	Corrections string `json:"corrections"` // the file the model came from
	Explanation string `json:"explanation"`
	// Applied is false where the model refused to correct the config (framework outside the fit): Corrected
	// is then Raw. Warnings say why, and what else falls outside the fit.
	Applied  bool     `json:"applied"`
	Warnings []string `json:"warnings,omitempty"`
	// Raw is exactly static.Estimate's prediction; Corrected applies the model. Both are the worst stage.
	Raw       Prediction    `json:"raw"`
	Corrected Prediction    `json:"corrected"`
	Rows      []AppliedRow  `json:"rows"`
	CV        *HeldOutError `json:"held_out_error,omitempty"`
}

// AppliedRow is one component or total, raw and corrected.
type AppliedRow struct {
	Name      string `json:"name"`
	Raw       int64  `json:"raw_bytes"`
	Corrected int64  `json:"corrected_bytes"`
}

// HeldOutError repeats the model's cross-validated error so a user sees how far to trust the correction.
type HeldOutError struct {
	MedianAbsPct float64 `json:"median_abs_error_pct"`
	MaxAbsPct    float64 `json:"max_abs_error_pct"`
}

// Compare applies m to cfg. The raw prediction is computed from cfg untouched.
func (m *Model) Compare(cfg static.Config, source string) (*Applied, error) {
	raw, corr, err := m.Apply(cfg)
	if err != nil {
		return nil, err
	}
	ok, warnings := m.Coverage(cfg)
	a := &Applied{Version: ModelVersion, Corrections: source, Explanation: m.Explain(cfg), Applied: ok, Warnings: warnings,
		Raw: PredictionOf(raw, raw.WorstStage), Corrected: PredictionOf(corr, corr.WorstStage), CV: m.HeldOut}
	for _, c := range Components() {
		if a.Raw.AtPeak[c] == 0 && a.Corrected.AtPeak[c] == 0 {
			continue
		}
		a.Rows = append(a.Rows, AppliedRow{c + " (at peak)", a.Raw.AtPeak[c], a.Corrected.AtPeak[c]})
	}
	a.Rows = append(a.Rows,
		AppliedRow{MetricPeakAllocated, a.Raw.PeakAllocated, a.Corrected.PeakAllocated},
		AppliedRow{MetricPeakReserved, a.Raw.PeakReserved, a.Corrected.PeakReserved},
		AppliedRow{MetricEndOfStep, a.Raw.EndOfStep, a.Corrected.EndOfStep})
	return a, nil
}
