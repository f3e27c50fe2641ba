package static

import (
	"fmt"
	"math"

	"github.com/memscan/memscan/internal/units"
)

// inferenceStage fills a stage for inference: weights + KV cache + the larger of the prefill working set and
// the last decode step.
//
// The cache follows inference.kv_cache.implementation: static preallocates prompt + generated tokens for every
// layer before the prefill (HF StaticCache, max_cache_len); paged preallocates whole blocks; dynamic (HF
// DynamicCache) holds only the prompt during the prefill and grows by torch.cat in every decode step, so one
// layer's old and new K and V coexist while it concatenates.
func (e *est) inferenceStage(st Stage, i int, layerOps, embOps, headOps []Operator) (Stage, []Operator) {
	c, x := e.c, e.x
	in := c.Inference
	ctx := int64(in.PromptLength + in.GenerateTokens)
	if bt := int64(in.KVCache.BlockTokens); bt > 0 {
		ctx = roundUp(ctx, bt)
	}
	perTok := e.kvBytesPerToken()
	corrA := c.Corrections.Activations
	st.KVCache = int64(float64(perTok*e.b*ctx) * corrA)
	kvPrefill := st.KVCache
	if in.KVCache.Implementation == "dynamic" {
		kvPrefill = int64(float64(perTok*e.b*int64(in.PromptLength)) * corrA)
	}
	var work float64
	for _, op := range layerOps {
		v := float64(sumBytes(op.Inputs...) + sumBytes(op.Outputs...) + op.TempBytes)
		work = math.Max(work, v)
	}
	// Residual-stream tensors alive beside the largest op: one in fused engines; HF's eager modules also keep
	// the embeddings (the model's inputs_embeds), the layer input (the caller's loop variable) and the
	// post-attention residual while the MLP runs.
	residuals := int64(1)
	if e.eager() {
		residuals = 4
	}
	work += float64(residuals * e.n * x.h * int64(e.ab))
	if e.eager() && in.KVCache.Implementation != "dynamic" {
		// HF with a preallocated cache: keys span the whole cache, longer than the prompt, so the model builds a
		// b × 1 × prompt × cache boolean mask for the forward; SDPA then takes the masked path (memory-efficient
		// attention with K and V repeated to every query head, the mask turned into an additive 16-bit one).
		mask := float64(e.b * e.sl * ctx)
		kvRep := float64(2*e.b*e.aL*ctx*x.d) * e.ab
		qo := float64(2*e.b*e.sl*e.aL*x.d) * e.ab
		work = math.Max(work, qo+kvRep+mask*e.ab+float64(residuals*e.n*x.h)*e.ab) + mask
	}
	var head float64
	if i == c.Parallel.PP-1 {
		for _, op := range headOps {
			head = math.Max(head, float64(op.TempBytes+sumBytes(op.Outputs...)))
		}
	}
	// Last decode step: the cache at full length, the dynamic cache's concatenation copy of one layer, and
	// generate's per-step logits (16-bit, their fp32 copy and the processed scores).
	decode := float64(st.KVCache)
	if in.GenerateTokens > 0 {
		if in.KVCache.Implementation == "dynamic" {
			decode += float64(st.KVCache) / float64(e.layersPerStage)
		}
		if i == c.Parallel.PP-1 {
			decode += float64(e.b*x.V/e.t) * (e.ab + 4 + 4)
		}
	}
	st.Activations = int64(work * corrA)
	st.Temporaries = int64(head * c.Corrections.Temporaries)
	st.ForwardPeak = st.Weights + kvPrefill + st.Other + max(st.Activations, st.Temporaries)
	st.PeakAllocated, st.PeakStage = st.ForwardPeak, "prefill"
	// Nothing is kept for a backward: the prefill's working set and generate's buffers are temporaries.
	st.AtPeak = PeakBreakdown{KVCache: kvPrefill, Temporaries: max(st.Activations, st.Temporaries)}
	if d := st.Weights + st.Other + int64(decode); d > st.PeakAllocated {
		st.PeakAllocated, st.PeakStage = d, "decode"
		st.AtPeak = PeakBreakdown{KVCache: st.KVCache, Temporaries: int64(decode) - st.KVCache}
	}
	st.EndOfStepAllocated = st.Weights + st.KVCache + st.Other
	e.reserved(&st, modelStates{}, modelStates{}, nil, 0)
	if e.replayable(len(layerOps)) {
		seq := e.inferenceSequence(layerOps, embOps, headOps, residuals, st.Other, i == c.Parallel.PP-1)
		e.replayReserved(&st, seq)
		e.seqs[i] = seq
	}

	var ops []Operator
	ops = append(ops, Operator{Name: "weights", Category: "weights", Phase: "persistent", Persistent: true, Layer: -1, Multiplier: 1,
		MemoryBytes: st.Weights, Formula: fmt.Sprintf("params/GPU × %g B (%s)", e.pb, c.Inference.WeightDtype),
		Notes: units.Plural(st.Params, "parameter", "parameters") + " on this GPU", Extra: map[string]any{}})
	ops = append(ops, Operator{Name: "kv_cache", Category: "kv_cache", Phase: "persistent", Persistent: true, Layer: -1, Multiplier: e.layersPerStage,
		Outputs:     []Tensor{tensor("k_cache", c.Inference.KVCache.Dtype, e.b, ctx, e.gL, x.d), tensor("v_cache", c.Inference.KVCache.Dtype, e.b, ctx, e.gL, x.d)},
		MemoryBytes: st.KVCache, Formula: "2 · L · g/t · d · (prompt+generated) · b · bytes (" + in.KVCache.Implementation + " cache)",
		Notes: fmt.Sprintf("%d B per token per GPU; %d context tokens × batch %d", perTok, ctx, e.b), Extra: map[string]any{"bytes_per_token": perTok}})
	for _, op := range layerOps {
		op.Phase, op.Layer, op.Multiplier = "prefill", st.FirstLayer, e.layersPerStage
		ops = append(ops, op)
	}
	if i == 0 {
		for _, op := range embOps {
			op.Phase, op.Multiplier = "prefill", 1
			ops = append(ops, op)
		}
	}
	if i == c.Parallel.PP-1 {
		for _, op := range headOps {
			op.Phase, op.Multiplier = "prefill", 1
			ops = append(ops, op)
		}
	}
	return st, normalizeOps(ops)
}

// kvBytesPerToken is the K and V cache of one token on one GPU: 2 · layers of the stage · g/t · d · bytes.
func (e *est) kvBytesPerToken() int64 {
	return int64(float64(2*e.layersPerStage*e.gL*e.x.d) * dtypeBytes[e.c.Inference.KVCache.Dtype])
}

// transients are the non-forward temporary sizes of a stage.
type transients struct {
	layerBwd, headBwd, gather, reduce, opt float64
	ckpt                                   float64 // bytes a recomputed layer keeps per micro-batch
	offloaded                              float64 // saved activations moved to host memory
	unsharded                              float64 // gathered parameters kept from forward to backward (FSDP without resharding)
	rootUnit                               float64 // FSDP's root unit (final norm, output layer), gathered from its forward to its backward
}

// operatorList assembles the worst-stage record list in MemScope's shape.
func (e *est) operatorList(i int, st Stage, head, layers modelStates, layerOps, embOps, headOps []Operator,
	layerMBs int64, embMBs float64, recomputed int64, tr transients) []Operator {
	c := e.c
	pp := c.Parallel.PP
	first, last := i == 0, i == pp-1
	corr := c.Corrections
	var ops []Operator
	gradNotes := "gradients (" + c.Parallel.GradBuffer + ")"
	if e.accumulates() {
		gradNotes += fmt.Sprintf(", accumulated over %d micro-batches: live through the later ones' forward and backward", c.Parallel.NumMicrobatches)
	}
	persistent := func(group string, ms modelStates, mult int64) {
		if ms.params == 0 {
			return
		}
		ops = append(ops,
			Operator{Name: group + ".weights", Category: "weights", Phase: "persistent", Persistent: true, Layer: -1, Multiplier: mult,
				MemoryBytes: int64(ms.weights * corr.Weights), Formula: "params/GPU × weight bytes (÷ shard group with ZeRO-3)",
				Notes: fmt.Sprintf("%.0f parameters on this GPU", ms.params), Extra: map[string]any{"params": int64(ms.params)}},
			Operator{Name: group + ".grads", Category: "grads", Phase: "persistent", Persistent: c.Parallel.GradBuffer == "persistent", Layer: -1, Multiplier: mult,
				MemoryBytes: int64(ms.grads * corr.Grads), Formula: fmt.Sprintf("params/GPU × %g B (÷ shard group with ZeRO ≥ 2)", e.gb),
				Notes: gradNotes, Extra: map[string]any{}},
			Operator{Name: group + ".optimizer_states", Category: "optimizer", Phase: "persistent", Persistent: true, Layer: -1, Multiplier: mult,
				MemoryBytes: int64(ms.opt * corr.Optimizer), Formula: "params/GPU × (state bytes + 4 B fp32 master if mixed) (÷ shard group with ZeRO ≥ 1)",
				Notes: c.Training.Optimizer + " states", Extra: map[string]any{}})
	}
	hn := "head"
	if first && last {
		hn = "embedding+head"
	} else if first {
		hn = "embedding"
	}
	persistent(hn, head, 1)
	persistent("layers", layers, e.layersPerStage)
	if st.Other > 0 {
		ops = append(ops, Operator{Name: "workspaces_and_buffers", Category: "other", Phase: "persistent", Persistent: true, Layer: -1, Multiplier: 1,
			MemoryBytes: st.Other, Formula: "cuBLAS + cuBLASLt workspaces (+ TE workspace, unfused-attention score buffer, DDP gradient buckets)", Notes: "allocator-visible buffers", Extra: map[string]any{}})
	}

	if first {
		for _, op := range embOps {
			op.Multiplier = int64(math.Round(embMBs))
			op.MemoryBytes = int64(float64(op.MemoryBytes) * embMBs)
			ops = append(ops, op)
		}
	}
	l := e.layersPerStage
	kept := l - recomputed
	keptMBs := layerMBs * kept / l
	emit := func(layer int, mult int64) {
		for _, op := range layerOps {
			op.Layer = layer
			op.Multiplier = mult
			op.MemoryBytes *= mult
			if op.Extra == nil {
				op.Extra = map[string]any{}
			}
			ops = append(ops, op)
		}
	}
	hr := int64(tr.ckpt)
	layersHere := e.stageLayers(i)
	if c.Output.Unroll && kept > 0 {
		// Spread the in-flight layer-microbatches over the kept layers so the records add up exactly.
		base, rem := keptMBs/kept, keptMBs%kept
		for j := int64(0); j < kept; j++ {
			m := base
			if j < rem {
				m++
			}
			emit(layersHere[j], m)
		}
	} else if kept > 0 {
		emit(layersHere[0], keptMBs)
	}
	if recomputed > 0 {
		mult := layerMBs - keptMBs
		ops = append(ops, Operator{Name: "recompute_checkpoint", Category: "recompute", Phase: "forward", Layer: layersHere[int(kept)%len(layersHere)],
			Multiplier: mult, MemoryBytes: hr * mult,
			Formula: "2·b·s·h/sp per recomputed layer (layer input only)", Notes: c.Training.Recompute + " recomputation of " + units.Plural(recomputed, "layer", "layers") + " per stage", Extra: map[string]any{}})
		if c.Training.Recompute == "op_selective" {
			ops[len(ops)-1].Formula = "layer input + outputs of every other matmul and of SDPA (torchtitan op policy)"
		}
	}
	if tr.offloaded > 0 {
		ops = append(ops, Operator{Name: "activation_offload", Category: "offload", Phase: "forward", Layer: -1, Multiplier: 1,
			MemoryBytes: -int64(tr.offloaded), Formula: "saved activations of all but two layer-micro-batches",
			Notes: "moved to pinned host memory during forward, brought back one layer ahead in backward", Extra: map[string]any{}})
	}
	if tr.rootUnit > 0 {
		ops = append(ops, Operator{Name: "fsdp_root_unit", Category: "communication", Phase: "forward", Layer: -1, Multiplier: 1,
			TempBytes: int64(tr.rootUnit), Formula: "(final norm + output layer) params/GPU × gather bytes",
			Notes: "the root FSDP unit is not resharded after forward", Extra: map[string]any{}})
	}
	if tr.unsharded > 0 {
		ops = append(ops, Operator{Name: "fsdp_unsharded_params", Category: "communication", Phase: "forward", Layer: -1, Multiplier: 1,
			TempBytes: int64(tr.unsharded), Formula: "(layers − 1) × layer params/GPU × gather bytes",
			Notes: "fsdp_reshard_after_forward=false keeps every layer's gathered parameters until its backward", Extra: map[string]any{}})
	}
	if last {
		for _, op := range headOps {
			op.Multiplier = 1
			ops = append(ops, op)
		}
	}
	if last && tr.headBwd > 0 {
		ops = append(ops, Operator{Name: "loss_backward", Category: "loss", Phase: "backward", Layer: -1, Multiplier: 1,
			TempBytes: int64(tr.headBwd), Formula: "gradient of the logits (see cross_entropy)", Notes: "first op of the backward pass on the last stage"})
	}
	if tr.gather > 0 {
		ops = append(ops, Operator{Name: "fsdp_all_gather", Category: "communication", Phase: "forward", Layer: -1, Multiplier: 1,
			TempBytes: int64(tr.gather), Formula: "(prefetch + 1) × layer params/GPU × param bytes",
			Notes: fmt.Sprintf("unsharded parameters of %s in flight (also in backward)", units.Plural(c.Parallel.FSDPPrefetchLayers+1, "layer", "layers"))})
	}
	if tr.reduce > 0 {
		ops = append(ops, Operator{Name: "grad_reduce_scatter", Category: "communication", Phase: "backward", Layer: -1, Multiplier: 1,
			TempBytes: int64(tr.reduce), Formula: "unsharded gradients of one layer (FSDP) or one reduce bucket (ZeRO-1/2)",
			Notes: "gradients waiting for reduce-scatter"})
	}
	ops = append(ops, Operator{Name: "layer_backward", Category: "backward", Phase: "backward", Layer: -1, Multiplier: 1,
		TempBytes: int64(tr.layerBwd), Formula: "2·b·s·h + 2·largest layer output (+ recomputed layer, + low-precision weight gradient)",
		Notes: "transient activation gradients of the layer being back-propagated", Extra: map[string]any{}})
	stepped, bytes := e.optimizerTraffic(head, layers)
	ops = append(ops, Operator{Name: "optimizer_step", Category: "optimizer", Phase: "optimizer_step", Layer: -1, Multiplier: 1,
		TempBytes: int64(tr.opt), Formula: "foreach: one fp32 intermediate per local parameter; fused: none",
		Notes: c.Training.Optimizer + " " + c.Training.OptimizerImpl, Extra: map[string]any{"stepped_params": int64(stepped)},
		FLOPs: 12 * stepped, BytesMoved: bytes})
	return normalizeOps(ops)
}

// optimizerTraffic is what one GPU's optimizer step touches: the parameters it steps (the trainable ones only,
// the adapters under LoRA; its ZeRO shard where ZeRO ≥ 1 shards the states, all of them under plain data
// parallelism) and the bytes it moves for them.
func (e *est) optimizerTraffic(head, layers modelStates) (stepped, bytes float64) {
	shard := 1.0
	if e.c.Parallel.ZeroStage >= 1 {
		shard = float64(max(1, e.nDense))
	}
	if e.lora != nil {
		// Adapters train in their own dtype: read the gradient, read and write the parameter, read and write
		// every state (layers.opt is already this GPU's share of them).
		ad := dtypeBytes[e.lora.AdapterDtype]
		stepped = layers.adapterParams / shard
		return stepped, stepped*3*ad + 2*layers.opt
	}
	stepped = (head.params + layers.params) / shard
	return stepped, stepped * (e.gb + 2*4 + 2*8 + 2*e.pb)
}

// normalizeOps gives every record non-nil lists and maps so the JSON has [] and {} rather than null.
func normalizeOps(ops []Operator) []Operator {
	for k := range ops {
		if ops[k].Extra == nil {
			ops[k].Extra = map[string]any{}
		}
		if ops[k].Inputs == nil {
			ops[k].Inputs = []Tensor{}
		}
		if ops[k].Outputs == nil {
			ops[k].Outputs = []Tensor{}
		}
	}
	return ops
}
