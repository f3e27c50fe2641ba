package main

import (
	"context"
	"io"

	"github.com/spf13/pflag"

	"github.com/memscan/memscan/gpu"
	"github.com/memscan/memscan/results"
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
		return results.WritePresetList(stdout)
	}
	list := gpu.List()
	if *file != "" {
		custom, err := gpu.LoadFile(*file)
		if err != nil {
			return usageErrorf("gpus: %v", err)
		}
		list = append(list, custom...)
	}
	if *format == "json" {
		return units.WriteJSON(stdout, list)
	}
	return results.WriteGPUTable(stdout, list)
}
