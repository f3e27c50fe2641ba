package results

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/memscan/memscan/internal/atomicfile"
	"github.com/memscan/memscan/internal/calibrate"
	"github.com/memscan/memscan/internal/plots"
	"github.com/memscan/memscan/internal/units"
)

// Files memscan calibrate writes into its run directory.
const (
	FileCalibrationMarkdown = "calibration.md"
	FileCalibrationJSON     = "calibration.json"
)

// gibColumn renders bytes as a number in the GiB columns of the calibration tables, whose headers name the unit;
// three decimals because calibration errors are often under 1 %.
func gibColumn(b int64) string { return fmt.Sprintf("%.3f", units.GiB(b)) }

// signedPct renders a signed relative error ("+1.2%"), a different quantity from a share (units.Percent).
func signedPct(v float64) string { return fmt.Sprintf("%+.1f%%", v) }

// pctOrDash renders an error that may be undefined (see Row.ErrorPct) as "-".
func pctOrDash(v *float64) string {
	if v == nil {
		return "-"
	}
	return signedPct(*v)
}

// absPctOrDash renders a summary figure, "-" when no row had a relative error.
func absPctOrDash(s calibrate.Stat, v float64, width int) string {
	if s.N == 0 {
		return fmt.Sprintf("%*s", width, "-")
	}
	return fmt.Sprintf("%*.1f%%", width-1, v)
}

// WriteCalibrationText renders the console table: one line per row, then the summary and the cross-validation.
func WriteCalibrationText(w io.Writer, c *calibrate.Calibration) error {
	w = printable(w)
	var b strings.Builder
	fmt.Fprintf(&b, "memscan calibrate — %s: %s", c.Name, units.Plural(len(c.Runs), "run", "runs"))
	if len(c.Failures) > 0 {
		fmt.Fprintf(&b, ", %d failed", len(c.Failures))
	}
	b.WriteString("\n\n")
	corrected := c.Model != nil
	fmt.Fprintf(&b, "%-58s %-22s %10s %10s %9s %9s", "RUN", "COMPONENT", "PRED GiB", "MEAS GiB", "ERROR", "OF TOTAL")
	if corrected {
		fmt.Fprintf(&b, " %10s %9s", "CORR GiB", "CORR ERR")
	}
	b.WriteString("\n")
	for _, r := range c.Rows {
		fmt.Fprintf(&b, "%-58s %-22s %10s %10s %9s %9s", clipLeft(r.ID, 58), r.Component, gibColumn(r.PredictedBytes), gibColumn(r.MeasuredBytes),
			pctOrDash(r.ErrorPct), signedPct(r.ErrorOfTotalPct))
		switch {
		case corrected && r.CorrectedBytes != nil:
			fmt.Fprintf(&b, " %10s %9s", gibColumn(*r.CorrectedBytes), pctOrDash(r.CorrectedErrorPct))
		case corrected:
			fmt.Fprintf(&b, " %10s %9s", "-", "-")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nERROR is relative to the measurement (\"-\" below %.0f%% of the run's total, left out of the summary); OF TOTAL is relative to the run's measured total.\n", 100*calibrate.MinRelativeShare)
	b.WriteString("\nSummary (absolute % error)\n")
	writeSummaryText(&b, c.Summary)
	for _, r := range c.Runs {
		if r.PeakStageObserved != "" {
			fmt.Fprintf(&b, "\n%s: peak stage predicted %s, observed %s\n", r.ID, r.PeakStagePredicted, r.PeakStageObserved)
		}
		for _, m := range r.Misses {
			fmt.Fprintf(&b, "  %s %s (%s, %s of total): ", m.Component, units.SignedBytes(m.ErrorBytes), pctOrDash(m.ErrorPct), signedPct(m.ErrorOfTotalPct))
			var parts []string
			for _, s := range m.Sites {
				parts = append(parts, fmt.Sprintf("runtime %s %s", s.Site, units.Bytes(s.Bytes)))
			}
			for _, o := range m.Operators {
				parts = append(parts, fmt.Sprintf("static %s %s", o.Name, units.Bytes(o.Bytes)))
			}
			b.WriteString(strings.Join(parts, "; ") + "\n")
		}
	}
	if c.CV != nil {
		writeCVText(&b, c.CV)
	}
	if c.Model != nil {
		b.WriteString("\nCorrections\n")
		fmt.Fprintf(&b, "  persistent scale %.4f (gradients, optimizer; weights exact; %s)\n", c.Model.PersistentScale, units.Plural(c.Model.PersistentRuns, "run", "runs"))
		b.WriteString(describeGroups(c.Model))
	}
	for _, f := range c.Failures {
		fmt.Fprintf(&b, "\nFAILED %s: %s\n", f.ID, f.Error)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
func writeSummaryText(b *strings.Builder, sum map[string]calibrate.Stat) {
	fmt.Fprintf(b, "%-22s %4s %10s %10s %13s", "COMPONENT", "N", "MEDIAN", "MAX", "MAX OF TOTAL")
	hasCorr := false
	for _, s := range sum {
		hasCorr = hasCorr || s.CorrectedMedianAbsPct != nil
	}
	if hasCorr {
		fmt.Fprintf(b, " %12s %10s", "CORR MEDIAN", "CORR MAX")
	}
	fmt.Fprintf(b, "  %s\n", "WORST RUN")
	for _, k := range calibrate.SummaryOrder(sum) {
		s := sum[k]
		fmt.Fprintf(b, "%-22s %4d %10s %10s %12.1f%%", k, s.N, absPctOrDash(s, s.MedianAbsPct, 10), absPctOrDash(s, s.MaxAbsPct, 10), s.MaxAbsOfTotalPct)
		if hasCorr {
			if s.CorrectedMedianAbsPct != nil {
				fmt.Fprintf(b, " %11.1f%% %9.1f%%", *s.CorrectedMedianAbsPct, *s.CorrectedMaxAbsPct)
			} else {
				fmt.Fprintf(b, " %12s %10s", "-", "-")
			}
		}
		worst := s.MaxID
		if worst == "" {
			worst = "-"
		}
		fmt.Fprintf(b, "  %s\n", worst)
	}
}
func writeCVText(b *strings.Builder, cv *calibrate.CrossValidation) {
	b.WriteString("\nLeave-one-out cross-validation (peak allocated, absolute % error)\n")
	fmt.Fprintf(b, "  raw       median %5.1f%%  max %5.1f%%\n", cv.RawMedianAbsPct, cv.RawMaxAbsPct)
	fmt.Fprintf(b, "  in-sample median %5.1f%%  max %5.1f%%  (fitted on every run: optimistic)\n", cv.InSampleMedianAbsPct, cv.InSampleMaxAbsPct)
	fmt.Fprintf(b, "  held-out  median %5.1f%%  max %5.1f%%  (each run predicted by a model fitted without it)\n", cv.HeldOutMedianAbsPct, cv.HeldOutMaxAbsPct)
}
func clipLeft(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return "…" + string(r[len(r)-n+1:])
}

// WriteCalibrationMarkdown renders calibration.md.
func WriteCalibrationMarkdown(w io.Writer, c *calibrate.Calibration) error {
	w = printable(w)
	var b strings.Builder
	fmt.Fprintf(&b, "# memscan calibration — %s\n\n", c.Name)
	fmt.Fprintf(&b, "%s evaluated", units.Plural(len(c.Runs), "run", "runs"))
	if len(c.Failures) > 0 {
		fmt.Fprintf(&b, ", %d failed", len(c.Failures))
	}
	fmt.Fprintf(&b, ". Errors are (predicted − measured) / measured; positive means the estimator over-predicts. "+
		"Where the measurement is 0 or below %.0f %% of the run's total measured memory the relative error is undefined (–) "+
		"and left out of the summary; \"of total\" is the error as a share of the run's total. Sizes in GiB per GPU.\n\n## Summary (absolute %% error)\n\n",
		100*calibrate.MinRelativeShare)
	hasCorr := c.Model != nil
	writeCorrectableHeader(&b, "| component | runs | median | max | max of total | worst run |", "|---|---:|---:|---:|---:|---|",
		" corrected median | corrected max |", hasCorr)
	for _, k := range calibrate.SummaryOrder(c.Summary) {
		s := c.Summary[k]
		med, mx := "–", "–"
		if s.N > 0 {
			med, mx = fmt.Sprintf("%.1f %%", s.MedianAbsPct), fmt.Sprintf("%.1f %%", s.MaxAbsPct)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %.1f %% | %s |", k, s.N, med, mx, s.MaxAbsOfTotalPct, mdCell(s.MaxID))
		if hasCorr {
			if s.CorrectedMedianAbsPct != nil {
				fmt.Fprintf(&b, " %.1f %% | %.1f %% |", *s.CorrectedMedianAbsPct, *s.CorrectedMaxAbsPct)
			} else {
				b.WriteString(" – | – |")
			}
		}
		b.WriteString("\n")
	}
	writeCalibrationCVMarkdown(&b, c.CV)
	writeCorrectionsMarkdown(&b, c.Model)
	writeCalibrationRowsMarkdown(&b, c)
	writeCalibrationRunsMarkdown(&b, c.Runs)
	if len(c.Failures) > 0 {
		b.WriteString("\n## Failures\n\n")
		for _, f := range c.Failures {
			fmt.Fprintf(&b, "- %s: %s\n", mdCell(f.ID), mdCell(f.Error))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeCalibrationCVMarkdown writes the leave-one-out table of the fitted corrections, if any.
func writeCalibrationCVMarkdown(b *strings.Builder, cv *calibrate.CrossValidation) {
	if cv == nil {
		return
	}
	b.WriteString("\n## Learned corrections, leave-one-out\n\n")
	b.WriteString("| peak allocated | median abs error | max abs error |\n|---|---:|---:|\n")
	fmt.Fprintf(b, "| raw prediction | %.1f %% | %.1f %% |\n", cv.RawMedianAbsPct, cv.RawMaxAbsPct)
	fmt.Fprintf(b, "| corrected, in-sample | %.1f %% | %.1f %% |\n", cv.InSampleMedianAbsPct, cv.InSampleMaxAbsPct)
	fmt.Fprintf(b, "| corrected, held-out | %.1f %% | %.1f %% |\n\n", cv.HeldOutMedianAbsPct, cv.HeldOutMaxAbsPct)
	b.WriteString("| run | measured | raw | raw error | held-out | held-out error |\n|---|---:|---:|---:|---:|---:|\n")
	for _, r := range cv.Runs {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s |\n", mdCell(r.ID), gibColumn(r.MeasuredBytes), gibColumn(r.RawBytes), signedPct(r.RawErrorPct),
			gibColumn(r.HeldOutBytes), signedPct(r.HeldOutErrPct))
	}
}

// writeCorrectionsMarkdown describes the corrections model, if any.
func writeCorrectionsMarkdown(b *strings.Builder, m *calibrate.Model) {
	if m == nil {
		return
	}
	fmt.Fprintf(b, "\nModel (version %d): gradients and optimizer states × %.4f (median over %d end-of-step fits; weights are exact and not scaled); ",
		m.Version, m.PersistentScale, m.PersistentRuns)
	fmt.Fprintf(b, "activations and temporaries × %.4f for unseen groups", m.ActivationScale)
	if m.ReservedRatio > 0 {
		fmt.Fprintf(b, "; peak reserved ≥ %.4f × peak allocated", m.ReservedRatio)
	}
	b.WriteString(".\n\n| group | activation scale | runs |\n|---|---:|---:|\n")
	for _, g := range m.Groups {
		fmt.Fprintf(b, "| %s | %.4f | %d |\n", calibrate.GroupName(g.Attention, g.Recompute, g.Loss), g.Scale, len(g.Runs))
	}
}

// writeCalibrationRowsMarkdown writes one table row per compared figure.
func writeCalibrationRowsMarkdown(b *strings.Builder, c *calibrate.Calibration) {
	hasCorr := c.Model != nil
	b.WriteString("\n## Rows\n\n")
	writeCorrectableHeader(b, "| run | metric | component | predicted | measured | error | error % | % of total | confidence |",
		"|---|---|---|---:|---:|---:|---:|---:|---:|", " corrected | corrected error % |", hasCorr)
	for _, r := range c.Rows {
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %.2f |", mdCell(r.ID), r.Metric, r.Component, gibColumn(r.PredictedBytes),
			gibColumn(r.MeasuredBytes), gibColumn(r.ErrorBytes), mdPct(r.ErrorPct), signedPct(r.ErrorOfTotalPct), r.Confidence)
		if hasCorr {
			if r.CorrectedBytes != nil {
				fmt.Fprintf(b, " %s | %s |", gibColumn(*r.CorrectedBytes), mdPct(r.CorrectedErrorPct))
			} else {
				b.WriteString(" – | – |")
			}
		}
		b.WriteString("\n")
	}
}

// writeCalibrationRunsMarkdown writes, per run with something to say, the peak stage, the attribution and the
// largest misses with the sites and operators behind them.
func writeCalibrationRunsMarkdown(b *strings.Builder, runs []*calibrate.RunResult) {
	var details strings.Builder
	for _, r := range runs {
		if r.PeakStageObserved == "" && len(r.Misses) == 0 && len(r.Notes) == 0 && r.Attribution == nil {
			continue
		}
		fmt.Fprintf(&details, "\n### %s\n\n", mdCell(r.ID))
		fmt.Fprintf(&details, "Peak stage: predicted **%s**", r.PeakStagePredicted)
		if r.PeakStageObserved != "" {
			fmt.Fprintf(&details, ", observed **%s** (inferred from the live set at the peak)", r.PeakStageObserved)
		}
		details.WriteString(".\n")
		if a := r.Attribution; a != nil {
			fmt.Fprintf(&details, "\nAttribution from %s: %s attributed of %s (confidence %.2f), %s unattributed.\n",
				a.Source, units.Bytes(a.TotalBytes-a.UnattributedBytes), units.Bytes(a.TotalBytes), a.Confidence,
				units.Bytes(a.UnattributedBytes))
		}
		for _, m := range r.Misses {
			fmt.Fprintf(&details, "\n- **%s** %s (%s, %s of total)\n", m.Component, units.SignedBytes(m.ErrorBytes), mdPct(m.ErrorPct), signedPct(m.ErrorOfTotalPct))
			for _, s := range m.Sites {
				fmt.Fprintf(&details, "  - runtime `%s` (%s) %s\n", s.Site, s.Category, units.Bytes(s.Bytes))
			}
			for _, o := range m.Operators {
				fmt.Fprintf(&details, "  - static `%s` (%s) %s\n", o.Name, o.Phase, units.Bytes(o.Bytes))
			}
		}
		for _, n := range r.Notes {
			fmt.Fprintf(&details, "\nNote: %s\n", n)
		}
	}
	if details.Len() > 0 {
		b.WriteString("\n## Runs\n")
		b.WriteString(details.String())
	}
}

// mdPct is pctOrDash with the Markdown tables' dash.
func mdPct(v *float64) string {
	if v == nil {
		return "–"
	}
	return signedPct(*v)
}

// WriteAppliedText renders the raw and corrected prediction side by side (memscan static --calibration).
func WriteAppliedText(w io.Writer, a *calibrate.Applied) error {
	w = printable(w)
	var b strings.Builder
	fmt.Fprintf(&b, "\nCalibrated prediction (%s)\n", a.Corrections)
	for _, w := range a.Warnings {
		fmt.Fprintf(&b, "  WARNING: %s\n", w)
	}
	fmt.Fprintf(&b, "  %s\n", a.Explanation)
	if a.CV != nil {
		fmt.Fprintf(&b, "  leave-one-out held-out error of the model: median %.1f %%, max %.1f %%\n", a.CV.MedianAbsPct, a.CV.MaxAbsPct)
	}
	fmt.Fprintf(&b, "  %-28s %12s %12s %9s\n", "", "RAW GiB", "CORR GiB", "CHANGE")
	for _, r := range a.Rows {
		fmt.Fprintf(&b, "  %-28s %12s %12s %9s\n", r.Name, gibColumn(r.Raw), gibColumn(r.Corrected), signedPct(calibrate.ErrorPct(r.Corrected, r.Raw)))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// describeGroups renders the groups for text output.
func describeGroups(m *calibrate.Model) string {
	var b strings.Builder
	for _, g := range m.Groups {
		fmt.Fprintf(&b, "  %-52s activation scale %.4f  (%s)\n", calibrate.GroupName(g.Attention, g.Recompute, g.Loss), g.Scale, units.Plural(len(g.Runs), "run", "runs"))
	}
	return b.String()
}

// WriteCalibrationFiles writes calibration.md, calibration.json and, unless noPlots, calibration_components.png and
// calibration_scatter.png into dir. It returns the paths written; a chart that cannot be drawn (e.g. no run
// measured a peak) is skipped and reported as a *ChartError after the other files are written.
func WriteCalibrationFiles(dir string, c *calibrate.Calibration, noPlots bool) ([]string, error) {
	var written []string
	for _, f := range []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{FileCalibrationMarkdown, func(b *bytes.Buffer) error { return WriteCalibrationMarkdown(b, c) }},
		{FileCalibrationJSON, func(b *bytes.Buffer) error { return units.WriteJSON(b, c) }},
	} {
		var b bytes.Buffer
		if err := f.write(&b); err != nil {
			return written, fmt.Errorf("rendering %s: %w", f.name, err)
		}
		p := filepath.Join(dir, f.name)
		if err := atomicfile.WriteBytes(p, b.Bytes()); err != nil {
			return written, err
		}
		written = append(written, p)
	}
	if c.Model != nil {
		p := filepath.Join(dir, "corrections.json")
		if err := WriteCorrections(p, c.Model); err != nil {
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
		corr = c.CorrectedTotals(names)
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
	if groups, series, measured := calibrationBreakdown(c, maxBreakdownRuns); len(groups) > 0 {
		p = filepath.Join(dir, "calibration_breakdown.png")
		label := "measured peak allocated"
		if len(c.Runs) == 1 {
			label += " (" + units.Bytes(int64(measured[0])) + ")"
		}
		if err := plots.StackedBars(p, plots.StackedBarChart{Title: "Peak by component: predicted and measured", Groups: groups,
			Series: series, Measured: measured, MeasuredLabel: label}); err != nil {
			errs = append(errs, err)
		} else {
			written = append(written, p)
		}
	}
	return written, chartFailures(errs)
}

// maxBreakdownRuns bounds the runs the breakdown chart draws (two bars each), so it stays readable.
const maxBreakdownRuns = 6

// calibrationBreakdown is the chart data of calibration_breakdown.png: for each run with a measured peak (the
// first max), the predicted peak stacked by component and, where the runtime input had a breakdown, the measured
// one beside it, the measured peak allocated marked on both. The components are the same on both sides (package
// components' definitions); what the attribution could not place is stacked as "unattributed".
func calibrationBreakdown(c *calibrate.Calibration, max int) (groups []string, series []plots.Series, measured []float64) {
	comps := calibrate.Components()
	series = make([]plots.Series, len(comps)+1)
	for i, name := range comps {
		series[i].Name = name
	}
	series[len(comps)] = plots.Series{Name: "unattributed", Color: plots.ColorOther}
	n := 0
	for _, r := range c.Runs {
		if r.Measured.PeakAllocatedBytes <= 0 || n == max {
			continue
		}
		n++
		bars := []func(string) float64{func(name string) float64 { return float64(r.Prediction.AtPeak[name]) }}
		labels := []string{r.ID + " predicted"}
		unatt := []float64{0}
		if at := r.Attribution; at != nil {
			bars = append(bars, func(name string) float64 { return float64(at.Bytes(name)) })
			labels = append(labels, r.ID+" measured")
			unatt = append(unatt, float64(at.UnattributedBytes))
		}
		for b, value := range bars {
			groups = append(groups, labels[b])
			measured = append(measured, float64(r.Measured.PeakAllocatedBytes))
			for i, name := range comps {
				series[i].Values = append(series[i].Values, value(name))
			}
			series[len(comps)].Values = append(series[len(comps)].Values, unatt[b])
		}
	}
	// Components neither side has in any run (e.g. the KV cache in training) stay out of the legend.
	kept := series[:0]
	for _, s := range series {
		for _, v := range s.Values {
			if v > 0 {
				kept = append(kept, s)
				break
			}
		}
	}
	return groups, kept, measured
}

// WriteCorrections saves a corrections model as indented JSON (corrections.json, --save-corrections).
func WriteCorrections(path string, m *calibrate.Model) error {
	var b bytes.Buffer
	if err := units.WriteJSON(&b, m); err != nil {
		return err
	}
	if err := atomicfile.WriteBytes(path, b.Bytes()); err != nil {
		return err
	}
	return nil
}

// writeCorrectableHeader writes a Markdown table's header and alignment rows, with two right-aligned corrected
// columns when the calibration has a corrections model.
func writeCorrectableHeader(b *strings.Builder, head, align, corrected string, withCorrected bool) {
	b.WriteString(head)
	if withCorrected {
		b.WriteString(corrected)
	}
	b.WriteString("\n" + align)
	if withCorrected {
		b.WriteString("---:|---:|")
	}
	b.WriteString("\n")
}
