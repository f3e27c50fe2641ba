package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/memscan/memscan/gpu"
	"github.com/memscan/memscan/internal/calibrate"
	"github.com/memscan/memscan/internal/results"
	"github.com/memscan/memscan/static"
)

var staticHelp = helpDoc{
	usage: []string{"memscan static [--config FILE.json|.yaml] [flags]"},
	description: `
Predict per-GPU memory (weights, gradients, optimizer states, activations, temporaries, allocator and runtime
overheads) for a training or inference configuration, for every pipeline stage, with the fit verdict, training
time, roofline and recommendations. Prints the console view (or --format json|md) to stdout and writes
<out>/<YYYYMMDD_HHMMSS>_<name>/ with static_report.json, static_report.md, the PNG charts and, with
--calibration, static_calibrated.json, and points <out>/latest at it (--no-files: print only).

Flags given on the command line override the config file; without --config the flags alone describe the run.`,
	examples: []string{
		"memscan static --config testdata/static/llama3-8b-fsdp8.json",
		"memscan static --model llama3-8b --gpu h100 --num-gpus 8 --zero 3 --micro-batch-size 2 --seq-length 8192",
		"memscan static --config testdata/static/llama2-70b-tp8-pp2.yaml --max-batch-size --compare-strategies",
		"memscan static --model llama3.2-1b --framework hf --gpu h200 --micro-batch-size 4 --no-files",
		"memscan static --config cfg.json --calibration corrections.json   # raw and corrected prediction",
		"memscan static --config cfg.json --format json --no-files > prediction.json",
	},
	exits: []exitDoc{
		{exitOK, "the prediction was printed (and written)"},
		{exitUsage, "usage error (bad flag, unreadable or invalid config, unknown model or GPU, --out not a directory, ...)"},
		{exitFailed, "a search or the corrections could not be completed"},
		writeFailedDoc,
		interruptedDoc,
	},
}

// staticFlags are the parsed flags of memscan static; o holds the flags that override the config's values.
type staticFlags struct {
	config, out, name, format, gpusFile, framework, calibration string
	noPlots, noFiles, maxBatch, maxSeq, compare                 bool
	writeTo                                                     string // results root of the run directory; "" writes none
	o                                                           static.Overrides
}

// runStatic implements `memscan static`.
func runStatic(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, c, helped, err := parseStaticFlags(args, stdout, stderr)
	if helped || err != nil {
		return err
	}
	cfg, err := staticConfig(f, c)
	if err != nil {
		return err
	}
	rep, err := staticReport(ctx, cfg, f)
	if err != nil {
		return err
	}
	applied, err := staticCalibration(f.calibration, cfg)
	if err != nil {
		return err
	}
	if applied != nil {
		for _, w := range applied.Warnings {
			fmt.Fprintf(stderr, "memscan: warning: --calibration: %s\n", w)
		}
	}
	return writeStatic(rep, applied, f, stdout, stderr)
}

func parseStaticFlags(args []string, stdout, stderr io.Writer) (*staticFlags, *cmdLine, bool, error) {
	f := &staticFlags{o: static.Overrides{Set: map[string]bool{}}}
	c := newCmdLine("static", staticHelp, stderr)
	c.StringVar(&f.config, "config", "", "config file (JSON, or YAML by extension/content); see testdata/static/")
	c.outFlag(&f.out)
	c.nameFlag(&f.name, "static_ and the config file's name, or the model's")
	c.formatFlag(&f.format, "text", "text", "json", "md")
	c.noPlotsFlag(&f.noPlots)
	c.noFilesFlag(&f.noFiles)
	c.StringVar(&f.gpusFile, "gpus-file", "", "JSON/YAML list of custom GPU specs (see memscan gpus --help) usable by --gpu")
	c.StringVar(&f.framework, "framework", "", "training stack whose defaults fill what the config leaves out: "+strings.Join(static.FrameworkNames(), ", "))
	overrideFlags(c.FlagSet, &f.o)
	c.BoolVar(&f.maxBatch, "max-batch-size", false, "search the largest micro-batch (batch in inference) that fits")
	c.BoolVar(&f.maxSeq, "max-seq-length", false, "search the longest sequence (prompt in inference) that fits")
	c.BoolVar(&f.compare, "compare-strategies", false, "compare DP, ZeRO-1/2/3, TP, PP and hybrids on the same GPUs")
	c.StringVar(&f.calibration, "calibration", "", "corrections file from memscan calibrate: also report the corrected prediction (the raw one is unchanged)")
	if helped, err := c.parse(args, stdout); helped || err != nil {
		return nil, nil, helped, err
	}
	switch {
	case c.NArg() > 0:
		return nil, nil, false, usageErrorf("static: unexpected argument %q (the config goes after --config)", c.Arg(0))
	case !c.formatOK(f.format):
		return nil, nil, false, usageErrorf("static: --format %q (must be text, json or md)", f.format)
	}
	var err error
	if f.writeTo, err = c.filesDir(f.out, f.noFiles, true, stderr); err != nil {
		return nil, nil, false, err
	}
	return f, c, false, nil
}

// staticConfig builds the configuration: the --config file (or the --framework defaults) with the flags given on
// the command line applied over it.
func staticConfig(f *staticFlags, c *cmdLine) (static.Config, error) {
	var cfg static.Config
	o := &f.o
	if c.Changed("model-size") && !(o.SizeBillions > 0) {
		// Checked before the "give --config or --model" hint, which would wrongly say the flag is missing.
		return cfg, usageErrorf("static: --model-size must be a positive number of billions of parameters, got %v", o.SizeBillions)
	}
	if f.config != "" {
		loaded, err := static.LoadConfigFramework(f.config, f.framework)
		if err != nil {
			return cfg, usageErrorf("static: --config: %v", err)
		}
		cfg = *loaded
	} else {
		if o.Preset == "" && o.SizeBillions == 0 {
			return cfg, usageErrorf("static: give --config FILE, --model PRESET or --model-size N (see memscan static --help)")
		}
		defaults, err := static.DefaultConfigFor(f.framework)
		if err != nil {
			return cfg, usageErrorf("static: --%v", err)
		}
		cfg = defaults
	}
	c.Visit(func(fl *pflag.Flag) { o.Set[fl.Name] = true })
	if f.gpusFile != "" {
		specs, err := gpu.LoadFile(f.gpusFile)
		if err != nil {
			return cfg, usageErrorf("static: --gpus-file: %v", err)
		}
		o.CustomGPUs = specs
	}
	cfg.Apply(*o)
	if err := cfg.Resolve(); err != nil {
		return cfg, usageErrorf("static: %v", err)
	}
	return cfg, nil
}

// staticReport runs the estimate and the searches the flags ask for.
func staticReport(ctx context.Context, cfg static.Config, f *staticFlags) (*static.Report, error) {
	rep, err := static.Estimate(cfg)
	if err != nil {
		return nil, usageErrorf("static: %v", err)
	}
	if f.maxBatch {
		if rep.MaxBatch, err = static.MaxBatchSize(ctx, cfg); err != nil {
			return nil, fmt.Errorf("static: max batch search: %w", err)
		}
	}
	if f.maxSeq {
		if rep.MaxSeq, err = static.MaxSeqLength(ctx, cfg); err != nil {
			return nil, fmt.Errorf("static: max sequence search: %w", err)
		}
	}
	if f.compare {
		if rep.Strategies, err = static.CompareStrategies(ctx, cfg); err != nil {
			return nil, fmt.Errorf("static: strategy comparison: %w", err)
		}
	}
	return rep, nil
}

// writeStatic prints the prediction in --format (with the corrected one after a text or Markdown view) and,
// unless --no-files, writes its files to --out.
func writeStatic(rep *static.Report, applied *calibrate.Applied, f *staticFlags, stdout, stderr io.Writer) error {
	var err error
	switch f.format {
	case "json":
		err = results.WriteStaticJSON(stdout, rep)
	case "md":
		err = results.WriteStaticMarkdown(stdout, rep)
	default:
		err = results.WriteStaticText(stdout, rep)
	}
	if err != nil {
		return err
	}
	if applied != nil && f.format != "json" {
		if err := results.WriteAppliedText(stdout, applied); err != nil {
			return err
		}
	}
	if f.writeTo == "" {
		return nil
	}
	dir, err := writeRun(f.writeTo, staticRunName(f), stderr, func(dir string) error {
		if err := results.WriteStaticFiles(dir, rep, !f.noPlots); err != nil {
			var charts *results.ChartError
			if !errors.As(err, &charts) {
				return err
			}
			fmt.Fprintf(stderr, "memscan: warning: %v\n", err)
		}
		return writeStaticCalibration(dir, applied)
	})
	if err != nil {
		return &exitError{code: exitFailed, err: fmt.Errorf("static: %w", err)}
	}
	fmt.Fprintf(stderr, "wrote %s\n", dir)
	return nil
}

// staticRunName is the run directory's name: --name, else static_ and the config file's stem, the model preset
// or the model size.
func staticRunName(f *staticFlags) string {
	switch {
	case f.name != "":
		return f.name
	case f.config != "":
		return "static_" + results.Stem(f.config)
	case f.o.Preset != "":
		return "static_" + f.o.Preset
	}
	return fmt.Sprintf("static_%gB", f.o.SizeBillions)
}

// overrideFlags declares the flags that override a config's values, bound to o; runStatic records which were
// given in o.Set.
func overrideFlags(fs *pflag.FlagSet, o *static.Overrides) {
	fs.StringVar(&o.Preset, "model", "", "model preset (memscan gpus --presets lists them), e.g. llama3-8b")
	fs.Float64Var(&o.SizeBillions, "model-size", 0, "pick standard LLaMA-style dims for this many billion parameters, e.g. 7.0")
	fs.StringVar(&o.Mode, "mode", "", "train or inference")
	fs.IntVar(&o.MicroBatch, "micro-batch-size", 0, "micro-batch size per GPU (training)")
	fs.IntVar(&o.MicroBatch, "batch-size", 0, "alias of --micro-batch-size; the batch in inference mode")
	fs.IntVar(&o.GlobalBatch, "global-batch-size", 0, "global batch size (sets the number of micro-batches)")
	fs.IntVar(&o.SeqLength, "seq-length", 0, "sequence length (training) or prompt length (inference)")
	fs.IntVar(&o.GenerateTokens, "generate-tokens", -1, "inference: tokens generated after the prompt (KV cache grows)")
	fs.StringVar(&o.Precision, "precision", "", "fp32, bf16, fp16, bf16-mixed, fp16-mixed (mixed = fp32 master weights and grads), amp-bf16 or amp-fp16 (fp32 params under torch.autocast)")
	fs.StringVar(&o.Optimizer, "optimizer", "", "adamw, adamw-8bit, sgd or adafactor")
	fs.StringVar(&o.Attention, "attention", "", "sdpa (PyTorch picks the kernel), flash, efficient, cudnn, math, flex or standard (unfused)")
	fs.StringVar(&o.Recompute, "recompute", "", "activation recomputation: none, selective (Megatron core attention), full or op_selective (torchtitan per-op policy)")
	fs.StringVar(&o.Loss, "loss", "", "cross-entropy: standard (HF: fp32 logits), fused (Megatron vocab-parallel), fused_jit (Megatron --cross-entropy-loss-fusion), chunked (fused linear CE) or chunked_output (torchtune)")
	fs.StringVar(&o.Kernels, "kernels", "", "fused (Megatron/Transformer Engine, compiled) or eager (HF transformers: fp32 RMSNorm, unfused SwiGLU)")
	fs.IntVar(&o.TP, "tp", 0, "tensor parallel size")
	fs.IntVar(&o.PP, "pp", 0, "pipeline parallel size")
	fs.IntVar(&o.DP, "dp", 0, "data parallel size (default: num-gpus / (tp·pp·cp))")
	fs.IntVar(&o.CP, "cp", 0, "context parallel size")
	fs.IntVar(&o.EP, "ep", 0, "expert parallel size")
	fs.BoolVar(&o.SequenceParallel, "sp", false, "sequence parallelism (with tp > 1)")
	fs.IntVar(&o.Zero, "zero", -1, "ZeRO stage 0-3 (3 = FSDP full shard)")
	fs.BoolVar(&o.DistributedOptimizer, "dist-opt", false, "Megatron distributed optimizer (shards optimizer states, keeps a persistent grad buffer)")
	fs.IntVar(&o.VirtualStages, "virtual-stages", 0, "virtual pipeline stages per GPU (interleaved schedule)")
	fs.StringVar(&o.GPU, "gpu", "", "GPU key or name (memscan gpus lists them)")
	fs.IntVar(&o.NumGPUs, "num-gpus", 0, "number of GPUs")
	fs.Float64Var(&o.UsableFraction, "usable-fraction", 0, "fraction of GPU memory considered usable for the fit verdict (default 0.95)")
	fs.Float64Var(&o.MFU, "mfu", 0, "assumed fraction of dense peak FLOPs while computing (default 0.40)")
	fs.Float64Var(&o.TrainTokens, "train-tokens", 0, "tokens to train on, for the time and cost estimate")
	fs.Float64Var(&o.PricePerGPUHour, "price-per-gpu-hour", 0, "price of one GPU-hour, for the cost estimate")
	fs.BoolVar(&o.Unroll, "unroll", false, "one operator record per layer instead of one per kind with a multiplier")
}
