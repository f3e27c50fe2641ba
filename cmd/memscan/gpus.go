package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/memscan/memscan/static"
	"github.com/memscan/memscan/units"
)

const gpusUsage = `Usage: memscan gpus [--format text|json] [--gpus-file FILE] [--presets]

List the GPU catalogue used by memscan static: CUDA-visible memory, memory bandwidth, dense peak throughput per
dtype (no 2:4 sparsity), the ridge point (BF16 FLOPs per byte, where memory- and compute-bound meet) and the
GPU-to-GPU interconnect. Use a key with memscan static --gpu KEY.

Custom GPUs: put a JSON or YAML list of objects with the keys key, name, memory_gb or memory_gib, bandwidth_tbs,
bf16_tflops (and optionally fp16_tflops, fp8_tflops, tf32_tflops, fp32_tflops, interconnect_gbps, interconnect)
in a file and pass it with --gpus-file here and to memscan static (then --gpu KEY selects it), or define one
inline in a config under hardware.custom.

Flags:
`

// runGPUs implements `memscan gpus`.
func runGPUs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("gpus", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	format := fs.String("format", "text", "output format: text or json")
	file := fs.String("gpus-file", "", "also list custom GPUs from this JSON/YAML file")
	presets := fs.Bool("presets", false, "list the model presets of memscan static instead")
	help := fs.BoolP("help", "h", false, "show this help")
	if helped, err := parseFlags(fs, args, help, gpusUsage, stdout); helped || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("gpus: unexpected argument %q", fs.Arg(0))
	}
	if *format != "text" && *format != "json" {
		return usageErrorf("gpus: --format %q (must be text or json)", *format)
	}
	if *presets {
		for _, n := range static.PresetNames() {
			m, _ := static.Preset(n)
			fmt.Fprintf(stdout, "%-14s %s L=%d h=%d heads=%d kv=%d ffn=%d vocab=%d experts=%d\n", n, m.Type, m.NumLayers, m.HiddenSize, m.NumAttentionHeads, m.NumKVHeads, m.FFNHiddenSize, m.VocabSize, m.NumExperts)
		}
		return nil
	}
	list := static.GPUs()
	if *file != "" {
		custom, err := static.LoadGPUFile(*file)
		if err != nil {
			return usageErrorf("gpus: %v", err)
		}
		list = append(list, custom...)
	}
	if *format == "json" {
		return units.WriteJSON(stdout, list)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tNAME\tMEM GiB\tBW TB/s\tBF16\tFP16\tFP8\tTF32\tFP32\tRIDGE\tINTERCONNECT")
	dash := func(v float64) string {
		if v == 0 {
			return "—"
		}
		return fmt.Sprintf("%g", v)
	}
	for _, g := range list {
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.3g\t%s\t%s\t%s\t%s\t%s\t%.0f\t%s %g GB/s\n", g.Key, g.Name, g.MemoryGiB, g.BandwidthTBs,
			dash(g.BF16TFLOPS), dash(g.FP16TFLOPS), dash(g.FP8TFLOPS), dash(g.TF32TFLOPS), dash(g.FP32TFLOPS), g.RidgePoint("bf16"),
			strings.TrimSpace(g.Interconnect), g.IntraGBps)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "\nTFLOP/s are dense vendor figures; RIDGE = BF16 peak / bandwidth in FLOP/byte; MEM is the CUDA-visible total.")
	return nil
}
