package results

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/memscan/memscan/internal/atomicfile"
	"github.com/memscan/memscan/internal/plots"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/static"
)

// Files memscan static writes into its output directory.
const (
	FileStaticJSON     = "static_report.json"
	FileStaticMarkdown = "static_report.md"
)

func stepsNoun(n int64) string {
	if n == 1 {
		return "step"
	}
	return "steps"
}

// WriteStaticJSON writes the report as indented JSON (static_report.json).
func WriteStaticJSON(w io.Writer, r *static.Report) error {
	if err := units.WriteJSON(w, r); err != nil {
		return fmt.Errorf("static report JSON: %w", err)
	}
	return nil
}

// WriteStaticText renders the console view of memscan static.
func WriteStaticText(w io.Writer, r *static.Report) error {
	w = printable(w)
	var b strings.Builder
	for _, section := range []func(*strings.Builder, *static.Report){
		writeStaticHeader, writeStaticMemory, writeStaticTime, writeStaticRoofline, writeStaticFindings,
	} {
		section(&b, r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// precisionLabel names the precision the report models: the training precision (with the compute dtype where
// the name does not say it, e.g. "amp-bf16" or "bf16-mixed" is itself explicit), or inference's weight dtype.
func precisionLabel(r *static.Report) string {
	c := r.Config
	if c.Mode == "inference" {
		return "weights " + c.Inference.WeightDtype
	}
	if p := c.Training.Precision; p != r.Metadata.Dtype && !strings.Contains(p, r.Metadata.Dtype) {
		return p + ", " + r.Metadata.Dtype + " compute"
	}
	return c.Training.Precision
}

// writeStaticHeader writes the model, layout, workload and fit verdict.
func writeStaticHeader(b *strings.Builder, r *static.Report) {
	s := r.Summary
	c := r.Config
	fmt.Fprintf(b, "memscan static — %s (%s, %s)\n", r.Metadata.Model, c.Mode, precisionLabel(r))
	fmt.Fprintf(b, "GPU: %s × %d   layout: %s\n", r.Fit.GPU, c.Hardware.NumGPUs, r.Metadata.Layout)
	fmt.Fprintf(b, "Parameters: %s total (%s per GPU of stage %d before ZeRO sharding)", commas(r.Params.Total), commas(s.ParamCountPerGPU), r.WorstStage)
	if r.Params.Active != r.Params.Total {
		fmt.Fprintf(b, ", %s active per token", commas(r.Params.Active))
	}
	b.WriteString("\n")
	if f := r.Metadata.Framework; f != "" {
		fmt.Fprintf(b, "Framework: %s (its defaults fill the keys the config leaves out)\n", f)
	}
	if c.Mode == "train" {
		fmt.Fprintf(b, "Workload: micro-batch %d × seq %d, global batch %d (%s), %s attention, recompute %s, loss %s, %s\n",
			c.Training.MicroBatchSize, c.Training.SeqLength, c.Training.GlobalBatchSize, units.Plural(c.Parallel.NumMicrobatches, "micro-batch", "micro-batches"),
			c.Training.Attention, c.Training.Recompute, c.Training.Loss, c.Training.Optimizer)
	} else {
		fmt.Fprintf(b, "Workload: batch %d, prompt %d + %d generated tokens, weights %s, KV cache %s\n",
			c.Inference.BatchSize, c.Inference.PromptLength, c.Inference.GenerateTokens, c.Inference.WeightDtype, c.Inference.KVCache.Dtype)
	}
	if line := staticAttentionLine(r); line != "" {
		b.WriteString(line + "\n")
	}
	b.WriteString("\n")
	fmt.Fprintf(b, "%s\n", r.Fit.Verdict)
	if r.OOM != nil {
		b.WriteString(staticOOMLine(r.OOM) + "\n")
	}
	b.WriteString("\n")
}

// writeStaticMemory writes the per-GPU breakdown at the worst stage's peak, the per-stage table and the KV cache.
func writeStaticMemory(b *strings.Builder, r *static.Report) {
	s := r.Summary
	b.WriteString("MEMORY PER GPU (worst stage, at its peak)\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	peak := float64(max(1, s.DeviceTotalBytes))
	for _, cp := range r.Components() {
		fmt.Fprintf(tw, "  %s\t%s\t%5.1f%%\t\n", cp.Name, units.Bytes(cp.Bytes), 100*float64(cp.Bytes)/peak)
	}
	fmt.Fprintf(tw, "  peak allocated (%s)\t%s\t\t\n", s.PeakStage, units.Bytes(s.PeakMemoryBytes))
	fmt.Fprintf(tw, "  peak reserved\t%s\t\t\n", units.Bytes(s.PeakReservedBytes))
	fmt.Fprintf(tw, "  device total (nvidia-smi)\t%s\t\t\n", units.Bytes(s.DeviceTotalBytes))
	tw.Flush()
	b.WriteString("\n" + staticReservedLine(r) + "\n")
	if r.LoRA != nil {
		b.WriteString(staticLoRALine(r.LoRA) + "\n")
	}
	if len(r.Stages) > 1 {
		b.WriteString("\nPER PIPELINE STAGE (one GPU each)\n")
		tw = tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  stage\tparams\tweights\tgrads\toptimizer\tactivations\tpeak alloc\tat\treserved\tdevice\t")
		for _, st := range r.Stages {
			mark := ""
			if st.Index == r.WorstStage {
				mark = " *"
			}
			fmt.Fprintf(tw, "  %d%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", st.Index, mark, commas(st.Params), units.Bytes(st.Weights), units.Bytes(st.Grads),
				units.Bytes(st.Optimizer), units.Bytes(st.Activations), units.Bytes(st.PeakAllocated), st.PeakStage, units.Bytes(st.PeakReserved), units.Bytes(st.DeviceTotal))
		}
		tw.Flush()
	}
	if in := r.Inference; in != nil {
		fmt.Fprintf(b, "\nKV cache: %s per token, %d context tokens\n", units.Bytes(in.KVBytesPerToken), in.ContextTokens)
	}
}

// writeStaticTime writes the step time, throughput and run cost.
func writeStaticTime(b *strings.Builder, r *static.Report) {
	c := r.Config
	if t := r.Time; t != nil {
		b.WriteString("\nTIME\n")
		fmt.Fprintf(b, "  %.3g FLOPs/token (model), %.3g with recomputation; %s tokens/step\n", t.FLOPsPerToken, t.HardwareFLOPsPerToken, commas(t.TokensPerStep))
		fmt.Fprintf(b, "  step %.2f s = compute %.2f s × (1 + bubble %.1f%%) + TP %.2f s + CP %.2f s + PP %.2f s + EP %.2f s + exposed DP %.2f s (of %.2f s)\n",
			t.StepSeconds, t.ComputeSeconds, 100*t.BubbleFraction, t.TPCommSeconds, t.CPCommSeconds, t.PPCommSeconds, t.EPCommSeconds, t.DPExposedSeconds, t.DPCommSeconds)
		fmt.Fprintf(b, "  %s tokens/s, MFU %.1f%% (assumed %.0f%% of peak while computing), communication %.1f%% of the step\n",
			commas(int64(t.TokensPerSecond)), 100*t.MFU, 100*c.Hardware.MFU, 100*t.CommFraction)
		if t.Steps > 0 {
			fmt.Fprintf(b, "  %s %s: %.1f h (%.1f days), %.0f GPU-hours", commas(t.Steps), stepsNoun(t.Steps), t.TotalHours, t.TotalHours/24, t.GPUHours)
			if t.Cost > 0 {
				fmt.Fprintf(b, ", cost %.0f at %.2f per GPU-hour", t.Cost, c.Hardware.PricePerGPUHour)
			}
			b.WriteString("\n")
		}
	}
}

// writeStaticRoofline writes the slowest operators against the GPU's roofline.
func writeStaticRoofline(b *strings.Builder, r *static.Report) {
	if rf := r.Roofline; rf != nil {
		fmt.Fprintf(b, "\nROOFLINE (%s %s: %.0f TFLOP/s, %.2f TB/s, ridge %.0f FLOP/B; predicted utilization %.0f%%)\n",
			rf.GPU, rf.Dtype, rf.PeakTFLOPS, rf.BandwidthTBs, rf.RidgePoint, 100*rf.PredictedUtil)
		pts := append([]static.RooflinePoint(nil), rf.Points...)
		sort.SliceStable(pts, func(i, j int) bool { return pts[i].Seconds > pts[j].Seconds })
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  operator\tphase\tGFLOP\tMB moved\tFLOP/B\tbound\tutil\t")
		for i, p := range pts {
			if i == 12 {
				break
			}
			fmt.Fprintf(tw, "  %s\t%s\t%.2f\t%.1f\t%.1f\t%s\t%.0f%%\t\n", p.Name, p.Phase, p.FLOPs/1e9, p.Bytes/1e6, p.Intensity, p.Bound, 100*p.Utilization)
		}
		tw.Flush()
	}
}

// writeStaticFindings writes the strategy comparison, the searches, the recommendations and the assumptions.
func writeStaticFindings(b *strings.Builder, r *static.Report) {
	if len(r.Strategies) > 0 {
		b.WriteString("\nSTRATEGY COMPARISON (same GPUs, same global batch)\n")
		writeStaticStrategies(b, r.Strategies)
	}
	for _, sr := range []*static.SearchResult{r.MaxBatch, r.MaxSeq} {
		if sr != nil {
			fmt.Fprintf(b, "\nMax %s: %d", sr.Parameter, sr.Max)
			if sr.Max > 0 {
				fmt.Fprintf(b, " (peak allocated %s, device %s)", units.Bytes(sr.PeakBytes), units.Bytes(sr.DeviceBytes))
			}
			if sr.Note != "" {
				fmt.Fprintf(b, " — %s", sr.Note)
			}
			b.WriteString("\n")
		}
	}
	if len(r.Recommendations) > 0 {
		b.WriteString("\nRECOMMENDATIONS\n")
		for i, rc := range r.Recommendations {
			fmt.Fprintf(b, "  %d. [%s] %s — %s\n", i+1, strings.ToUpper(rc.Severity), rc.Title, rc.Detail)
		}
	}
	b.WriteString("\nASSUMPTIONS\n")
	for _, a := range r.Assumptions {
		fmt.Fprintf(b, "  - %s\n", a)
	}
}
func writeStaticStrategies(b *strings.Builder, rows []static.StrategyRow) {
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  strategy\tdp\ttp\tpp\tzero\tpeak alloc\tdevice\tfits\tstep s\ttokens/s\tcomm\t")
	for _, s := range rows {
		if s.PeakBytes == 0 {
			fmt.Fprintf(tw, "  %s\t\t%d\t%d\t%d\t\t\t\t\t\t\t  (%s)\n", s.Name, s.TP, s.PP, s.ZeroStage, s.Note)
			continue
		}
		fit := "no"
		if s.Fits {
			fit = "yes"
		}
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%.2f\t%s\t%.0f%%\t\n", s.Name, s.DP, s.TP, s.PP, s.ZeroStage, units.Bytes(s.PeakBytes), units.Bytes(s.DeviceBytes), fit, s.StepSeconds, commas(int64(s.TokensPerSec)), 100*s.CommFraction)
	}
	tw.Flush()
}

// WriteStaticMarkdown renders static_report.md.
func WriteStaticMarkdown(w io.Writer, r *static.Report) error {
	w = printable(w)
	var b strings.Builder
	s := r.Summary
	c := r.Config
	fmt.Fprintf(&b, "# memscan static report — %s\n\n", r.Metadata.Model)
	fmt.Fprintf(&b, "- Mode: %s, precision %s\n- GPU: %s × %d\n- Layout: `%s`\n- Parameters: %s (per GPU of the worst stage, before ZeRO sharding: %s)\n",
		c.Mode, precisionLabel(r), r.Fit.GPU, c.Hardware.NumGPUs, r.Metadata.Layout, commas(r.Params.Total), commas(s.ParamCountPerGPU))
	if f := r.Metadata.Framework; f != "" {
		fmt.Fprintf(&b, "- Framework: %s\n", f)
	}
	fmt.Fprintf(&b, "\n**%s**\n\n", r.Fit.Verdict)
	if r.OOM != nil {
		fmt.Fprintf(&b, "**%s.**\n\n", staticOOMLine(r.OOM))
	}
	b.WriteString("## Summary (per GPU, worst pipeline stage)\n\n| key | value |\n|---|---|\n")
	for _, kv := range []struct {
		k string
		v int64
	}{{"weight_memory_bytes", s.WeightMemoryBytes}, {"grad_memory_bytes", s.GradMemoryBytes}, {"optimizer_memory_bytes", s.OptimizerMemoryBytes},
		{"activation_memory_bytes", s.ActivationMemoryBytes}, {"kv_cache_memory_bytes", s.KVCacheMemoryBytes}, {"temporary_memory_bytes", s.TemporaryMemoryBytes},
		{"other_memory_bytes", s.OtherMemoryBytes}, {"persistent_memory_bytes", s.PersistentMemoryBytes}, {"peak_memory_bytes", s.PeakMemoryBytes},
		{"peak_reserved_bytes", s.PeakReservedBytes}, {"device_total_bytes", s.DeviceTotalBytes}} {
		fmt.Fprintf(&b, "| %s | %s (%s) |\n", kv.k, commas(kv.v), units.Bytes(kv.v))
	}
	fmt.Fprintf(&b, "| peak_stage | %s |\n| reserved_source | %s |\n\n", s.PeakStage, s.ReservedSource)
	writeStaticMarkdownExtras(&b, r)
	if len(r.Stages) > 1 {
		b.WriteString("## Pipeline stages\n\n| stage | params | weights | grads | optimizer | activations | peak allocated | at | reserved | device |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for _, st := range r.Stages {
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", st.Index, commas(st.Params), units.Bytes(st.Weights), units.Bytes(st.Grads), units.Bytes(st.Optimizer),
				units.Bytes(st.Activations), units.Bytes(st.PeakAllocated), st.PeakStage, units.Bytes(st.PeakReserved), units.Bytes(st.DeviceTotal))
		}
		b.WriteString("\n")
	}
	b.WriteString("## Operators\n\n| name | category | phase | layer | × | memory | temp | formula |\n|---|---|---|---|---|---|---|---|\n")
	for _, op := range r.Operators {
		fmt.Fprintf(&b, "| %s | %s | %s | %d | %d | %s | %s | %s |\n", op.Name, op.Category, op.Phase, op.Layer, op.Multiplier,
			units.Bytes(op.MemoryBytes), units.Bytes(op.TempBytes), strings.ReplaceAll(op.Formula, "|", "\\|"))
	}
	if t := r.Time; t != nil {
		fmt.Fprintf(&b, "\n## Time\n\n- Step: %.2f s (compute %.2f s, bubble %.1f%%, TP %.2f s, CP %.2f s, PP %.2f s, EP %.2f s, exposed DP %.2f s)\n- %s tokens/s, MFU %.1f%%\n",
			t.StepSeconds, t.ComputeSeconds, 100*t.BubbleFraction, t.TPCommSeconds, t.CPCommSeconds, t.PPCommSeconds, t.EPCommSeconds, t.DPExposedSeconds, commas(int64(t.TokensPerSecond)), 100*t.MFU)
		if t.Steps > 0 {
			fmt.Fprintf(&b, "- %s %s: %.1f h, %.0f GPU-hours, cost %.0f\n", commas(t.Steps), stepsNoun(t.Steps), t.TotalHours, t.GPUHours, t.Cost)
		}
	}
	if rf := r.Roofline; rf != nil {
		fmt.Fprintf(&b, "\n## Roofline\n\nRidge point %.0f FLOP/B (%.0f TFLOP/s / %.2f TB/s); predicted utilization %.0f%%.\n\n| operator | phase | FLOP/B | bound | utilization |\n|---|---|---|---|---|\n",
			rf.RidgePoint, rf.PeakTFLOPS, rf.BandwidthTBs, 100*rf.PredictedUtil)
		for _, p := range rf.Points {
			fmt.Fprintf(&b, "| %s | %s | %.1f | %s | %.0f%% |\n", p.Name, p.Phase, p.Intensity, p.Bound, 100*p.Utilization)
		}
	}
	if len(r.Strategies) > 0 {
		b.WriteString("\n## Strategy comparison\n\n| strategy | dp | tp | pp | zero | peak allocated | device | fits | step s | tokens/s |\n|---|---|---|---|---|---|---|---|---|---|\n")
		for _, st := range r.Strategies {
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %s | %s | %t | %.2f | %s |\n", st.Name, st.DP, st.TP, st.PP, st.ZeroStage, units.Bytes(st.PeakBytes), units.Bytes(st.DeviceBytes), st.Fits, st.StepSeconds, commas(int64(st.TokensPerSec)))
		}
	}
	for _, sr := range []*static.SearchResult{r.MaxBatch, r.MaxSeq} {
		if sr != nil {
			fmt.Fprintf(&b, "\nMax `%s`: **%d** %s\n", sr.Parameter, sr.Max, sr.Note)
		}
	}
	if len(r.Recommendations) > 0 {
		b.WriteString("\n## Recommendations\n\n")
		for _, rc := range r.Recommendations {
			fmt.Fprintf(&b, "- **[%s] %s** — %s\n", rc.Severity, rc.Title, rc.Detail)
		}
	}
	b.WriteString("\n## Assumptions\n\n")
	for _, a := range r.Assumptions {
		fmt.Fprintf(&b, "- %s\n", a)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// commas groups digits with commas, the static report's style of GroupDigits.
func commas(v int64) string { return strings.ReplaceAll(GroupDigits(v), " ", ",") }

// ChartError reports charts that could not be drawn; the files written before them are complete.
type ChartError struct{ Err error }

func (e *ChartError) Error() string { return "charts: " + e.Err.Error() }
func (e *ChartError) Unwrap() error { return e.Err }

// chartFailures sorts the failures of charts: one that could not be written (a full disk, a vanished folder)
// fails the command as any file does; the others, charts that could not be drawn, are a *ChartError that
// callers report as a warning after the other files.
func chartFailures(errs []error) error {
	var writes, draws []error
	for _, err := range errs {
		if isWriteFailure(err) {
			writes = append(writes, err)
		} else {
			draws = append(draws, err)
		}
	}
	switch {
	case len(writes) > 0:
		return errors.Join(writes...)
	case len(draws) > 0:
		return &ChartError{Err: errors.Join(draws...)}
	}
	return nil
}

func isWriteFailure(err error) bool {
	var we *atomicfile.Error
	return errors.As(err, &we)
}

// WriteStaticFiles writes static_report.json, static_report.md and, when withPlots, the charts of rep into dir
// (created if needed), each atomically. Charts that cannot be drawn are returned as a *ChartError after the
// reports are written; a file that cannot be written (a full disk) is an *atomicfile.Error.
func WriteStaticFiles(dir string, rep *static.Report, withPlots bool) error {
	if err := mkdirAll(dir); err != nil {
		return err
	}
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{{FileStaticJSON, func(w io.Writer) error { return WriteStaticJSON(w, rep) }},
		{FileStaticMarkdown, func(w io.Writer) error { return WriteStaticMarkdown(w, rep) }}} {
		if err := WriteFile(filepath.Join(dir, f.name), f.write); err != nil {
			return err
		}
	}
	if !withPlots {
		return nil
	}
	var errs []error
	for _, c := range staticCharts(rep) {
		if err := c.draw(filepath.Join(dir, c.file)); err != nil {
			errs = append(errs, err)
		}
	}
	return chartFailures(errs)
}

type staticChart struct {
	file string
	draw func(path string) error
}

// staticCharts maps the report to plain chart data.
func staticCharts(rep *static.Report) []staticChart {
	var charts []staticChart
	var comps []plots.Series
	for _, c := range rep.Components() {
		comps = append(comps, plots.Series{Name: c.Name, Values: []float64{float64(c.Bytes)}})
	}
	charts = append(charts, staticChart{"memory_breakdown.png", func(p string) error {
		return plots.StackedBars(p, plots.StackedBarChart{Title: "Predicted memory per GPU (worst stage, " + rep.Summary.PeakStage + " peak)",
			Groups: []string{rep.Metadata.Model}, Series: comps, Limit: float64(rep.Fit.UsableBytes), LimitLabel: "usable"})
	}})
	if len(rep.Stages) > 0 && rep.Config.Mode == "train" {
		labels := make([]string, len(rep.Stages))
		series := []plots.Series{{Name: "weights"}, {Name: "gradients"}, {Name: "optimizer states"}, {Name: "activations"}, {Name: "temporaries"}, {Name: "other and overheads"}}
		for i, st := range rep.Stages {
			labels[i] = fmt.Sprintf("stage %d", st.Index)
			vals := []int64{st.Weights, st.AtPeak.Grads, st.Optimizer, st.AtPeak.Activations, st.AtPeak.Temporaries, st.DeviceTotal - st.PeakAllocated + st.Other}
			for k, v := range vals {
				series[k].Values = append(series[k].Values, float64(v))
			}
		}
		charts = append(charts, staticChart{"peak_per_stage.png", func(p string) error {
			return plots.StackedBars(p, plots.StackedBarChart{Title: "Predicted peak per pipeline stage (one GPU each)", Groups: labels,
				Series: series, Limit: float64(rep.Fit.UsableBytes), LimitLabel: "usable"})
		}})
	}
	if len(rep.Strategies) > 0 {
		var labels []string
		var vals []float64
		for _, s := range rep.Strategies {
			if s.DeviceBytes == 0 {
				continue
			}
			labels = append(labels, s.Name)
			vals = append(vals, float64(s.DeviceBytes))
		}
		charts = append(charts, staticChart{"strategy_comparison.png", func(p string) error {
			return plots.StackedBars(p, plots.StackedBarChart{Title: "Per-GPU memory by strategy", Groups: labels,
				Series: []plots.Series{{Name: "device total", Values: vals}}, Limit: float64(rep.Fit.UsableBytes), LimitLabel: "usable"})
		}})
	}
	if rf := rep.Roofline; rf != nil && len(rf.Points) > 0 {
		pts := make([]plots.StaticRooflinePoint, 0, len(rf.Points))
		for _, p := range rf.Points {
			pts = append(pts, plots.StaticRooflinePoint{Label: p.Name, Intensity: p.Intensity, TFLOPS: p.Attainable, Memory: p.Phase == "decode"})
		}
		charts = append(charts, staticChart{"roofline.png", func(p string) error {
			return plots.StaticRoofline(p, fmt.Sprintf("Roofline — %s (%s)", rf.GPU, rf.Dtype), rf.PeakTFLOPS, rf.BandwidthTBs, pts)
		}})
	}
	return charts
}
