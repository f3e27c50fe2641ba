package static

import "testing"

// TestFSDPSequence checks the FSDP2 allocations of the sequence against fully_shard's code on the tiny model
// (2 layers, h 64, q 4 × 16, kv 2 × 16, ffn 128, vocab 256, untied) sharded over 2 GPUs with
// MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32):
//   - a layer unit holds 2·64 (norms) + 64·64 (q) + 2·32·64 (k, v) + 64·64 (o) + 3·128·64 (gate, up, down)
//     = 36,992 parameters: its all-gather buffer (foreach_all_gather's all_gather_output, on the copy-in stream)
//     is 36,992 · 2 B = 73,984 B, its reduce-scatter input (reduce_dtype fp32, on the compute stream since
//     pytorch #129721) 36,992 · 4 B = 147,968 B and the sharded gradient it leaves half of that, 73,984 B;
//   - the root unit (embedding 256·64, final norm 64, output layer 256·64 = 32,832 parameters) is gathered
//     first: 65,664 B;
//   - the sharded fp32 parameters the model is built with are 4 B · numel / 2.
func TestFSDPSequence(t *testing.T) {
	r := tiny(t, func(c *Config) {
		c.Hardware.NumGPUs, c.Parallel.ZeroStage, c.Training.Precision, c.Training.GradPrecision = 2, 3, "bf16-mixed", "fp32"
	})
	c := r.Config
	e := newEst(&c)
	seq := e.trainingSequence(layerParams(e.x), embeddingParams(e.x), headParams(e.x, 1), e.stepsFor(e.layerOps(), e.embeddingOps(), e.headOps()), r.Stages[0].Other)
	const layer, root = 36_992, 32_832
	var gathers, rsInputs, rsOutputs []int64
	var built int64
	for _, ev := range seq.ev {
		site := seq.sites[ev.site]
		switch {
		case ev.size <= 0:
		case site.phase == "build":
			built += ev.size
		case ev.stream == streamAllGather:
			gathers = append(gathers, ev.size)
		case ev.size == 4*layer:
			rsInputs = append(rsInputs, ev.size)
		}
		if ev.size == 2*layer && site.op == "fsdp.reduce_scatter" {
			rsOutputs = append(rsOutputs, ev.size)
		}
	}
	params := r.Params.Total
	if want := 4*params/2 + r.Stages[0].Other; built != want {
		t.Errorf("built %d B, want the fp32 shards 4·%d/2 plus %d B of buffers = %d", built, params, r.Stages[0].Other, want)
	}
	if len(gathers) < 3 || gathers[0] != 2*root || gathers[1] != 2*layer {
		t.Errorf("all-gather buffers %v, want the root's %d B first, then a layer's %d B", gathers[:min(3, len(gathers))], 2*root, 2*layer)
	}
	// Two steps, each reduce-scattering both layers once.
	if len(rsInputs) != 4 {
		t.Errorf("%d layer reduce-scatter inputs of %d B, want 4 (2 layers × 2 steps)", len(rsInputs), 4*layer)
	}
	if len(rsOutputs) != 4 {
		t.Errorf("%d sharded layer gradients of %d B, want 4 (one per reduce-scatter)", len(rsOutputs), 2*layer)
	}
	if r.Summary.ReservedSource != ReservedByReplay {
		t.Errorf("reserved from %s, want the allocator replay", r.Summary.ReservedSource)
	}
}
