package static

import (
	"fmt"
	"math"

	"github.com/memscan/memscan/units"
)

func tensor(name, dtype string, shape ...int64) Tensor {
	n := int64(1)
	for _, d := range shape {
		n *= d
	}
	return Tensor{Name: name, Shape: shape, Dtype: dtype, Bytes: int64(math.Ceil(float64(n) * dtypeBytes[dtype]))}
}

func sumBytes(ts ...Tensor) int64 {
	var s int64
	for _, t := range ts {
		s += t.Bytes
	}
	return s
}

func (e *est) actName() string {
	if e.inference {
		if e.ab == 4 {
			return "fp32"
		}
		return "bf16"
	}
	return e.c.actDtype()
}

func (e *est) weightName() string {
	if e.inference {
		return e.c.Inference.WeightDtype
	}
	return e.c.paramDtype()
}

// linear builds a matmul record: FLOPs 2·tokens·in·out, bytes = weight + input + output.
func (e *est) linear(name, cat string, in Tensor, outCols, inCols int64, rows int64, saved int64, formula, notes string) Operator {
	out := tensor(name+".out", e.actName(), append(tokenDims(in, rows), outCols)...)
	inBytes := int64(float64(rows*inCols) * dtypeBytes[in.Dtype]) // rows actually read (e.g. last position only)
	w := float64(inCols*outCols) * dtypeBytes[e.weightName()]
	return Operator{
		Name: name, Category: cat, Phase: "forward", Inputs: []Tensor{in}, Outputs: []Tensor{out},
		MemoryBytes: saved, Formula: formula, Notes: notes,
		FLOPs: 2 * float64(rows) * float64(inCols) * float64(outCols), BytesMoved: w + float64(inBytes+out.Bytes),
		Extra: map[string]any{"weight_bytes": int64(w)},
	}
}

// tokenDims keeps the input's token dimensions ([b, s]) when all its rows are used, else [rows].
func tokenDims(in Tensor, rows int64) []int64 {
	if len(in.Shape) >= 3 && in.Shape[0]*in.Shape[1] == rows {
		return []int64{in.Shape[0], in.Shape[1]}
	}
	return []int64{rows}
}

func (e *est) dropoutMask(name string) Operator {
	x, sp := e.x, e.spDiv
	mask := tensor(name+".mask", "bool", e.b, e.sl/sp, x.h)
	op := Operator{Name: name, Category: "dropout", Phase: "forward", Outputs: []Tensor{mask},
		Formula: "b·s·h/sp (1-byte mask)", Notes: fmt.Sprintf("hidden dropout p=%g: the mask is kept for backward", e.c.Training.HiddenDropout)}
	if e.c.Training.HiddenDropout > 0 && !e.inference {
		op.MemoryBytes = mask.Bytes
	}
	op.BytesMoved = float64(3 * mask.Bytes * int64(e.ab))
	op.FLOPs = float64(2 * mask.Bytes)
	return op
}

func (e *est) eager() bool { return e.c.Training.Kernels == "eager" }

func (e *est) norm(name string) Operator {
	x, sp := e.x, e.spDiv
	in := tensor(name+".in", e.actName(), e.b, e.sl/sp, x.h)
	out := tensor(name+".out", e.actName(), e.b, e.sl/sp, x.h)
	statB, formula, kind := int64(4), "2·b·s·h/sp + 4·b·s/sp (input + fp32 rstd)", "RMSNorm"
	if !x.rms {
		statB, formula, kind = 8, "2·b·s·h/sp + 8·b·s/sp (input + fp32 mean, rstd)", "LayerNorm"
	}
	saved := in.Bytes + statB*e.n/sp
	if x.rms && e.eager() {
		// HF eager RMSNorm upcasts: it keeps the fp32 input and the bf16 normalized tensor instead of the input.
		saved = 4*e.n/sp*x.h + out.Bytes + statB*e.n/sp
		formula = "6·b·s·h + 4·b·s (eager: fp32 input + normalized + rstd)"
	}
	return Operator{Name: name, Category: "norm", Phase: "forward", Inputs: []Tensor{in}, Outputs: []Tensor{out},
		MemoryBytes: saved, Formula: formula, Notes: kind + ": input saved for backward",
		FLOPs: 5 * float64(e.n/sp*x.h), BytesMoved: float64(in.Bytes + out.Bytes)}
}

// layerOps returns one transformer layer's forward records on one GPU; MemoryBytes is what the layer saves for
// backward per micro-batch (before recomputation is applied).
func (e *est) layerOps() []Operator {
	c, x := e.c, e.x
	act := e.actName()
	b, sl, n, h, d, sp := e.b, e.sl, e.n, x.h, x.d, e.spDiv
	train := !e.inference
	keep := func(v int64) int64 {
		if train {
			return v
		}
		return 0
	}
	var ops []Operator
	ops = append(ops, e.norm("input_norm"))
	if !train {
		ops[0].MemoryBytes = 0
	}

	// QKV projection: with sequence parallelism the input is all-gathered; only the local shard is saved.
	qkvIn := tensor("qkv.in", act, b, sl, h)
	hrSaved := keep(qkvIn.Bytes / sp)
	qkv := e.linear("qkv_proj", "attention", qkvIn, (e.aL+2*e.gL)*d, h, n, hrSaved,
		"2·b·s·h/sp (input saved)", fmt.Sprintf("Q %s, K/V %s per GPU (GQA g=%d)", units.Plural(e.aL, "head", "heads"), units.Plural(e.gL, "head", "heads"), x.g))
	q := tensor("q", act, b, sl, e.aL, d)
	k := tensor("k", act, b, sl, e.gL, d)
	v := tensor("v", act, b, sl, e.gL, d)
	qkv.Outputs = []Tensor{q, k, v}
	if sp > 1 {
		qkv.TempBytes = qkvIn.Bytes // gathered input
	}
	ops = append(ops, qkv)
	if x.llama || !x.learned {
		ops = append(ops, Operator{Name: "rope", Category: "attention", Phase: "forward", Inputs: []Tensor{q, k},
			Outputs: []Tensor{q, k}, Formula: "0 (cos/sin cache only)", Notes: "rotary embedding on Q and K; backward needs only cos/sin",
			FLOPs: 3 * float64(n*(e.aL+e.gL)*d), BytesMoved: 2 * float64(q.Bytes+k.Bytes)})
	}

	// Attention core. Causal: half of the s×s score matrix does work. With CP each GPU holds s/cp queries and
	// attends to the whole sequence over the ring.
	o := tensor("attn.out", act, b, sl, e.aL, d)
	attn := Operator{Name: "attention", Category: "attention", Phase: "forward", Inputs: []Tensor{q, k, v}, Outputs: []Tensor{o},
		FLOPs: 4 * float64(b*sl) * float64(e.s) * float64(e.aL*d) * 0.5}
	if c.Training.Attention == "flash" || e.inference && c.Training.Attention != "standard" {
		lse := tensor("attn.lse", "fp32", b, e.aL, sl)
		attn.MemoryBytes = keep(q.Bytes + k.Bytes + v.Bytes + lse.Bytes)
		attn.Outputs = append(attn.Outputs, lse)
		attn.Formula = "2·b·s·h·(1 + 2g/a)/t + 4·b·a·s/t (Q, K, V and fp32 log-sum-exp; output counted at o_proj)"
		attn.Notes = "flash attention: O(s) memory, scores never materialized"
		attn.BytesMoved = float64(q.Bytes + k.Bytes + v.Bytes + o.Bytes)
	} else {
		scores := tensor("attn.probs", act, b, e.aL, sl, e.s)
		kvSaved := k.Bytes + v.Bytes
		if x.g < x.a {
			kvSaved = 2 * q.Bytes // eager GQA expands K and V to every query head (repeat_kv)
		}
		saved := q.Bytes + kvSaved
		formula := "2·b·s·h·3/t + 2·a·s²·b/t (Q, K, V, softmax probs)"
		if c.Training.Recompute != "selective" {
			saved += scores.Bytes
			if e.eager() {
				saved += 2 * scores.Bytes // fp32 softmax output kept besides its bf16 copy
				formula = "2·b·s·h·3/t + 6·a·s²·b/t (Q, K, V, fp32 and bf16 probabilities)"
			}
			if p := c.Training.AttentionDropout; p > 0 {
				saved += scores.Bytes/int64(e.ab) + scores.Bytes // mask + dropped probs
				formula = "2·b·s·h·3/t + 5·a·s²·b/t (Q, K, V, probs, dropout mask and output)"
			}
		} else {
			formula = "2·b·s·h·3/t (selective recompute: the s² part is recomputed)"
		}
		attn.MemoryBytes = keep(saved)
		attn.TempBytes = scores.Bytes // pre-softmax scores while the softmax runs
		attn.Outputs = append(attn.Outputs, scores)
		attn.Formula = formula
		attn.Notes = "standard attention: O(s²) score matrix per head"
		attn.BytesMoved = float64(q.Bytes+k.Bytes+v.Bytes+o.Bytes) + 4*float64(scores.Bytes)
	}
	attn.Extra = map[string]any{"kind": c.Training.Attention}
	ops = append(ops, attn)

	oproj := e.linear("o_proj", "attention", o, h, e.aL*d, n, keep(o.Bytes), "2·b·s·h/t (attention output saved)", "row-parallel; all-reduce (or reduce-scatter with SP) after")
	oproj.Outputs[0] = tensor("o_proj.out", act, b, sl/sp, h)
	if sp > 1 {
		oproj.TempBytes = n * h * int64(e.ab)
	}
	ops = append(ops, oproj)
	dropout := train && c.Training.HiddenDropout > 0
	if dropout {
		ops = append(ops, e.dropoutMask("attn_residual_dropout"))
	}
	ops = append(ops, e.norm("post_attn_norm"))
	if !train {
		ops[len(ops)-1].MemoryBytes = 0
	}

	mlpIn := tensor("mlp.in", act, b, sl, h)
	if x.E > 0 {
		ops = append(ops, e.moeOps(mlpIn, keep)...)
	} else {
		ops = append(ops, e.mlpOps("mlp", mlpIn, e.fL, n, keep(mlpIn.Bytes/sp), keep)...)
	}
	if dropout {
		ops = append(ops, e.dropoutMask("mlp_residual_dropout"))
	}
	return ops
}

// mlpOps builds a dense (or shared-expert) MLP with f columns per GPU over rows tokens.
func (e *est) mlpOps(prefix string, in Tensor, f, rows, inSaved int64, keep func(int64) int64) []Operator {
	act := e.actName()
	h := e.x.h
	var ops []Operator
	if e.x.gated {
		up := e.linear(prefix+".gate_up_proj", "mlp", in, 2*f, h, rows, inSaved, "2·b·s·h/sp (input saved)", "gate and up projections (column-parallel)")
		up.Outputs[0].Name = prefix + ".gate_up"
		ops = append(ops, up)
		mid := tensor(prefix+".act", act, append(tokenDims(in, rows), f)...)
		saved, formula := up.Outputs[0].Bytes, "4·b·s·f/t (gate and up outputs)"
		if e.eager() {
			saved += mid.Bytes // silu(gate) is a separate tensor kept for the multiply's backward
			formula = "6·b·s·f/t (eager: gate, up and silu(gate))"
		}
		ops = append(ops, Operator{Name: prefix + ".swiglu", Category: "mlp", Phase: "forward", Inputs: up.Outputs, Outputs: []Tensor{mid},
			MemoryBytes: keep(saved), Formula: formula, Notes: "SwiGLU = silu(gate)·up",
			FLOPs: 4 * float64(rows*f), BytesMoved: float64(up.Outputs[0].Bytes + mid.Bytes)})
		down := e.linear(prefix+".down_proj", "mlp", mid, h, f, rows, keep(mid.Bytes), "2·b·s·f/t (input saved)", "row-parallel")
		ops = append(ops, down)
		return ops
	}
	fc1 := e.linear(prefix+".fc1", "mlp", in, f, h, rows, inSaved, "2·b·s·h/sp (input saved)", "column-parallel")
	ops = append(ops, fc1)
	mid := tensor(prefix+".act", act, append(tokenDims(in, rows), f)...)
	name := "gelu"
	if e.c.Model.Activation == "squared-relu" {
		name = "squared_relu"
	}
	ops = append(ops, Operator{Name: prefix + "." + name, Category: "mlp", Phase: "forward", Inputs: fc1.Outputs, Outputs: []Tensor{mid},
		MemoryBytes: keep(fc1.Outputs[0].Bytes), Formula: "2·b·s·f/t (activation input)", Notes: name + " keeps its input for backward",
		FLOPs: 8 * float64(rows*f), BytesMoved: float64(fc1.Outputs[0].Bytes + mid.Bytes)})
	ops = append(ops, e.linear(prefix+".fc2", "mlp", mid, h, f, rows, keep(mid.Bytes), "2·b·s·f/t (input saved)", "row-parallel"))
	return ops
}

func (e *est) moeOps(in Tensor, keep func(int64) int64) []Operator {
	x, sp := e.x, e.spDiv
	p := e.c.Parallel
	local := e.n / sp
	var ops []Operator
	probs := tensor("router.probs", "fp32", local, x.E)
	idx := tensor("router.topk_idx", "int64", local, x.k)
	router := Operator{Name: "moe.router", Category: "moe", Phase: "forward", Inputs: []Tensor{in}, Outputs: []Tensor{probs, idx},
		MemoryBytes: keep(in.Bytes/sp + probs.Bytes + idx.Bytes + local*x.k*4),
		Formula:     "2·b·s·h/sp + b·s/sp·(4E + 12k) (input, fp32 probs, top-k indices and weights)",
		Notes:       fmt.Sprintf("top-%d of %d experts", x.k, x.E), FLOPs: 2 * float64(local*x.h*x.E),
		BytesMoved: float64(in.Bytes/sp + probs.Bytes)}
	ops = append(ops, router)
	// Tokens each GPU's experts process: balanced routing sends top-k copies of the local tokens (× capacity).
	ne := int64(math.Ceil(float64(local*x.k*int64(p.ETP)) * e.c.Model.MoECapacityFactor))
	disp := tensor("moe.dispatched", e.actName(), ne, x.h)
	ops = append(ops, Operator{Name: "moe.dispatch", Category: "moe", Phase: "forward", Inputs: []Tensor{in}, Outputs: []Tensor{disp},
		MemoryBytes: 0, Formula: "k·b·s/sp·cf tokens per GPU after all-to-all", Notes: fmt.Sprintf("expert parallel ep=%d, expert TP etp=%d; %d token copies per GPU", p.EP, p.ETP, ne),
		BytesMoved: 2 * float64(disp.Bytes)})
	ex := e.mlpOps("moe.experts", disp, e.feL, ne, keep(disp.Bytes), keep)
	ops = append(ops, ex...)
	out := tensor("moe.expert_out", e.actName(), ne, x.h)
	ops = append(ops, Operator{Name: "moe.combine", Category: "moe", Phase: "forward", Inputs: []Tensor{out}, Outputs: []Tensor{tensor("moe.out", e.actName(), local, x.h)},
		MemoryBytes: keep(out.Bytes), Formula: "2·k·b·s/sp·h·cf (expert outputs saved for the weighted sum)", Notes: "all-to-all back and top-k weighted sum",
		BytesMoved: float64(2 * out.Bytes)})
	if x.shared > 0 {
		ops = append(ops, e.mlpOps("moe.shared_expert", in, x.shared*x.fe/e.t, e.n, 0, keep)...)
	}
	return ops
}

// embeddingOps are the first stage's input-side records per micro-batch.
func (e *est) embeddingOps() []Operator {
	x, sp := e.x, e.spDiv
	ids := tensor("input_ids", "int64", e.b, e.sl)
	out := tensor("embeddings", e.actName(), e.b, e.sl/sp, x.h)
	op := Operator{Name: "embedding", Category: "embedding", Phase: "forward", Inputs: []Tensor{ids}, Outputs: []Tensor{out},
		MemoryBytes: ids.Bytes, Formula: "8·b·s (int64 token ids saved for the embedding backward)",
		Notes: "vocab-parallel lookup", Layer: -1, BytesMoved: float64(ids.Bytes + 2*out.Bytes)}
	if e.inference {
		op.MemoryBytes = 0
	}
	ops := []Operator{op}
	if e.c.Training.HiddenDropout > 0 && !e.inference {
		m := e.dropoutMask("embedding_dropout")
		m.Layer = -1
		ops = append(ops, m)
	}
	return ops
}

// headOps are the last stage's records: final norm, output projection and loss (one micro-batch in flight).
func (e *est) headOps() []Operator {
	c, x, sp := e.c, e.x, e.spDiv
	vL := x.V / e.t
	norm := e.norm("final_norm")
	norm.Layer = -1
	rows := e.n
	if e.inference && !c.Inference.LogitsAllTokens {
		rows = e.b // prefill keeps the last position's logits only
	}
	in := tensor("lm_head.in", e.actName(), e.b, e.sl, x.h)
	lm := e.linear("lm_head", "output", in, vL, x.h, rows, in.Bytes/sp, "2·b·s·h/sp (input saved)", fmt.Sprintf("vocab-parallel output layer, V=%d (padded) / tp", x.V))
	lm.Layer = -1
	logits := tensor("logits", e.actName(), e.b, e.sl, vL)
	if rows != e.n {
		logits = tensor("logits", e.actName(), rows, vL)
	}
	lm.Outputs = []Tensor{logits}
	E := rows * vL
	loss := Operator{Name: "cross_entropy", Category: "loss", Phase: "forward", Inputs: []Tensor{logits},
		Outputs: []Tensor{tensor("loss", "fp32")}, Layer: -1, Extra: map[string]any{}}
	var bwd int64
	switch c.Training.Loss {
	case "standard":
		loss.MemoryBytes = 6 * E
		loss.TempBytes = 4 * E
		bwd = 8 * E
		loss.Formula = "6·b·s·V/t (bf16 logits kept + fp32 log-probs); forward temp 4·b·s·V/t; backward temp 8·b·s·V/t"
		loss.Notes = "HF-style: logits.float() then log_softmax; backward materializes fp32 gradients"
	case "fused":
		loss.MemoryBytes = 4 * E
		loss.TempBytes = 2 * E
		bwd = 2 * E
		loss.Formula = "4·b·s·V/t (fp32 softmax); forward temp 2·b·s·V/t; backward temp 2·b·s·V/t"
		loss.Notes = "vocab-parallel fused cross entropy: softmax saved, gradient computed in place"
		lm.MemoryBytes = in.Bytes / sp
	case "fused_jit":
		// Megatron's --cross-entropy-loss-fusion (native impl) runs the same vocab-parallel algorithm through
		// jit-compiled functions, which cannot overwrite their inputs: exp(logits − max) is a new fp32 tensor (it
		// becomes the saved softmax) while the fp32 copy of the logits and the bf16 logits are still referenced.
		loss.MemoryBytes = 4 * E
		loss.TempBytes = 6 * E
		bwd = 2 * E
		loss.Formula = "4·b·s·V/t (fp32 softmax); forward temp 6·b·s·V/t (bf16 logits + fp32 copy); backward temp 2·b·s·V/t"
		loss.Notes = "jit-compiled vocab-parallel cross entropy: out-of-place exp beside the fp32 logits"
		lm.MemoryBytes = in.Bytes / sp
	case "chunked":
		chunk := min(int64(c.Training.LossChunkTokens), rows)
		loss.TempBytes = 10 * chunk * vL
		bwd = 10 * chunk * vL
		loss.Formula = fmt.Sprintf("0 saved; temp 10·chunk·V/t with chunk=%d tokens", chunk)
		loss.Notes = "chunked / fused linear cross entropy: full logits never materialized"
		lm.Outputs = []Tensor{tensor("logits.chunk", e.actName(), chunk, vL)}
	}
	if e.inference {
		loss = Operator{Name: "logits", Category: "loss", Phase: "prefill", Inputs: []Tensor{logits}, Layer: -1,
			TempBytes: 4 * E, Formula: "fp32 logits for sampling", Notes: "no loss in inference", Extra: map[string]any{}}
		lm.MemoryBytes, norm.MemoryBytes, bwd = 0, 0, 0
	}
	loss.Extra["backward_temp_bytes"] = bwd
	loss.FLOPs = 5 * float64(E)
	loss.BytesMoved = float64(3 * logits.Bytes)
	return []Operator{norm, lm, loss}
}
