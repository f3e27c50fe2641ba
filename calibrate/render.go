package calibrate

import (
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/memscan/memscan/units"
)

// gib renders bytes as a number in the GiB column of the tables, whose header names the unit; three decimals
// because calibration errors are often under 1 %.
func gib(b int64) string { return fmt.Sprintf("%.3f", units.GiB(b)) }

func pct(v float64) string { return fmt.Sprintf("%+.1f%%", v) }

// pctOrDash renders an error that may be undefined (see Row.ErrorPct) as "-".
func pctOrDash(v *float64) string {
	if v == nil {
		return "-"
	}
	return pct(*v)
}

// absPctOrDash renders a summary figure, "-" when no row had a relative error.
func absPctOrDash(s Stat, v float64, width int) string {
	if s.N == 0 {
		return fmt.Sprintf("%*s", width, "-")
	}
	return fmt.Sprintf("%*.1f%%", width-1, v)
}

// WriteJSON writes calibration.json.
func (c *Calibration) WriteJSON(w io.Writer) error {
	return units.WriteJSON(w, c)
}

// WriteText renders the console table: one line per row, then the summary and the cross-validation.
func (c *Calibration) WriteText(w io.Writer) error {
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
		fmt.Fprintf(&b, "%-58s %-22s %10s %10s %9s %9s", clip(r.ID, 58), r.Component, gib(r.PredictedBytes), gib(r.MeasuredBytes),
			pctOrDash(r.ErrorPct), pct(r.ErrorOfTotalPct))
		switch {
		case corrected && r.CorrectedBytes != nil:
			fmt.Fprintf(&b, " %10s %9s", gib(*r.CorrectedBytes), pctOrDash(r.CorrectedErrorPct))
		case corrected:
			fmt.Fprintf(&b, " %10s %9s", "-", "-")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nERROR is relative to the measurement (\"-\" below %.0f%% of the run's total, left out of the summary); OF TOTAL is relative to the run's measured total.\n", 100*MinRelativeShare)
	b.WriteString("\nSummary (absolute % error)\n")
	writeSummaryText(&b, c.Summary)
	for _, r := range c.Runs {
		if r.PeakStageObserved != "" {
			fmt.Fprintf(&b, "\n%s: peak stage predicted %s, observed %s\n", r.ID, r.PeakStagePredicted, r.PeakStageObserved)
		}
		for _, m := range r.Misses {
			fmt.Fprintf(&b, "  %s %s (%s, %s of total): ", m.Component, signedBytes(m.ErrorBytes), pctOrDash(m.ErrorPct), pct(m.ErrorOfTotalPct))
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
		fmt.Fprintf(&b, "  persistent scale %.4f (weights, gradients, optimizer; %s)\n", c.Model.PersistentScale, units.Plural(c.Model.PersistentRuns, "run", "runs"))
		b.WriteString(c.Model.describeGroups())
	}
	for _, f := range c.Failures {
		fmt.Fprintf(&b, "\nFAILED %s: %s\n", f.ID, f.Error)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeSummaryText(b *strings.Builder, sum map[string]Stat) {
	fmt.Fprintf(b, "%-22s %4s %10s %10s %13s", "COMPONENT", "N", "MEDIAN", "MAX", "MAX OF TOTAL")
	hasCorr := false
	for _, s := range sum {
		hasCorr = hasCorr || s.CorrectedMedianAbsPct != nil
	}
	if hasCorr {
		fmt.Fprintf(b, " %12s %10s", "CORR MEDIAN", "CORR MAX")
	}
	fmt.Fprintf(b, "  %s\n", "WORST RUN")
	for _, k := range SummaryOrder(sum) {
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

func writeCVText(b *strings.Builder, cv *CrossValidation) {
	b.WriteString("\nLeave-one-out cross-validation (peak allocated, absolute % error)\n")
	fmt.Fprintf(b, "  raw       median %5.1f%%  max %5.1f%%\n", cv.RawMedianAbsPct, cv.RawMaxAbsPct)
	fmt.Fprintf(b, "  in-sample median %5.1f%%  max %5.1f%%  (fitted on every run: optimistic)\n", cv.InSampleMedianAbsPct, cv.InSampleMaxAbsPct)
	fmt.Fprintf(b, "  held-out  median %5.1f%%  max %5.1f%%  (each run predicted by a model fitted without it)\n", cv.HeldOutMedianAbsPct, cv.HeldOutMaxAbsPct)
}

func signedBytes(v int64) string {
	if v < 0 {
		return "−" + units.Bytes(-v)
	}
	return "+" + units.Bytes(v)
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return "…" + string(r[len(r)-n+1:])
}

// WriteMarkdown renders calibration.md.
func (c *Calibration) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# memscan calibration — %s\n\n", c.Name)
	fmt.Fprintf(&b, "%s evaluated", units.Plural(len(c.Runs), "run", "runs"))
	if len(c.Failures) > 0 {
		fmt.Fprintf(&b, ", %d failed", len(c.Failures))
	}
	fmt.Fprintf(&b, ". Errors are (predicted − measured) / measured; positive means the estimator over-predicts. "+
		"Where the measurement is 0 or below %.0f %% of the run's total measured memory the relative error is undefined (–) "+
		"and left out of the summary; \"of total\" is the error as a share of the run's total. Sizes in GiB per GPU.\n\n## Summary (absolute %% error)\n\n",
		100*MinRelativeShare)
	hasCorr := c.Model != nil
	b.WriteString("| component | runs | median | max | max of total | worst run |")
	if hasCorr {
		b.WriteString(" corrected median | corrected max |")
	}
	b.WriteString("\n|---|---:|---:|---:|---:|---|")
	if hasCorr {
		b.WriteString("---:|---:|")
	}
	b.WriteString("\n")
	for _, k := range SummaryOrder(c.Summary) {
		s := c.Summary[k]
		med, mx := "–", "–"
		if s.N > 0 {
			med, mx = fmt.Sprintf("%.1f %%", s.MedianAbsPct), fmt.Sprintf("%.1f %%", s.MaxAbsPct)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %.1f %% | %s |", k, s.N, med, mx, s.MaxAbsOfTotalPct, mdEscape(s.MaxID))
		if hasCorr {
			if s.CorrectedMedianAbsPct != nil {
				fmt.Fprintf(&b, " %.1f %% | %.1f %% |", *s.CorrectedMedianAbsPct, *s.CorrectedMaxAbsPct)
			} else {
				b.WriteString(" – | – |")
			}
		}
		b.WriteString("\n")
	}
	if c.CV != nil {
		cv := c.CV
		b.WriteString("\n## Learned corrections, leave-one-out\n\n")
		b.WriteString("| peak allocated | median abs error | max abs error |\n|---|---:|---:|\n")
		fmt.Fprintf(&b, "| raw prediction | %.1f %% | %.1f %% |\n", cv.RawMedianAbsPct, cv.RawMaxAbsPct)
		fmt.Fprintf(&b, "| corrected, in-sample | %.1f %% | %.1f %% |\n", cv.InSampleMedianAbsPct, cv.InSampleMaxAbsPct)
		fmt.Fprintf(&b, "| corrected, held-out | %.1f %% | %.1f %% |\n\n", cv.HeldOutMedianAbsPct, cv.HeldOutMaxAbsPct)
		b.WriteString("| run | measured | raw | raw error | held-out | held-out error |\n|---|---:|---:|---:|---:|---:|\n")
		for _, r := range cv.Runs {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", mdEscape(r.ID), gib(r.MeasuredBytes), gib(r.RawBytes), pct(r.RawErrorPct),
				gib(r.HeldOutBytes), pct(r.HeldOutErrPct))
		}
	}
	if m := c.Model; m != nil {
		fmt.Fprintf(&b, "\nModel (version %d): weights, gradients and optimizer states × %.4f (median over %d end-of-step fits); ",
			m.Version, m.PersistentScale, m.PersistentRuns)
		fmt.Fprintf(&b, "activations and temporaries × %.4f for unseen groups", m.ActivationScale)
		if m.ReservedRatio > 0 {
			fmt.Fprintf(&b, "; peak reserved ≥ %.4f × peak allocated", m.ReservedRatio)
		}
		b.WriteString(".\n\n| group | activation scale | runs |\n|---|---:|---:|\n")
		for _, g := range m.Groups {
			fmt.Fprintf(&b, "| %s | %.4f | %d |\n", groupName(g.Attention, g.Recompute, g.Loss), g.Scale, len(g.Runs))
		}
	}
	b.WriteString("\n## Rows\n\n| run | metric | component | predicted | measured | error | error % | % of total | confidence |")
	if hasCorr {
		b.WriteString(" corrected | corrected error % |")
	}
	b.WriteString("\n|---|---|---|---:|---:|---:|---:|---:|---:|")
	if hasCorr {
		b.WriteString("---:|---:|")
	}
	b.WriteString("\n")
	for _, r := range c.Rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %.2f |", mdEscape(r.ID), r.Metric, r.Component, gib(r.PredictedBytes),
			gib(r.MeasuredBytes), gib(r.ErrorBytes), mdPct(r.ErrorPct), pct(r.ErrorOfTotalPct), r.Confidence)
		if hasCorr {
			if r.CorrectedBytes != nil {
				fmt.Fprintf(&b, " %s | %s |", gib(*r.CorrectedBytes), mdPct(r.CorrectedErrorPct))
			} else {
				b.WriteString(" – | – |")
			}
		}
		b.WriteString("\n")
	}
	var details strings.Builder
	for _, r := range c.Runs {
		if r.PeakStageObserved == "" && len(r.Misses) == 0 && len(r.Notes) == 0 && r.Attribution == nil {
			continue
		}
		fmt.Fprintf(&details, "\n### %s\n\n", mdEscape(r.ID))
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
			fmt.Fprintf(&details, "\n- **%s** %s (%s, %s of total)\n", m.Component, signedBytes(m.ErrorBytes), mdPct(m.ErrorPct), pct(m.ErrorOfTotalPct))
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
	if len(c.Failures) > 0 {
		b.WriteString("\n## Failures\n\n")
		for _, f := range c.Failures {
			fmt.Fprintf(&b, "- %s: %s\n", mdEscape(f.ID), mdEscape(f.Error))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func mdEscape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

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

// mdPct is pctOrDash with the Markdown tables' dash.
func mdPct(v *float64) string {
	if v == nil {
		return "–"
	}
	return pct(*v)
}
