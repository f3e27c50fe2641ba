package static

import (
	"strings"

	"github.com/memscan/memscan/gpu"
)

// Overrides are values given on memscan static's command line that replace a config's. Only the fields whose
// flag name is in Set apply, so a flag given as 0 or false still overrides. Apply keeps what each change implies
// consistent: a new layout re-derives dp and the micro-batch count (the global batch is a training choice and
// stays), a new micro-batch size re-derives the global batch unless that was given too.
type Overrides struct {
	Set map[string]bool // flag names given, e.g. "tp", "micro-batch-size"

	Preset         string  // model
	SizeBillions   float64 // model-size
	Mode           string  // mode
	MicroBatch     int     // micro-batch-size or batch-size (the batch in inference)
	GlobalBatch    int     // global-batch-size
	SeqLength      int     // seq-length (the prompt in inference)
	GenerateTokens int     // generate-tokens

	Precision, Optimizer, Attention, Recompute, Loss, Kernels string
	GPU                                                       string // gpu: a catalogue key or name, or a CustomGPUs key
	CustomGPUs                                                []gpu.Spec

	TP, PP, DP, CP, EP, Zero, VirtualStages, NumGPUs int // tp, pp, dp, cp, ep, zero, virtual-stages, num-gpus

	SequenceParallel     bool // sp
	DistributedOptimizer bool // dist-opt
	Unroll               bool // unroll

	UsableFraction, MFU, TrainTokens, PricePerGPUHour float64 // usable-fraction, mfu, train-tokens, price-per-gpu-hour
}

// Apply lays o over c. Call Resolve afterwards.
func (c *Config) Apply(o Overrides) {
	set := func(name string) bool { return o.Set[name] }
	if o.GPU != "" {
		for i := range o.CustomGPUs {
			if strings.EqualFold(o.CustomGPUs[i].Key, o.GPU) || strings.EqualFold(o.CustomGPUs[i].Name, o.GPU) {
				c.Hardware.Custom = &o.CustomGPUs[i]
			}
		}
	}
	if set("model") {
		c.Model = ModelConfig{Preset: o.Preset}
	}
	if set("model-size") {
		c.Model = ModelConfig{SizeBillions: o.SizeBillions}
	}
	if set("mode") {
		c.Mode = o.Mode
	}
	c.applyWorkload(o, set)
	for _, s := range []struct {
		flag string
		v    string
		dst  *string
	}{{"precision", o.Precision, &c.Training.Precision}, {"optimizer", o.Optimizer, &c.Training.Optimizer},
		{"attention", o.Attention, &c.Training.Attention}, {"recompute", o.Recompute, &c.Training.Recompute},
		{"loss", o.Loss, &c.Training.Loss}, {"kernels", o.Kernels, &c.Training.Kernels}, {"gpu", o.GPU, &c.Hardware.GPU}} {
		if set(s.flag) {
			*s.dst = s.v
		}
	}
	if set("precision") {
		c.Training.GradPrecision = "" // re-derived from the new precision
	}
	if set("gpu") && c.Hardware.Custom != nil && !strings.EqualFold(c.Hardware.Custom.Key, o.GPU) {
		c.Hardware.Custom = nil
	}
	c.applyLayout(o, set)
	if set("usable-fraction") {
		c.Hardware.UsableFraction = o.UsableFraction
	}
	if set("mfu") {
		c.Hardware.MFU = o.MFU
	}
	if set("train-tokens") {
		c.Training.TrainTokens = o.TrainTokens
	}
	if set("price-per-gpu-hour") {
		c.Hardware.PricePerGPUHour = o.PricePerGPUHour
	}
	if set("unroll") {
		c.Output.Unroll = o.Unroll
	}
}

// applyWorkload sets the batch and sequence; a new micro-batch size without a global batch re-derives both
// the global batch and the micro-batch count.
func (c *Config) applyWorkload(o Overrides, set func(string) bool) {
	if set("micro-batch-size") || set("batch-size") {
		c.Training.MicroBatchSize = o.MicroBatch
		c.Inference.BatchSize = o.MicroBatch
		if !set("global-batch-size") {
			c.Training.GlobalBatchSize, c.Parallel.NumMicrobatches = 0, 0
		}
	}
	if set("global-batch-size") {
		c.Training.GlobalBatchSize, c.Parallel.NumMicrobatches = o.GlobalBatch, 0
	}
	if set("seq-length") {
		c.Training.SeqLength = o.SeqLength
		c.Inference.PromptLength = o.SeqLength
	}
	if set("generate-tokens") {
		c.Inference.GenerateTokens = o.GenerateTokens
	}
}

// applyLayout sets the parallel layout and re-derives what depended on the old one.
func (c *Config) applyLayout(o Overrides, set func(string) bool) {
	changed := false
	for _, s := range []struct {
		flag string
		v    int
		dst  *int
	}{{"tp", o.TP, &c.Parallel.TP}, {"pp", o.PP, &c.Parallel.PP}, {"dp", o.DP, &c.Parallel.DP}, {"cp", o.CP, &c.Parallel.CP},
		{"ep", o.EP, &c.Parallel.EP}, {"zero", o.Zero, &c.Parallel.ZeroStage}, {"virtual-stages", o.VirtualStages, &c.Parallel.VirtualStages},
		{"num-gpus", o.NumGPUs, &c.Hardware.NumGPUs}} {
		if set(s.flag) {
			*s.dst = s.v
			changed = true
		}
	}
	if changed {
		if !set("dp") {
			c.Parallel.DP = 0
		}
		// The global batch stays; the micro-batch count follows from it and the new data-parallel size.
		c.Parallel.NumMicrobatches = 0
		if set("tp") || set("num-gpus") {
			c.Parallel.ETP = 0
		}
	}
	if set("sp") {
		c.Parallel.SequenceParallel = o.SequenceParallel
	}
	if set("dist-opt") {
		c.Parallel.DistributedOptimizer = o.DistributedOptimizer
		c.Parallel.GradBuffer = "auto"
	}
}
