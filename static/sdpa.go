package static

import "fmt"

// attnKernel is the attention implementation that runs, with why it was chosen.
type attnKernel struct {
	name string // flash | efficient | cudnn | math | flex | standard
	why  string
	// repeatKV: K and V reach the kernel expanded to every query head (HF repeat_kv before SDPA, or the math
	// kernel's own repeat_interleave for enable_gqa), so they are saved at the query-head count.
	repeatKV bool
	// maskBytes is the attention mask the kernel receives and keeps for backward (per micro-batch and layer).
	maskBytes int64
	// fp32Math: the math kernel upcasts 16-bit q, k, v (allow_fp16_bf16_reduction_math_sdp is off by default),
	// so its scores and probabilities are fp32.
	fp32Math bool
}

// selectAttention reproduces F.scaled_dot_product_attention's choice for this config (PyTorch
// aten/src/ATen/native/transformers/cuda/sdp_utils.cpp, priority flash → memory-efficient → math, cuDNN only
// when forced):
//   - flash: compute capability ≥ 8.0, fp16/bf16, head_dim ≤ 256, no explicit mask; grouped-query heads allowed;
//   - memory-efficient: fp32/fp16/bf16, head_dim a multiple of 8 (16-bit) or 4 (fp32), masks allowed, but no
//     grouped-query heads (check_batch_size_and_num_heads_dense<false>);
//   - math: everything else; it materializes b·h·s² scores and keeps the softmax probabilities.
//
// Hugging Face passes enable_gqa=True only when there is no mask (integrations/sdpa_attention.py
// use_gqa_in_sdpa); with a mask it expands K and V with repeat_kv first. Packed sequences carry a block-causal
// mask; torchtune then uses flex attention where it exists (compute capability ≥ 8.0).
func (e *est) selectAttention() attnKernel {
	k := e.chooseAttention()
	if e.c.Framework == "torchtitan" && e.x.g < e.x.a {
		// torchtitan's Attention.forward repeats K and V to every query head (repeat_kv) before SDPA, so any
		// kernel sees, and keeps, them at the query-head count.
		k.repeatKV = true
	}
	return k
}

// chooseAttention is selectAttention before the model's own handling of grouped-query heads.
func (e *est) chooseAttention() attnKernel {
	c, x := e.c, e.x
	req := c.Training.Attention
	dtype := e.actName()
	gqa := x.g < x.a
	mask := c.Training.PackedSequences && !e.inference
	sm := e.gpu.ComputeCapability
	if sm == 0 {
		sm = 8.0 // catalogue parts without an SM version (AMD, custom) run the fused kernels
	}
	half := dtype == "bf16" || dtype == "fp16"
	maskBytes := int64(0)
	if mask {
		// SDPA turns the boolean mask into an additive float mask of the query dtype, one per call.
		maskBytes = e.b * e.sl * e.s * int64(dtypeBytes[dtype])
	}
	switch req {
	case "standard":
		return attnKernel{name: "standard", why: "unfused attention (explicit)", repeatKV: gqa}
	case "flex":
		return attnKernel{name: "flex", why: "flex attention (explicit)"}
	case "flash", "efficient", "cudnn", "math":
		k := attnKernel{name: req, why: req + " (explicit)", maskBytes: maskBytes}
		switch req {
		case "efficient":
			k.repeatKV = gqa
		case "math":
			k.repeatKV, k.fp32Math = gqa, half
		}
		if req == "flash" || req == "cudnn" || req == "efficient" {
			k.maskBytes = 0
			if req != "flash" {
				k.maskBytes = maskBytes
			}
		}
		return k
	}
	// "sdpa": PyTorch's own choice.
	if mask && sm >= 8.0 && (c.Framework == "torchtune" || c.Training.Compile) {
		return attnKernel{name: "flex", why: "packed sequences: flex attention with a block mask (compute capability ≥ 8.0)"}
	}
	hd := x.d
	if half && sm >= 8.0 && hd <= 256 && !mask {
		return attnKernel{name: "flash", why: fmt.Sprintf("SDPA picks flash: %s, head_dim %d ≤ 256, no mask, sm %.1f", dtype, hd, sm)}
	}
	align := int64(8)
	if !half {
		align = 4
	}
	if hd%align == 0 && (!gqa || mask) {
		// With a mask HF repeats K and V itself, so the memory-efficient kernel sees plain multi-head attention.
		why := "SDPA picks memory-efficient attention: "
		switch {
		case !half:
			why += "flash needs fp16/bf16, " + dtype + " given"
		case mask:
			why += "flash takes no explicit mask"
		case hd > 256:
			why += fmt.Sprintf("head_dim %d > 256 for flash", hd)
		default:
			why += fmt.Sprintf("flash needs compute capability ≥ 8.0 (sm %.1f)", sm)
		}
		return attnKernel{name: "efficient", why: why, repeatKV: gqa && mask, maskBytes: maskBytes}
	}
	why := "SDPA falls back to the math kernel: "
	switch {
	case gqa && !half:
		why += fmt.Sprintf("flash needs fp16/bf16 and memory-efficient attention has no grouped-query heads (%d query, %d KV heads)", x.a, x.g)
	case gqa:
		why += "memory-efficient attention has no grouped-query heads and flash is unavailable"
	default:
		why += fmt.Sprintf("head_dim %d is not a multiple of %d", hd, align)
	}
	return attnKernel{name: "math", why: why, repeatKV: gqa, maskBytes: maskBytes, fp32Math: half}
}

// checkpointBytes is what one recomputed layer keeps per micro-batch. Full recomputation keeps the layer
// input. torchtitan's op-level selective policy (torchtitan/distributed/activation_checkpoint.py
// _get_custom_policy) saves the outputs of SDPA and of every other aten.mm of the layer (the 1st, 3rd, … in
// execution order: wq, wv, w1, w2 for Llama), besides the checkpoint input; everything else is recomputed.
func (e *est) checkpointBytes() float64 {
	x := e.x
	n := float64(e.n)
	in := n * float64(x.h) * dtypeBytes[e.residualName()] / float64(e.spDiv)
	if e.c.Training.Recompute != "op_selective" {
		return in
	}
	var mm []int64 // output widths of the layer's matmuls in execution order
	if x.llama {
		mm = []int64{e.aL * x.d, e.gL * x.d, e.gL * x.d, x.h}
	} else {
		mm = []int64{(e.aL + 2*e.gL) * x.d, x.h}
	}
	f := e.fL
	if x.E > 0 {
		f = e.feL * x.k
	}
	if x.gated {
		mm = append(mm, f, f, x.h)
	} else {
		mm = append(mm, f, x.h)
	}
	saved := in
	for i, w := range mm {
		if i%2 == 0 {
			saved += n * float64(w) * e.ab
		}
	}
	saved += n*float64(e.aL*x.d)*e.ab + 4*float64(e.b*e.aL*e.sl) // SDPA output + log-sum-exp
	return saved
}

// AttentionKernel is the attention kernel that runs for a config (resolved on a copy): what "sdpa" dispatches
// to, or the explicit choice. Empty when the config does not resolve.
func (c Config) AttentionKernel() string {
	if err := c.Resolve(); err != nil {
		return ""
	}
	return newEst(&c).kernel.name
}
