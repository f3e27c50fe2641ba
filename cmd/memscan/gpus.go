package main

import (
	"context"
	"io"

	"github.com/memscan/memscan/gpu"
	"github.com/memscan/memscan/internal/results"
	"github.com/memscan/memscan/internal/units"
)

var gpusHelp = helpDoc{
	usage: []string{"memscan gpus [--format text|json] [--gpus-file FILE] [--presets]"},
	description: `
List the GPU catalogue used by memscan static: CUDA-visible memory, memory bandwidth, dense peak throughput per
dtype (no 2:4 sparsity), the ridge point (BF16 FLOPs per byte, where memory- and compute-bound meet) and the
GPU-to-GPU interconnect. Use a key with memscan static --gpu KEY.

Custom GPUs: put a JSON or YAML list of objects with the keys key, name, memory_gb or memory_gib, bandwidth_tbs,
bf16_tflops (and optionally fp16_tflops, fp8_tflops, tf32_tflops, fp32_tflops, interconnect_gbps, interconnect)
in a file and pass it with --gpus-file here and to memscan static (then --gpu KEY selects it), or define one
inline in a config under hardware.custom.`,
	examples: []string{
		"memscan gpus",
		"memscan gpus --format json > gpus.json",
		"memscan gpus --gpus-file my_gpus.yaml          # the catalogue and your own cards",
		"memscan gpus --presets                         # the model presets of memscan static --model",
	},
	exits: []exitDoc{
		{exitOK, "the list was printed"},
		{exitUsage, "usage error (bad flag, unreadable or invalid --gpus-file)"},
		{exitFailed, "the list could not be written"},
	},
}

// runGPUs implements `memscan gpus`.
func runGPUs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("gpus", gpusHelp, stderr)
	var format, file string
	c.formatFlag(&format, "text", "text", "json")
	c.StringVar(&file, "gpus-file", "", "also list custom GPUs from this JSON/YAML file")
	presets := c.Bool("presets", false, "list the model presets of memscan static instead")
	if helped, err := c.parse(args, stdout); helped || err != nil {
		return err
	}
	if c.NArg() > 0 {
		return usageErrorf("gpus: unexpected argument %q", c.Arg(0))
	}
	if !c.formatOK(format) {
		return usageErrorf("gpus: --format %q (must be text or json)", format)
	}
	if *presets {
		return results.WritePresetList(stdout)
	}
	list := gpu.List()
	if file != "" {
		custom, err := gpu.LoadFile(file)
		if err != nil {
			return usageErrorf("gpus: %v", err)
		}
		list = append(list, custom...)
	}
	if format == "json" {
		return units.WriteJSON(stdout, list)
	}
	return results.WriteGPUTable(stdout, list)
}
