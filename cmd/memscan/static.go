package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/memscan/memscan/plots"
	"github.com/memscan/memscan/results"
	"github.com/memscan/memscan/static"
)

const staticUsage = `Usage: memscan static [--config FILE.json|.yaml] [flags]

Predict per-GPU memory (weights, gradients, optimizer states, activations, temporaries, allocator and runtime
overheads) for a training or inference configuration, for every pipeline stage, with the fit verdict, training
time, roofline and recommendations. Writes static_report.json, static_report.md and PNG charts to --out and
prints the console view (or --format json|md) to stdout.

Flags given on the command line override the config file; without --config the flags alone describe the run,
e.g.  memscan static --model llama3-8b --gpu h100 --num-gpus 8 --zero 3 --micro-batch-size 2 --seq-length 8192

Flags:
`

// runStatic implements `memscan static`.
func runStatic(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("static", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	configPath := fs.String("config", "", "config file (JSON, or YAML by extension/content); see testdata/static/")
	out := fs.String("out", "outputs", "directory for static_report.json, static_report.md and the PNGs")
	format := fs.String("format", "text", "stdout format: text, json or md")
	noPlots := fs.Bool("no-plots", false, "do not draw PNG charts")
	noFiles := fs.Bool("no-files", false, "print only; write nothing to --out")
	gpusFile := fs.String("gpus-file", "", "JSON/YAML list of custom GPU specs (see memscan gpus --help) usable by --gpu")

	framework := fs.String("framework", "", "training stack whose defaults fill what the config leaves out: "+strings.Join(static.FrameworkNames(), ", "))
	preset := fs.String("model", "", "model preset (memscan gpus --presets lists them), e.g. llama3-8b")
	size := fs.Float64("model-size", 0, "pick standard LLaMA-style dims for this many billion parameters, e.g. 7.0")
	mode := fs.String("mode", "", "train or inference")
	mbs := fs.Int("micro-batch-size", 0, "micro-batch size per GPU (training)")
	fs.IntVar(mbs, "batch-size", 0, "alias of --micro-batch-size; the batch in inference mode")
	gbs := fs.Int("global-batch-size", 0, "global batch size (sets the number of micro-batches)")
	seq := fs.Int("seq-length", 0, "sequence length (training) or prompt length (inference)")
	gen := fs.Int("generate-tokens", -1, "inference: tokens generated after the prompt (KV cache grows)")
	precision := fs.String("precision", "", "fp32, bf16, fp16, bf16-mixed, fp16-mixed (mixed = fp32 master weights and grads), amp-bf16 or amp-fp16 (fp32 params under torch.autocast)")
	optimizer := fs.String("optimizer", "", "adamw, adamw-8bit, sgd or adafactor")
	attention := fs.String("attention", "", "sdpa (PyTorch picks the kernel), flash, efficient, cudnn, math, flex or standard (unfused)")
	recompute := fs.String("recompute", "", "activation recomputation: none, selective (Megatron core attention), full or op_selective (torchtitan per-op policy)")
	loss := fs.String("loss", "", "cross-entropy: standard (HF: fp32 logits), fused (Megatron vocab-parallel), fused_jit (Megatron --cross-entropy-loss-fusion), chunked (fused linear CE) or chunked_output (torchtune)")
	kernels := fs.String("kernels", "", "fused (Megatron/Transformer Engine, compiled) or eager (HF transformers: fp32 RMSNorm, unfused SwiGLU)")
	tp := fs.Int("tp", 0, "tensor parallel size")
	pp := fs.Int("pp", 0, "pipeline parallel size")
	dp := fs.Int("dp", 0, "data parallel size (default: num-gpus / (tp·pp·cp))")
	cp := fs.Int("cp", 0, "context parallel size")
	ep := fs.Int("ep", 0, "expert parallel size")
	sp := fs.Bool("sp", false, "sequence parallelism (with tp > 1)")
	zero := fs.Int("zero", -1, "ZeRO stage 0-3 (3 = FSDP full shard)")
	distOpt := fs.Bool("dist-opt", false, "Megatron distributed optimizer (shards optimizer states, keeps a persistent grad buffer)")
	vstages := fs.Int("virtual-stages", 0, "virtual pipeline stages per GPU (interleaved schedule)")
	gpu := fs.String("gpu", "", "GPU key or name (memscan gpus lists them)")
	numGPUs := fs.Int("num-gpus", 0, "number of GPUs")
	usable := fs.Float64("usable-fraction", 0, "fraction of GPU memory considered usable for the fit verdict (default 0.95)")
	mfu := fs.Float64("mfu", 0, "assumed fraction of dense peak FLOPs while computing (default 0.40)")
	trainTokens := fs.Float64("train-tokens", 0, "tokens to train on, for the time and cost estimate")
	price := fs.Float64("price-per-gpu-hour", 0, "price of one GPU-hour, for the cost estimate")
	unroll := fs.Bool("unroll", false, "one operator record per layer instead of one per kind with a multiplier")
	maxBatch := fs.Bool("max-batch-size", false, "search the largest micro-batch (batch in inference) that fits")
	maxSeq := fs.Bool("max-seq-length", false, "search the longest sequence (prompt in inference) that fits")
	compare := fs.Bool("compare-strategies", false, "compare DP, ZeRO-1/2/3, TP, PP and hybrids on the same GPUs")
	calibration := fs.String("calibration", "", "corrections file from memscan calibrate: also report the corrected prediction (the raw one is unchanged)")
	help := fs.BoolP("help", "h", false, "show this help")

	if helped, err := parseFlags(fs, args, help, staticUsage, stdout); helped || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("static: unexpected argument %q (the config goes after --config)", fs.Arg(0))
	}
	if *format != "text" && *format != "json" && *format != "md" {
		return usageErrorf("static: --format %q (must be text, json or md)", *format)
	}

	var cfg static.Config
	if fs.Changed("model-size") && !(*size > 0) {
		// Checked before the "give --config or --model" hint, which would wrongly say the flag is missing.
		return usageErrorf("static: --model-size must be a positive number of billions of parameters, got %v", *size)
	}
	if *configPath != "" {
		c, err := static.LoadConfigFramework(*configPath, *framework)
		if err != nil {
			return usageErrorf("%v", err)
		}
		cfg = *c
	} else {
		if *preset == "" && *size == 0 {
			return usageErrorf("static: give --config FILE, --model PRESET or --model-size N (see memscan static --help)")
		}
		c, err := static.DefaultConfigFor(*framework)
		if err != nil {
			return usageErrorf("static: --%v", err)
		}
		cfg = c
	}
	if *gpusFile != "" {
		specs, err := static.LoadGPUFile(*gpusFile)
		if err != nil {
			return usageErrorf("%v", err)
		}
		if *gpu != "" {
			for i := range specs {
				if strings.EqualFold(specs[i].Key, *gpu) || strings.EqualFold(specs[i].Name, *gpu) {
					cfg.Hardware.Custom = &specs[i]
				}
			}
		}
	}
	set := func(name string) bool { return fs.Changed(name) }
	if set("model") {
		cfg.Model = static.ModelConfig{Preset: *preset}
	}
	if set("model-size") {
		cfg.Model = static.ModelConfig{SizeBillions: *size}
	}
	if set("mode") {
		cfg.Mode = *mode
	}
	if set("micro-batch-size") || set("batch-size") {
		cfg.Training.MicroBatchSize = *mbs
		cfg.Inference.BatchSize = *mbs
		if !set("global-batch-size") {
			cfg.Training.GlobalBatchSize, cfg.Parallel.NumMicrobatches = 0, 0
		}
	}
	if set("global-batch-size") {
		cfg.Training.GlobalBatchSize, cfg.Parallel.NumMicrobatches = *gbs, 0
	}
	if set("seq-length") {
		cfg.Training.SeqLength = *seq
		cfg.Inference.PromptLength = *seq
	}
	if set("generate-tokens") {
		cfg.Inference.GenerateTokens = *gen
	}
	strs := []struct {
		flag string
		v    string
		dst  *string
	}{{"precision", *precision, &cfg.Training.Precision}, {"optimizer", *optimizer, &cfg.Training.Optimizer},
		{"attention", *attention, &cfg.Training.Attention}, {"recompute", *recompute, &cfg.Training.Recompute},
		{"loss", *loss, &cfg.Training.Loss}, {"kernels", *kernels, &cfg.Training.Kernels}, {"gpu", *gpu, &cfg.Hardware.GPU}}
	for _, s := range strs {
		if set(s.flag) {
			*s.dst = s.v
		}
	}
	if set("precision") {
		cfg.Training.GradPrecision = ""
	}
	if set("gpu") && cfg.Hardware.Custom != nil && !strings.EqualFold(cfg.Hardware.Custom.Key, *gpu) {
		cfg.Hardware.Custom = nil
	}
	layoutChanged := false
	ints := []struct {
		flag string
		v    int
		dst  *int
	}{{"tp", *tp, &cfg.Parallel.TP}, {"pp", *pp, &cfg.Parallel.PP}, {"dp", *dp, &cfg.Parallel.DP}, {"cp", *cp, &cfg.Parallel.CP},
		{"ep", *ep, &cfg.Parallel.EP}, {"zero", *zero, &cfg.Parallel.ZeroStage}, {"virtual-stages", *vstages, &cfg.Parallel.VirtualStages},
		{"num-gpus", *numGPUs, &cfg.Hardware.NumGPUs}}
	for _, s := range ints {
		if set(s.flag) {
			*s.dst = s.v
			layoutChanged = true
		}
	}
	if layoutChanged {
		// Re-derive what depended on the old layout.
		if !set("dp") {
			cfg.Parallel.DP = 0
		}
		// The global batch is a training choice and stays; the micro-batch count follows from it and the new
		// data-parallel size.
		cfg.Parallel.NumMicrobatches = 0
		if set("tp") || set("num-gpus") {
			cfg.Parallel.ETP = 0
		}
	}
	if set("sp") {
		cfg.Parallel.SequenceParallel = *sp
	}
	if set("dist-opt") {
		cfg.Parallel.DistributedOptimizer = *distOpt
		cfg.Parallel.GradBuffer = "auto"
	}
	if set("usable-fraction") {
		cfg.Hardware.UsableFraction = *usable
	}
	if set("mfu") {
		cfg.Hardware.MFU = *mfu
	}
	if set("train-tokens") {
		cfg.Training.TrainTokens = *trainTokens
	}
	if set("price-per-gpu-hour") {
		cfg.Hardware.PricePerGPUHour = *price
	}
	if set("unroll") {
		cfg.Output.Unroll = *unroll
	}
	if err := cfg.Resolve(); err != nil {
		return usageErrorf("static: %v", err)
	}

	rep, err := static.Estimate(cfg)
	if err != nil {
		return usageErrorf("static: %v", err)
	}
	if *maxBatch {
		if rep.MaxBatch, err = static.MaxBatchSize(ctx, cfg); err != nil {
			return fmt.Errorf("static: max batch search: %w", err)
		}
	}
	if *maxSeq {
		if rep.MaxSeq, err = static.MaxSeqLength(ctx, cfg); err != nil {
			return fmt.Errorf("static: max sequence search: %w", err)
		}
	}
	if *compare {
		if rep.Strategies, err = static.CompareStrategies(ctx, cfg); err != nil {
			return fmt.Errorf("static: strategy comparison: %w", err)
		}
	}

	applied, err := staticCalibration(*calibration, cfg)
	if err != nil {
		return err
	}

	switch *format {
	case "json":
		err = rep.WriteJSON(stdout)
	case "md":
		err = rep.WriteMarkdown(stdout)
	default:
		err = rep.WriteText(stdout)
	}
	if err != nil {
		return err
	}
	if applied != nil && *format != "json" {
		if err := applied.WriteText(stdout); err != nil {
			return err
		}
	}
	if *noFiles {
		return nil
	}
	if err := writeStaticFiles(*out, rep, !*noPlots, stderr); err != nil {
		return err
	}
	return writeStaticCalibration(*out, applied)
}

func writeStaticFiles(dir string, rep *static.Report, withPlots bool, stderr io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("static: %w", err)
	}
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{{"static_report.json", rep.WriteJSON}, {"static_report.md", rep.WriteMarkdown}} {
		if err := results.WriteFile(filepath.Join(dir, f.name), f.write); err != nil {
			return fmt.Errorf("static: %w", err)
		}
	}
	if withPlots {
		var errs []error
		for _, p := range staticCharts(rep) {
			if err := p.draw(filepath.Join(dir, p.file)); err != nil {
				errs = append(errs, err)
			}
		}
		if err := errors.Join(errs...); err != nil {
			fmt.Fprintf(stderr, "memscan: warning: charts: %v\n", err)
		}
	}
	fmt.Fprintf(stderr, "wrote %s\n", dir)
	return nil
}

type staticChart struct {
	file string
	draw func(path string) error
}

// staticCharts maps the report to plain chart data.
func staticCharts(rep *static.Report) []staticChart {
	var charts []staticChart
	var comps []plots.StaticBar
	for _, c := range rep.Components() {
		comps = append(comps, plots.StaticBar{Label: c.Name, Values: []float64{float64(c.Bytes)}})
	}
	charts = append(charts, staticChart{"memory_breakdown.png", func(p string) error {
		return plots.StaticStackedBar(p, "Predicted memory per GPU (worst stage, "+rep.Summary.PeakStage+" peak)",
			[]string{rep.Metadata.Model}, comps, float64(rep.Fit.UsableBytes), "usable")
	}})
	if len(rep.Stages) > 0 && rep.Config.Mode == "train" {
		labels := make([]string, len(rep.Stages))
		series := []plots.StaticBar{{Label: "weights"}, {Label: "gradients"}, {Label: "optimizer"}, {Label: "activations"}, {Label: "temporaries"}, {Label: "overheads"}}
		for i, st := range rep.Stages {
			labels[i] = fmt.Sprintf("stage %d", st.Index)
			vals := []int64{st.Weights, st.AtPeak.Grads, st.Optimizer, st.AtPeak.Activations, st.AtPeak.Temporaries, st.DeviceTotal - st.PeakAllocated + st.Other}
			for k, v := range vals {
				series[k].Values = append(series[k].Values, float64(v))
			}
		}
		charts = append(charts, staticChart{"peak_per_stage.png", func(p string) error {
			return plots.StaticStackedBar(p, "Predicted peak per pipeline stage (one GPU each)", labels, series, float64(rep.Fit.UsableBytes), "usable")
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
			return plots.StaticStackedBar(p, "Per-GPU memory by strategy", labels, []plots.StaticBar{{Label: "device total", Values: vals}}, float64(rep.Fit.UsableBytes), "usable")
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
