package static

import "testing"

// The tiny model's units (knobs_test.go): a decoder layer holds 2·64 + 64·64 + 2·32·64 + 64·64 + 3·128·64 =
// 36,992 parameters, the embedding 256·64 = 16,384, the final norm and output layer 64 + 256·64 = 16,448.
const (
	tinyLayerParams = 36_992
	tinyEmbedding   = 16_384
)

// tinyTitan is the tiny model under torchtitan's defaults (FSDP2 with fp32 shards and bf16 compute).
func tinyTitan(t *testing.T, mod func(*Config)) *Report {
	t.Helper()
	return tiny(t, func(c *Config) {
		if err := c.ApplyFramework("torchtitan"); err != nil {
			t.Fatal(err)
		}
		c.Hardware.NumGPUs = 2
		mod(c)
	})
}

// TestPipelineFSDP: inside a pipeline stage torchtitan keeps FSDP units gathered (reshard_after_forward=False
// with PP) and PipelineStage.backward_maybe_with_nosync turns gradient sync off until the last micro-batch, so
// FSDPParam.to_accumulated_grad_if_needed upcasts the first micro-batch's unsharded gradients to reduce_dtype.
// Rank 0 of pp 2 over 4 GPUs (FSDP 2) holds one layer and the embedding: its accumulated fp32 gradients are
// 4 · (36,992 + 16,384) = 213,504 B, allocated once per step (the first micro-batch), and each unit is
// reduce-scattered once per step, in the last micro-batch.
func TestPipelineFSDP(t *testing.T) {
	r := tinyTitan(t, func(c *Config) {
		c.Hardware.NumGPUs, c.Parallel.PP, c.Parallel.NumMicrobatches, c.Training.GlobalBatchSize = 4, 2, 2, 0
	})
	if got, want := r.Stages[0].AtPeak.Grads, int64(4*(tinyLayerParams+tinyEmbedding)); got != want {
		t.Errorf("rank 0 accumulated gradients at its peak %d B, want %d", got, want)
	}
	c := r.Config
	e := newEst(&c)
	e.setRank(0)
	seq := e.trainingSequenceOf(0, layerParams(e.x), embeddingParams(e.x), nil, e.stepsFor(e.layerOps(), e.embeddingOps(), e.headOps()), r.Stages[0].Other)
	fp32 := map[int64]bool{}
	for _, p := range append(layerParams(e.x), embeddingParams(e.x)...) {
		fp32[4*p.numel()] = true
	}
	acc := map[int]int64{}
	rs := map[int]int{}
	for _, ev := range seq.ev {
		site := seq.sites[ev.site]
		switch {
		case ev.size > 0 && site.op == "fsdp.accumulate_grad" && fp32[ev.size]:
			acc[site.step] += ev.size
		case ev.size == 4*tinyLayerParams && site.op == "fsdp.reduce_scatter":
			rs[site.step]++
		}
	}
	for step := 1; step <= 2; step++ {
		if acc[step] != 4*(tinyLayerParams+tinyEmbedding) || rs[step] != 1 {
			t.Errorf("step %d: %d B accumulated, %d layer reduce-scatters; want %d B and 1", step, acc[step], rs[step], 4*(tinyLayerParams+tinyEmbedding))
		}
	}
	if r.Summary.ReservedSource != ReservedByReplay {
		t.Errorf("pipeline reserved from %s, want the allocator replay", r.Summary.ReservedSource)
	}
}

// TestTensorParallelDTensor: torchtitan's plans (ColwiseParallel with PrepareModuleInput gathering the
// sequence-parallel shard, RowwiseParallel with Shard(1) outputs) hand wq/wk/wv the all-gathered input, which
// they keep: b·s·h·2 = 64·64·2 = 8,192 B, where Megatron's sequence parallelism keeps the tp-th share (4,096 B)
// and gathers again in backward. The row-parallel o_proj writes its full partial output (8,192 B) before the
// reduce-scatter — into the symmetric-memory workspace instead with async TP, which nvidia-smi counts. The loss
// runs in loss_parallel on E = 64 · 256/2 local logits: 4·E kept, 12·E in its backward.
func TestTensorParallelDTensor(t *testing.T) {
	// FSDP 2 × TP 2: with an FSDP group torchtitan computes in bf16 (on TP alone it would run autocast).
	tp := func(c *Config) { c.Hardware.NumGPUs, c.Parallel.TP, c.Parallel.SequenceParallel = 4, 2, true }
	r := tinyTitan(t, tp)
	if got := op(t, r, "qkv_proj").MemoryBytes; got != 2*tn*th {
		t.Errorf("DTensor qkv_proj keeps %d B, want the gathered input %d", got, 2*tn*th)
	}
	if got := op(t, r, "o_proj").TempBytes; got != 2*tn*th {
		t.Errorf("o_proj partial output %d B, want %d", got, 2*tn*th)
	}
	const E = tn * tv / 2
	l := op(t, r, "cross_entropy")
	if l.MemoryBytes != 4*E || l.Extra["backward_temp_bytes"] != int64(12*E) {
		t.Errorf("loss parallel keeps %d B, backward %v; want %d and %d", l.MemoryBytes, l.Extra["backward_temp_bytes"], 4*E, 12*E)
	}
	mega := tiny(t, func(c *Config) {
		c.Framework = ""
		tp(c)
	})
	if got := op(t, mega, "qkv_proj").MemoryBytes; got != tn*th {
		t.Errorf("sequence-parallel qkv_proj keeps %d B, want the local share %d", got, tn*th)
	}
	async := tinyTitan(t, func(c *Config) { tp(c); c.Parallel.AsyncTP = true })
	if got := op(t, async, "o_proj").TempBytes; got != 0 {
		t.Errorf("async TP o_proj partial output %d B in the caching allocator, want 0", got)
	}
	if d := async.Summary.DeviceTotalBytes - async.Summary.PeakReservedBytes - (r.Summary.DeviceTotalBytes - r.Summary.PeakReservedBytes); d != 2*tn*th {
		t.Errorf("async TP adds %d B outside the caching allocator, want the symmetric workspace %d", d, 2*tn*th)
	}
	if r.Summary.ReservedSource != ReservedByReplay {
		t.Errorf("tensor-parallel reserved from %s, want the allocator replay", r.Summary.ReservedSource)
	}
}

// TestRingAttention: with cp 2 each rank holds s/cp = 16 of the 32 tokens. torchtitan repeats K and V to the 4
// query heads before SDPA, so the local K and V are 2·b·16·4·16·2 = 8,192 B, and the ring's all-gather rotater
// gathers every rank's: 16,384 B; the merger accumulates the output in fp32 (b·16·4·16·4 = 8,192 B). Backward
// gathers again and keeps fp32 dq (8,192 B) and fp32 dK, dV (4·8,192 B) beside them.
func TestRingAttention(t *testing.T) {
	r := tinyTitan(t, func(c *Config) { c.Parallel.CP = 2 })
	a := op(t, r, "attention")
	if a.TempBytes != 16384+8192 {
		t.Errorf("ring attention forward buffers %d B, want %d", a.TempBytes, 16384+8192)
	}
	if got := a.Extra["ring_backward_temp_bytes"]; got != int64(16384+8192+4*8192) {
		t.Errorf("ring attention backward buffers %v B, want %d", got, 16384+8192+4*8192)
	}
	if r.Summary.ReservedSource != ReservedByReplay {
		t.Errorf("context-parallel reserved from %s, want the allocator replay", r.Summary.ReservedSource)
	}
}

// TestFloat8AllGather: torchao's tensorwise float8 casts Float8Linear weights before FSDP's all-gather, so a
// gathered layer is 1 B per matmul weight and 2 B per norm weight: 36,992 − 128 + 2·128 = 37,120 B, against
// 2 · 36,992 = 73,984 B for bf16 or the rowwise recipe (bf16 all-gather). Under op-selective recomputation the
// saved activations do not change: the policy saves the matmul outputs, which float8 linears return in bf16.
func TestFloat8AllGather(t *testing.T) {
	for _, tc := range []struct {
		recipe string
		want   int64
	}{{"tensorwise", tinyLayerParams - 2*th + 2*2*th}, {"rowwise", 2 * tinyLayerParams}} {
		r := tinyTitan(t, func(c *Config) {
			c.Training.Float8, c.Training.Float8Recipe, c.Training.Recompute = true, tc.recipe, "op_selective"
		})
		c := r.Config
		e := newEst(&c)
		var got int64
		for _, p := range layerParams(e.x) {
			got += e.gatherBytes(p, true)
		}
		if got != tc.want {
			t.Errorf("%s: gathered layer %d B, want %d", tc.recipe, got, tc.want)
		}
	}
	bf16 := tinyTitan(t, func(c *Config) { c.Training.Recompute = "op_selective" })
	fp8 := tinyTitan(t, func(c *Config) { c.Training.Float8, c.Training.Recompute = true, "op_selective" })
	if a, b := op(t, bf16, "recompute_checkpoint").MemoryBytes, op(t, fp8, "recompute_checkpoint").MemoryBytes; a != b {
		t.Errorf("op-selective checkpoint %d B with float8, %d B without; want the same", b, a)
	}
}

// TestExpertParallelReplay: with expert parallelism the token dispatcher permutes the routed copies into a send
// buffer (k·b·s·h·2 = 2·64·64·2 = 16,384 B for top-2 of the tiny MoE) before the all-to-all, and the layout is
// replayed through the allocator model.
func TestExpertParallelReplay(t *testing.T) {
	r := tiny(t, func(c *Config) {
		c.Model.NumExperts, c.Model.MoETopK = 4, 2
		c.Hardware.NumGPUs, c.Parallel.EP = 2, 2
	})
	if got := op(t, r, "moe.dispatch").TempBytes; got != 2*2*tn*th {
		t.Errorf("dispatch send buffer %d B, want %d", got, 2*2*tn*th)
	}
	if r.Summary.ReservedSource != ReservedByReplay {
		t.Errorf("expert-parallel reserved from %s, want the allocator replay", r.Summary.ReservedSource)
	}
}
