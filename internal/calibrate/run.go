package calibrate

import (
	"context"
	"fmt"

	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/static"
)

// Plan is one calibration: the runs to evaluate and where the corrections come from.
type Plan struct {
	Name    string
	Specs   []RunSpec
	Options Options
	// Corrections, when set, is applied to every run instead of fitting (a corrections file).
	Corrections *Model
	// Fit fits corrections, cross-validated leave-one-out, when no Corrections are given and at least two runs
	// measured a peak; FitLeaking fits on runs whose measurement leaks too.
	Fit, FitLeaking bool
}

// Run evaluates every run of p and then applies the given corrections or fits new ones; the model used ends up
// in cal.Model. Runs that fail are listed in cal.Failures, not returned as an error; warnings are what the user
// should know that fails nothing (too few runs to fit).
func Run(ctx context.Context, p Plan) (cal *Calibration, warnings []string, err error) {
	cal, err = EvaluateAll(ctx, p.Name, p.Specs, p.Options)
	if err != nil || len(cal.Runs) == 0 {
		return cal, nil, err
	}
	model := p.Corrections
	if model == nil && p.Fit {
		samples := cal.Samples(p.FitLeaking)
		if len(samples) < 2 {
			warnings = append(warnings, units.Plural(len(samples), "run", "runs")+" with a measured peak; at least 2 are needed to fit corrections")
		} else {
			m, err := Fit(ctx, samples)
			if err != nil {
				return cal, warnings, err
			}
			cv, err := LeaveOneOut(ctx, samples, m)
			if err != nil {
				return cal, warnings, err
			}
			m.HeldOut = &HeldOutError{MedianAbsPct: cv.HeldOutMedianAbsPct, MaxAbsPct: cv.HeldOutMaxAbsPct}
			model, cal.CV = m, cv
		}
	}
	if model != nil {
		if err := cal.ApplyModel(model); err != nil {
			return cal, warnings, err
		}
	}
	return cal, warnings, nil
}

// ForReports is the calibration of one run measured with cfg whose inputs are already analyzed (memscan
// analyze --static): one run compared at the worst stage, no corrections.
func ForReports(name, cfgPath string, cfg static.Config, reports []*report.Report) (*Calibration, error) {
	res, err := EvaluateReports(cfgPath, cfg, "worst", reports, Measured{}, nil)
	if err != nil {
		return nil, fmt.Errorf("calibrating against %s: %w", cfgPath, err)
	}
	return &Calibration{Version: Version, Name: name, Runs: []*RunResult{res}, Rows: res.Rows, Summary: Summarize(res.Rows)}, nil
}
