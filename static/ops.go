package static

import (
	"fmt"
	"math"

	"github.com/memscan/memscan/internal/units"
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
		op.seq = append(keepSeq(mask.Bytes), tempSeq(mask.Bytes*int64(e.ab))...) // mask kept, dropped output consumed
	}
	op.BytesMoved = float64(3 * mask.Bytes * int64(e.ab))
	op.FLOPs = float64(2 * mask.Bytes)
	return op
}

// eager reports unfused elementwise chains (HF, torchtune modules without torch.compile): each op of a chain
// keeps what its own backward needs.
func (e *est) eager() bool { return e.c.Training.Kernels == "eager" && !e.c.Training.Compile }

// residualName is the dtype of the residual stream: fp32 under autocast (fp32 embeddings plus 16-bit outputs
// promote to fp32), else the activation dtype.
func (e *est) residualName() string {
	if !e.inference && (e.c.amp() || e.kbitPrep()) {
		return "fp32"
	}
	return e.actName()
}

func (e *est) norm(name string) Operator {
	x, sp := e.x, e.spDiv
	rd := e.residualName()
	in := tensor(name+".in", rd, e.b, e.sl/sp, x.h)
	out := tensor(name+".out", rd, e.b, e.sl/sp, x.h)
	statB, formula, kind := int64(4), "2·b·s·h/sp + 4·b·s/sp (input + fp32 rstd)", "RMSNorm"
	if !x.rms {
		statB, formula, kind = 8, "2·b·s·h/sp + 8·b·s/sp (input + fp32 mean, rstd)", "LayerNorm"
	}
	saved := in.Bytes + statB*e.n/sp
	frozen := e.lora != nil
	switch {
	case x.rms && e.eager() && (e.c.Model.Family == "gemma" || e.c.Model.Family == "gemma2"):
		// Gemma computes the norm in fp32 and multiplies by (1 + weight) in fp32: fp32 input and fp32 normalized.
		saved = 8*e.n/sp*x.h + statB*e.n/sp
		formula = "8·b·s·h + 4·b·s (Gemma eager: fp32 input + fp32 normalized + rstd)"
		if frozen {
			saved = 4*e.n/sp*x.h + statB*e.n/sp
		}
	case x.rms && e.eager():
		// HF/torchtune eager RMSNorm upcasts: hidden.to(float32) is saved (by pow and the rsqrt multiply) and the
		// normalized tensor, cast back, is saved by the weight multiply; the bf16 input itself is not kept.
		saved = 4*e.n/sp*x.h + out.Bytes + statB*e.n/sp
		formula = "4·b·s·h + residual bytes·b·s·h + 4·b·s (eager: fp32 input + normalized + rstd)"
		if frozen {
			// A frozen weight needs no gradient, so the weight multiply keeps nothing (autograd saves a factor
			// only for the other factor's gradient).
			saved = 4*e.n/sp*x.h + statB*e.n/sp
			formula = "4·b·s·h + 4·b·s (eager, frozen weight: fp32 input + rstd)"
		}
	}
	op := Operator{Name: name, Category: "norm", Phase: "forward", Inputs: []Tensor{in}, Outputs: []Tensor{out},
		MemoryBytes: saved, Formula: formula, Notes: kind + ": input saved for backward",
		FLOPs: 5 * float64(e.n/sp*x.h), BytesMoved: float64(in.Bytes + out.Bytes)}
	stats := statB * e.n / sp
	switch {
	case x.rms && e.eager():
		// The eager chain: the fp32 upcast, pow's and the product's fp32 temporaries, rstd, the normalized tensor;
		// the residual-stream tensor it reads lives on beside them until the next residual add.
		f32 := 4 * e.n / sp * x.h
		rest := saved - f32 - stats
		op.seq = append(keepSeq(f32), briefSeq(f32)...)
		op.seq = append(op.seq, keepSeq(stats)...)
		op.seq = append(op.seq, briefSeq(f32)...)
		op.seq = append(op.seq, keepSeq(rest)...)
		if rest == 0 {
			op.seq = append(op.seq, tempSeq(out.Bytes)...)
		}
		op.seq = append(op.seq, seqTensor{in.Bytes, lifeLayer})
	default:
		op.seq = keepSeq(in.Bytes, stats)
	}
	return op
}

// ampCasts is how many 16-bit copies of one fp32 input autocast makes for the projections that read it:
// separate projections (Llama-style q/k/v, gate/up: projections of them) each cast the input themselves, since
// autocast caches casts of parameters only; fused ones (GPT-2 c_attn, NeoX query_key_value) cast it once.
func (e *est) ampCasts(projections int64) int64 {
	if e.inference || !e.c.amp() || !e.x.llama {
		return 1
	}
	if projections == 2 && !e.x.gated {
		return 1
	}
	return projections
}

// linearSaved is what a linear layer keeps of its input x (the bytes of x as the layer sees it): a frozen
// weight keeps nothing (autograd needs x only for the weight gradient), float8 keeps the fp8 cast.
func (e *est) linearSaved(xBytes int64, frozen bool) int64 {
	switch {
	case frozen:
		return 0
	case e.c.Training.Float8 && !e.inference:
		return int64(float64(xBytes) / e.ab)
	}
	return xBytes
}

// layerOps returns one transformer layer's forward records on one GPU; MemoryBytes is what the layer saves for
// backward per micro-batch (before recomputation is applied).
func (e *est) layerOps() []Operator {
	c, x := e.c, e.x
	act := e.actName()
	b, sl, n, h, d, sp := e.b, e.sl, e.n, x.h, x.d, e.spDiv
	train := !e.inference
	frozen := e.lora != nil
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
	// Megatron's sequence parallelism keeps the local shard and all-gathers it again in backward; PyTorch's
	// DTensor plans (torchtitan) hand the column-parallel linears the all-gathered input, which they keep.
	spSaved := sp
	if e.dtensorTP() {
		spSaved = 1
	}
	hrSaved := keep(e.linearSaved(qkvIn.Bytes/spSaved, frozen) * e.ampCasts(3))
	qkv := e.linear("qkv_proj", "attention", qkvIn, (e.aL+2*e.gL)*d, h, n, hrSaved,
		"2·b·s·h/sp (input saved)", fmt.Sprintf("Q %s, K/V %s per GPU (GQA g=%d)", units.Plural(e.aL, "head", "heads"), units.Plural(e.gL, "head", "heads"), x.g))
	q := tensor("q", act, b, sl, e.aL, d)
	k := tensor("k", act, b, sl, e.gL, d)
	v := tensor("v", act, b, sl, e.gL, d)
	qkv.Outputs = []Tensor{q, k, v}
	if sp > 1 {
		qkv.TempBytes = max(0, qkvIn.Bytes-hrSaved) // the gathered input, where the linears do not keep it
	}
	ops = append(ops, qkv)
	if train && frozen {
		if x.fusedProj {
			ops = append(ops, e.loraOp("qkv", n, h, act, false, []int64{(e.aL + 2*e.gL) * d}, []string{"qkv_proj"})...)
		} else {
			ops = append(ops, e.loraOp("qkv", n, h, act, false, []int64{e.aL * d, e.gL * d, e.gL * d}, []string{"q_proj", "k_proj", "v_proj"})...)
		}
	}
	if x.llama || !x.learned {
		ops = append(ops, Operator{Name: "rope", Category: "attention", Phase: "forward", Inputs: []Tensor{q, k},
			Outputs: []Tensor{q, k}, Formula: "0 (cos/sin cache only)", Notes: "rotary embedding on Q and K; backward needs only cos/sin",
			FLOPs: 3 * float64(n*(e.aL+e.gL)*d), BytesMoved: 2 * float64(q.Bytes+k.Bytes)})
	}

	o := tensor("attn.out", act, b, sl, e.aL, d)
	attn, fusedOut := e.attentionOp(q, k, v, o, keep)
	ops = append(ops, attn)

	// The attention output is counted where it is saved: at o_proj (its input), or at a fused kernel whose
	// backward reads it when the frozen o_proj keeps nothing.
	oSaved := keep(e.linearSaved(o.Bytes, frozen))
	if frozen && fusedOut {
		a := &ops[len(ops)-1]
		a.MemoryBytes += keep(o.Bytes)
		if a.seq != nil {
			a.seq = append(a.seq, keepSeq(keep(o.Bytes))...) // the replay keeps it too
		}
	}
	oproj := e.linear("o_proj", "attention", o, h, e.aL*d, n, oSaved, "2·b·s·h/t (attention output saved)", "row-parallel; all-reduce (or reduce-scatter with SP) after")
	oproj.Outputs[0] = tensor("o_proj.out", act, b, sl/sp, h)
	if sp > 1 {
		oproj.TempBytes = e.reduceScatterInput(n * h * int64(e.ab))
	}
	ops = append(ops, oproj)
	if train && frozen {
		ops = append(ops, e.loraOp("o", n, e.aL*d, act, fusedOut, []int64{h}, []string{"o_proj"})...)
	}
	dropout := train && c.Training.HiddenDropout > 0
	// sandwich adds Gemma-2's norm of a sub-block's output before its residual add.
	sandwich := func(name string) {
		if x.sandwich {
			ops = append(ops, e.norm(name))
			if !train {
				ops[len(ops)-1].MemoryBytes = 0
			}
		}
	}
	sandwich("attn_out_norm")
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
		ops = append(ops, e.mlpOps("mlp", mlpIn, e.fL, n, keep(e.linearSaved(mlpIn.Bytes/spSaved, frozen)*e.ampCasts(2)), keep)...)
	}
	sandwich("mlp_out_norm")
	if dropout {
		ops = append(ops, e.dropoutMask("mlp_residual_dropout"))
	}
	if train {
		ops = append(ops, e.weightCopyOps()...)
	}
	return ops
}

// attentionOp builds the attention core for the kernel PyTorch runs (selectAttention). fusedOut reports a
// fused kernel whose backward reads its own output (flash, memory-efficient, cuDNN, flex).
func (e *est) attentionOp(q, k, v, o Tensor, keep func(int64) int64) (Operator, bool) {
	c, x := e.c, e.x
	b, sl, d := e.b, e.sl, x.d
	kn := e.kernel
	// Causal: half of the s×s score matrix does work. With CP each GPU holds s/cp queries and attends to the
	// whole sequence over the ring.
	attn := Operator{Name: "attention", Category: "attention", Phase: "forward", Inputs: []Tensor{q, k, v}, Outputs: []Tensor{o},
		FLOPs: 4 * float64(b*sl) * float64(e.s) * float64(e.aL*d) * 0.5,
		Extra: map[string]any{"kind": kn.name, "why": kn.why}}
	kvSaved := k.Bytes + v.Bytes
	if kn.repeatKV && x.g < x.a {
		kvSaved = 2 * b * sl * e.aL * d * int64(e.ab) // K and V expanded to every query head
	}
	switch kn.name {
	case "flash", "efficient", "cudnn", "flex":
		lse := tensor("attn.lse", "fp32", b, e.aL, sl)
		attn.MemoryBytes = keep(q.Bytes + kvSaved + lse.Bytes + kn.maskBytes)
		if attn.MemoryBytes > 0 {
			attn.seq = keepSeq(kn.maskBytes, q.Bytes, kvSaved/2, kvSaved/2, lse.Bytes)
			if e.c.Parallel.CP > 1 {
				e.ringAttention(&attn, kvSaved)
			}
		}
		attn.Outputs = append(attn.Outputs, lse)
		attn.Formula = "2·b·s·h·(1 + 2g/a)/t + 4·b·a·s/t (Q, K, V and fp32 log-sum-exp; output counted at o_proj)"
		attn.Notes = kn.name + " attention: O(s) memory, scores never materialized"
		if kn.maskBytes > 0 {
			attn.Formula += " + b·s² mask"
		}
		attn.BytesMoved = float64(q.Bytes + k.Bytes + v.Bytes + o.Bytes)
		return attn, true
	case "math":
		// aten _scaled_dot_product_attention_math: q·√scale and kᵀ·√scale (K repeated for enable_gqa), the
		// softmax probabilities and V are saved by the two matmuls; 16-bit inputs are upcast to fp32 first.
		mb := e.ab
		if kn.fp32Math {
			mb = 4
		}
		probs := tensor("attn.probs", map[bool]string{true: "fp32", false: e.actName()}[kn.fp32Math], b, e.aL, sl, e.s)
		qkv := float64(b*sl*e.aL*d) * mb
		kvb := float64(2*b*e.s*e.gL*d) * mb
		if kn.repeatKV {
			kvb = float64(2*b*e.s*e.aL*d) * mb
		}
		saved := int64(qkv+kvb) + probs.Bytes + kn.maskBytes
		formula := "q, K, V in the math dtype + b·a·s² probabilities"
		if p := c.Training.AttentionDropout; p > 0 {
			saved += probs.Bytes/int64(mb) + probs.Bytes // bool mask + dropped probabilities
			formula += " + dropout mask and output"
		}
		attn.MemoryBytes = keep(saved)
		attn.TempBytes = probs.Bytes // the scores while the softmax runs
		if attn.MemoryBytes > 0 {
			third := int64(kvb / 2)
			attn.seq = append(keepSeq(kn.maskBytes, int64(qkv), third, third), tempSeq(probs.Bytes)...)
			attn.seq = append(attn.seq, keepSeq(attn.MemoryBytes-kn.maskBytes-int64(qkv)-2*third)...)
		}
		attn.Outputs = append(attn.Outputs, probs)
		attn.Formula = formula
		attn.Notes = "math SDPA: O(s²) scores and probabilities per head"
		attn.BytesMoved = float64(q.Bytes+k.Bytes+v.Bytes+o.Bytes) + 4*float64(probs.Bytes)
		return attn, false
	}
	scores := tensor("attn.probs", e.actName(), b, e.aL, sl, e.s)
	saved := q.Bytes + kvSaved
	formula := "2·b·s·h·3/t + 2·a·s²·b/t (Q, K, V, softmax probs)"
	if c.Training.Recompute != "selective" {
		saved += scores.Bytes
		if e.eager() {
			saved += 2 * scores.Bytes // fp32 softmax output kept besides its bf16 copy
			formula = "2·b·s·h·3/t + 6·a·s²·b/t (Q, K, V, fp32 and bf16 probabilities)"
			if x.attnSoftcap {
				saved += scores.Bytes // tanh keeps its output for its backward
				formula = "2·b·s·h·3/t + 8·a·s²·b/t (Q, K, V, soft-capped tanh scores, fp32 and bf16 probabilities)"
			}
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
	if attn.MemoryBytes > 0 {
		attn.seq = keepSeq(q.Bytes, kvSaved/2, kvSaved/2)
		rest := saved - q.Bytes - kvSaved
		// A 16-bit model (under autocast HF's fp32 mask promotes the masked scores to fp32: another chain).
		if e.eager() && c.Training.Recompute != "selective" && c.Training.AttentionDropout == 0 && e.ab == 2 && !c.amp() {
			attn.seq, attn.bwd = eagerAttentionSeq(q.Bytes, kvSaved/2, scores.Bytes, e.actName() == "bf16", x.attnSoftcap)
		} else {
			attn.seq = append(attn.seq, tempSeq(scores.Bytes)...)
			attn.seq = append(attn.seq, splitEven(rest, scores.Bytes)...)
		}
	}
	attn.Outputs = append(attn.Outputs, scores)
	attn.Formula = formula
	attn.Notes = "standard attention: O(s²) score matrix per head"
	attn.BytesMoved = float64(q.Bytes+k.Bytes+v.Bytes+o.Bytes) + 4*float64(scores.Bytes)
	return attn, false
}

// eagerAttentionSeq is HF eager_attention_forward's allocations on 16-bit q (q bytes), K and V expanded by
// repeat_kv (kv bytes each) and scores of sc bytes, forward and backward, in PyTorch's order:
//
//	A = q·kᵀ, B = A·scale (A dies), C = B + mask (B dies; C lives until the name is rebound after the cast),
//	softmax(C, dtype=fp32): aten fuses the upcast only for fp16, so bf16 first converts C to an fp32 copy D,
//	E = _softmax(D) in fp32 (D dies; E saved by softmax's backward), F = E.to(16-bit) (saved by F·V), C dies.
//
// Gemma-2's soft-capping (softcap) inserts B/cap, tanh (its output saved by tanh's backward) and ·cap between
// the scaling and the mask, each consuming the one before.
//
// Backward runs the chain in reverse, each node's gradient allocated before the one it consumes is freed and
// its saved tensors released right after it: ∂F and ∂V (F and V released), ∂E = ∂F in fp32, ∂D = softmax's
// backward (E released), ∂C = ∂D in 16 bits (fp16: softmax's backward writes 16 bits directly), with
// soft-capping ∂(tanh·cap), tanh's backward (tanh released) and ∂(B/cap), then ∂A = ∂C·scale (the mask's add
// passes ∂C through), then ∂q and ∂K (q and K released). ∂V waits in the autograd engine until its repeat_kv
// branch runs after the chain (the branch was created earlier, so it runs later).
func eagerAttentionSeq(q, kv, sc int64, bf16, softcap bool) ([]seqTensor, []bwdStep) {
	const qi, ki, vi = 0, 1, 2
	seq := keepSeq(q, kv, kv)
	seq = append(seq, briefSeq(sc, sc)...)
	ti := -1
	if softcap {
		seq = append(seq, briefSeq(sc)...)
		ti = len(seq)
		seq = append(seq, keepSeq(sc)...)
		seq = append(seq, briefSeq(sc)...)
	}
	seq = append(seq, tempSeq(sc)...)
	if bf16 {
		seq = append(seq, briefSeq(2*sc)...)
	}
	ei, fi := len(seq), len(seq)+1
	seq = append(seq, keepSeq(2*sc, sc)...)
	var bwd []bwdStep
	// grad allocates a backward tensor, frees what dies right after it and returns its index.
	grad := func(bytes int64, free ...int) int {
		bwd = append(bwd, bwdStep{bytes: bytes, free: free})
		return len(seq) + len(bwd) - 1
	}
	dF := grad(sc)
	grad(kv, fi, vi) // ∂V
	dE := grad(2*sc, dF)
	var dC int
	if bf16 {
		dD := grad(2*sc, dE, ei)
		dC = grad(sc, dD)
	} else {
		dC = grad(sc, dE, ei) // fp16: softmax's backward writes 16 bits
	}
	if softcap {
		dCap := grad(sc, dC)        // ∂(tanh·cap)
		dTanh := grad(sc, dCap, ti) // tanh's backward: ∂·(1 − tanh²)
		dC = grad(sc, dTanh)        // ∂(B/cap)
	}
	dA := grad(sc, dC)
	grad(q)
	grad(kv, dA, qi, ki)
	return seq, bwd
}

// mlpOps builds a dense (or shared-expert) MLP with f columns per GPU over rows tokens.
func (e *est) mlpOps(prefix string, in Tensor, f, rows, inSaved int64, keep func(int64) int64) []Operator {
	act := e.actName()
	h := e.x.h
	frozen := e.lora != nil && !e.inference
	var ops []Operator
	if e.x.gated {
		up := e.linear(prefix+".gate_up_proj", "mlp", in, 2*f, h, rows, inSaved, "2·b·s·h/sp (input saved)", "gate and up projections (column-parallel)")
		up.Outputs[0].Name = prefix + ".gate_up"
		ops = append(ops, up)
		if frozen {
			if e.x.fusedProj {
				ops = append(ops, e.loraOp(prefix+".gate_up", rows, h, act, false, []int64{2 * f}, []string{"gate_up_proj"})...)
			} else {
				ops = append(ops, e.loraOp(prefix+".gate_up", rows, h, act, false, []int64{f, f}, []string{"gate_proj", "up_proj"})...)
			}
		}
		mid := tensor(prefix+".act", act, append(tokenDims(in, rows), f)...)
		saved, formula := up.Outputs[0].Bytes, "4·b·s·f/t (gate and up outputs)"
		if e.eager() {
			saved += mid.Bytes // act(gate) is a separate tensor kept for the multiply's backward
			formula = "6·b·s·f/t (eager: gate, up and act(gate))"
		}
		name := ".swiglu"
		if e.c.Model.Activation == "geglu" {
			name = ".geglu"
		}
		actOp := Operator{Name: prefix + name, Category: "mlp", Phase: "forward", Inputs: up.Outputs, Outputs: []Tensor{mid},
			MemoryBytes: keep(saved), Formula: formula, Notes: "gated MLP = act(gate)·up",
			FLOPs: 4 * float64(rows*f), BytesMoved: float64(up.Outputs[0].Bytes + mid.Bytes)}
		if actOp.MemoryBytes > 0 {
			actOp.seq = splitEven(actOp.MemoryBytes, mid.Bytes) // gate, up (and act(gate)): one f-wide tensor each
		}
		ops = append(ops, actOp)
		down := e.linear(prefix+".down_proj", "mlp", mid, h, f, rows, keep(e.linearSaved(mid.Bytes, frozen)), "2·b·s·f/t (input saved)", "row-parallel")
		if e.dtensorTP() && e.spDiv > 1 && prefix == "mlp" {
			down.TempBytes = e.reduceScatterInput(rows * h * int64(e.ab))
		}
		ops = append(ops, down)
		if frozen {
			ops = append(ops, e.loraOp(prefix+".down", rows, f, act, false, []int64{h}, []string{"down_proj"})...)
		}
		return ops
	}
	fc1 := e.linear(prefix+".fc1", "mlp", in, f, h, rows, inSaved, "2·b·s·h/sp (input saved)", "column-parallel")
	ops = append(ops, fc1)
	if frozen {
		ops = append(ops, e.loraOp(prefix+".fc1", rows, h, act, false, []int64{f}, []string{"up_proj"})...)
	}
	midDtype := act
	if e.c.amp() && e.c.Model.Activation == "gelu_new" && e.eager() {
		midDtype = "fp32" // pow is on autocast's fp32 list, so the whole tanh chain runs in fp32
	}
	mid := tensor(prefix+".act", midDtype, append(tokenDims(in, rows), f)...)
	name, saved := "gelu", fc1.Outputs[0].Bytes
	formula, notes := "2·b·s·f/t (activation input)", "gelu keeps its input for backward"
	switch {
	case e.c.Model.Activation == "squared-relu":
		name, notes = "squared_relu", "squared_relu keeps its input for backward"
	case e.c.Model.Activation == "gelu_new" && e.eager():
		// transformers NewGELUActivation: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) as eager ops. Besides x
		// (saved by pow), tanh keeps its output, the final product keeps both factors: 1 + tanh(...) and 0.5·x.
		chain := float64(rows*f) * (2*dtypeBytes[midDtype] + e.ab)
		saved += int64(chain)
		if midDtype == "fp32" {
			saved += fc1.Outputs[0].Bytes // pow casts x to fp32 and keeps that copy instead of x (as many bytes again)
		}
		name = "gelu_new"
		formula = "b·s·f/t·(input + tanh out + (1 + tanh) + 0.5·x) (eager tanh-approximation chain)"
		notes = "gelu_new as eager elementwise ops: each keeps what its backward needs"
	case e.c.Model.Activation == "gelu_new":
		name = "gelu_new"
	}
	gelu := Operator{Name: prefix + "." + name, Category: "mlp", Phase: "forward", Inputs: fc1.Outputs, Outputs: []Tensor{mid},
		MemoryBytes: keep(saved), Formula: formula, Notes: notes,
		FLOPs: 8 * float64(rows*f), BytesMoved: float64(fc1.Outputs[0].Bytes + mid.Bytes)}
	if gelu.MemoryBytes > 0 {
		gelu.seq = splitEven(gelu.MemoryBytes, fc1.Outputs[0].Bytes)
		if name == "gelu_new" && e.eager() {
			gelu.seq = append(gelu.seq, tempSeq(mid.Bytes, mid.Bytes)...) // x³ and the scaled sum, dropped on the way
		}
	}
	ops = append(ops, gelu)
	// Under autocast fc2 casts an fp32 activation to 16 bits and saves the cast.
	fc2In := int64(float64(rows*f) * e.ab)
	ops = append(ops, e.linear(prefix+".fc2", "mlp", mid, h, f, rows, keep(e.linearSaved(fc2In, frozen)), "2·b·s·f/t (input saved)", "row-parallel"))
	if frozen {
		ops = append(ops, e.loraOp(prefix+".fc2", rows, f, act, false, []int64{h}, []string{"down_proj"})...)
	}
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
	if e.c.Model.Family == "mixtral" && e.eager() {
		// transformers' MixtralSparseMoeBlock loops over experts with an int64 one_hot(selected, E) mask of
		// b·s·k·E entries and accumulates into a zeroed b·s·h output with index_add_.
		router.TempBytes = 8*local*x.k*x.E + local*x.h*int64(e.ab)
		router.Notes += "; HF dispatch: int64 one-hot expert mask and a zeroed output during the expert loop"
	}
	ops = append(ops, router)
	// Tokens each GPU's experts process: balanced routing sends top-k copies of the local tokens (× capacity).
	ne := int64(math.Ceil(float64(local*x.k*int64(p.ETP)) * e.c.Model.MoECapacityFactor))
	disp := tensor("moe.dispatched", e.actName(), ne, x.h)
	dispatch := Operator{Name: "moe.dispatch", Category: "moe", Phase: "forward", Inputs: []Tensor{in}, Outputs: []Tensor{disp},
		MemoryBytes: 0, Formula: "k·b·s/sp·cf tokens per GPU after all-to-all", Notes: fmt.Sprintf("expert parallel ep=%d, expert TP etp=%d; %d token copies per GPU", p.EP, p.ETP, ne),
		BytesMoved: 2 * float64(disp.Bytes)}
	if p.EP > 1 {
		// The token dispatcher permutes the routed copies into a send buffer before the all-to-all (the receive
		// buffer is the experts' input, kept by their first linear).
		dispatch.TempBytes = disp.Bytes
		dispatch.Formula += "; permuted send buffer"
	}
	ops = append(ops, dispatch)
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
	} else if e.eager() {
		// HF's model forward keeps the embeddings (inputs_embeds) referenced until it returns.
		op.seq = append(keepSeq(ids.Bytes), seqTensor{int64(float64(e.n*x.h/sp) * dtypeBytes[e.residualName()]), lifeForward})
		if e.kernel.name == "standard" && e.c.Framework == "hf" {
			// And its eager attention's mask: masking_utils.eager_mask builds a (b, 1, s, s) additive float mask
			// in the model's dtype before the first layer.
			op.seq = append(op.seq, seqTensor{e.b * e.sl * e.s * int64(e.pb), lifeForward})
		}
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
	lmSaved := in.Bytes / sp // (float8 recipes leave the output layer in 16 bits)
	if e.dtensorTP() {
		lmSaved = in.Bytes // ColwiseParallel(input_layouts=Shard(1)) keeps the all-gathered final-norm output
	}
	if e.lora != nil {
		lmSaved = 0 // a frozen output layer keeps nothing
	}
	if !e.inference && (c.amp() || e.kbitPrep()) {
		lmSaved += int64(float64(vL*x.h) * e.ab) // autocast's 16-bit copy of the output weight, kept for backward
	}
	lm := e.linear("lm_head", "output", in, vL, x.h, rows, lmSaved, "2·b·s·h/sp (input saved; + 16-bit weight copy under autocast)", fmt.Sprintf("vocab-parallel output layer, V=%d (padded) / tp", x.V))
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
		if c.Framework == "torchtitan" {
			// torchtitan's train step deletes pred before loss.backward(): only the fp32 log-probs stay.
			loss.MemoryBytes, loss.TempBytes = 4*E, 6*E
			loss.Formula = "4·b·s·V/t (fp32 log-probs; the logits are deleted before backward); forward temp 6·b·s·V/t; backward temp 8·b·s·V/t"
		}
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
	case "chunked_output":
		// torchtune CEWithChunkedOutputLoss: the output layer runs per chunk of tokens and the loss upcasts one
		// chunk at a time; every chunk's fp32 log-softmax stays saved, the 16-bit logits are dropped (del logits)
		// before backward, whose gradients then also come one chunk at a time.
		k := int64(c.Training.LossChunks)
		loss.MemoryBytes = 4 * E
		loss.TempBytes = 2*E + 4*E/k
		bwd = 10 * E / k
		loss.Formula = fmt.Sprintf("4·b·s·V/t (fp32 log-probs of all %d chunks); forward temp 2·b·s·V/t + 4·b·s·V/t/%d; backward temp 10·b·s·V/t/%d", k, k, k)
		loss.Notes = "chunked-output cross entropy: one chunk upcast to fp32 at a time"
	case "chunked":
		chunk := min(int64(c.Training.LossChunkTokens), rows)
		loss.TempBytes = 10 * chunk * vL
		bwd = 10 * chunk * vL
		loss.Formula = fmt.Sprintf("0 saved; temp 10·chunk·V/t with chunk=%d tokens", chunk)
		loss.Notes = "chunked / fused linear cross entropy: full logits never materialized"
		lm.Outputs = []Tensor{tensor("logits.chunk", e.actName(), chunk, vL)}
	}
	// The loss's tensors in creation order and its backward's, for the allocation sequence: HF's
	// logits.float() copy and log-softmax, then (as the SDPA snapshot trace shows) nll_loss's fp32 gradient,
	// log_softmax's (nll's gradient and the log-probabilities die), the 16-bit gradient of the logits (the fp32
	// one dies), which the output layer's backward consumes.
	switch c.Training.Loss {
	case "standard":
		loss.seq = append(tensorsOf(lifeOutput, []int64{loss.MemoryBytes - 4*E}), tempSeq(loss.TempBytes-4*E)...)
		loss.seq = append(loss.seq, tempSeq(4*E)...)
		loss.seq = append(loss.seq, keepSeq(4*E)...)
		n := len(loss.seq)
		loss.bwd = []bwdStep{{bytes: 4 * E}, {bytes: 4 * E, free: []int{n, n - 1}}, {bytes: 2 * E, free: []int{n + 1}, carry: true}}
	case "fused", "fused_jit":
		loss.seq = append(tempSeq(loss.TempBytes), keepSeq(4*E)...)
		loss.bwd = []bwdStep{{bytes: bwd}}
	case "chunked_output":
		k := int64(c.Training.LossChunks)
		loss.seq = tempSeq(2 * E)
		for range k {
			loss.seq = append(loss.seq, briefSeq(4*E/k)...)
			loss.seq = append(loss.seq, keepSeq(4*E/k)...)
		}
		loss.bwd = []bwdStep{{bytes: 4 * E / k}, {bytes: 4 * E / k}, {bytes: 2 * E / k}}
	default:
		loss.bwd = []bwdStep{{bytes: bwd}}
	}
	if e.compiledLoss() {
		bwd = e.compileLoss(&loss, E)
	} else if e.lossParallel() {
		bwd = e.lossParallelOp(&loss, E)
	}
	if e.inference {
		loss = Operator{Name: "logits", Category: "loss", Phase: "prefill", Inputs: []Tensor{logits}, Layer: -1,
			TempBytes: 4 * E, Formula: "fp32 logits for sampling", Notes: "no loss in inference", Extra: map[string]any{}}
		lm.MemoryBytes, norm.MemoryBytes, bwd = 0, 0, 0
	}
	loss.Extra["backward_temp_bytes"] = bwd
	loss.FLOPs = 5 * float64(E)
	loss.BytesMoved = float64(3 * logits.Bytes)
	if x.logitSoftcap && !e.inference {
		// Gemma-2's final_logit_softcapping: logits / cap, tanh (kept by its backward), · cap, each a new tensor of
		// the logits' size consuming the one before; the capped logits are what the loss receives.
		lb := logits.Bytes
		capOp := Operator{Name: "final_logit_softcap", Category: "output", Phase: "forward", Layer: -1, Inputs: []Tensor{logits},
			Outputs: []Tensor{logits}, MemoryBytes: lb, TempBytes: lb, Formula: "2·b·s·V/t (tanh output kept) + 2·b·s·V/t transient",
			Notes: "tanh(logits/30)·30", FLOPs: 4 * float64(E), BytesMoved: float64(4 * lb), Extra: map[string]any{}}
		capOp.seq = append(briefSeq(lb, lb), keepSeq(lb)...)
		return []Operator{norm, lm, capOp, loss}
	}
	return []Operator{norm, lm, loss}
}

// compiledLoss reports a cross entropy that runs under torch.compile (training.compiled_loss).
func (e *est) compiledLoss() bool {
	t := e.c.Training
	return !e.inference && t.CompiledLoss != nil && *t.CompiledLoss && (t.Loss == "standard" || t.Loss == "chunked_output")
}

// compileLoss rewrites the cross entropy's record for Inductor's fused kernels and returns its backward
// temporary. F.cross_entropy(logits.float(), labels) compiles to reductions that read the 16-bit logits
// directly (the fp32 copy and the log-softmax are never materialized); the partitioner saves the logits
// themselves (a graph input, kept alive by the graph even where the loop deletes its own reference) and the
// per-row log-sum-exp, and the backward writes softmax − one-hot in one kernel, straight into a 16-bit gradient
// of the logits. torchtune's chunked loss compiles compute_cross_entropy per chunk: the same per chunk.
func (e *est) compileLoss(loss *Operator, E int64) int64 {
	rows := E / (e.x.V / e.t)
	lse := 4 * rows
	if e.c.Training.Loss == "chunked_output" {
		k := int64(e.c.Training.LossChunks)
		loss.MemoryBytes, loss.TempBytes = 2*E+lse, 0
		loss.seq = nil
		for range k {
			loss.seq = append(loss.seq, keepSeq(2*E/k)...)
		}
		loss.seq = append(loss.seq, keepSeq(lse)...)
		loss.bwd = nil
		n := len(loss.seq)
		for i := range k {
			st := bwdStep{bytes: 2 * E / k}
			if i > 0 {
				st.free = []int{n + int(i) - 1} // the previous chunk's gradient is consumed by its output projection
			}
			loss.bwd = append(loss.bwd, st)
		}
		loss.Formula = fmt.Sprintf("2·b·s·V/t (the %d 16-bit logit chunks the compiled loss keeps) + fp32 log-sum-exp; backward temp 2·b·s·V/t/%d", k, k)
		loss.Notes = "compiled chunked-output cross entropy: each chunk's upcast and softmax fused, no fp32 logits"
		return 2 * E / k
	}
	if e.c.Framework == "torchtune" {
		// torchtune's decoder returns self.output(h).float() outside the compiled layers: the compiled loss gets,
		// and keeps, fp32 logits (the 16-bit ones die at the cast) and returns an fp32 gradient, which the cast's
		// backward turns into the 16-bit one.
		loss.MemoryBytes, loss.TempBytes = 4*E+lse, 2*E
		loss.seq = append(append(tempSeq(2*E), keepSeq(4*E)...), keepSeq(lse)...)
		loss.bwd = []bwdStep{{bytes: 4 * E}, {bytes: 2 * E, free: []int{len(loss.seq)}, carry: true}}
		loss.Formula = "4·b·s·V/t (the fp32 logits torchtune's decoder returns, kept by the compiled loss) + fp32 log-sum-exp; forward temp 2·b·s·V/t; backward temp 4·b·s·V/t then 2·b·s·V/t"
		loss.Notes = "compiled cross entropy on the decoder's fp32 logits"
		return 4 * E
	}
	loss.MemoryBytes, loss.TempBytes = 2*E+lse, 0
	life := lifeOutput // the model returns the logits (Hugging Face), the loop holds them until backward
	if e.c.Framework == "torchtitan" {
		life = lifeSaved // torchtitan deletes pred; the compiled loss's saved reference keeps it
	}
	loss.seq = append(tensorsOf(life, []int64{2 * E}), keepSeq(lse)...)
	loss.bwd = []bwdStep{{bytes: 2 * E, carry: true}}
	loss.Formula = "2·b·s·V/t (the 16-bit logits the compiled loss keeps) + fp32 log-sum-exp; backward temp 2·b·s·V/t (16-bit gradient)"
	loss.Notes = "compiled cross entropy: upcast, log-softmax and its gradient fused, no fp32 logits"
	return 2 * E
}

// lossParallel reports torchtitan's loss parallelism: with tensor parallelism the output layer's logits stay
// sharded over the vocabulary (ColwiseParallel with Shard(-1) outputs) and F.cross_entropy runs inside
// torch.distributed.tensor.parallel.loss_parallel(), DTensor's own log-softmax and NLL implementations.
func (e *est) lossParallel() bool {
	return !e.inference && e.c.Framework == "torchtitan" && e.t > 1 && e.c.Training.Loss == "standard"
}

// lossParallelOp rewrites the cross entropy for loss parallelism (torch/distributed/tensor/parallel/loss.py) on
// E local logits: _log_softmax upcasts the 16-bit pred (x, 4·E), subtracts the all-reduced max (shifted, 4·E),
// takes exp(shifted) (4·E, dropped after its sum) and returns shifted − logsumexp (4·E, saved); pred (2·E) dies
// after the loss (the train step deletes it). Backward, _nll_loss_and_log_softmax_backward builds
// grad_input = zeros_like(x) with −1 at the targets (4·E), then (grad_input + exp(x)) · grad_output: exp(x),
// the sum and the product are 4·E each, two of them alive at a time besides grad_input and the saved output;
// the fp32 product is cast back to the 16-bit gradient of pred (2·E).
func (e *est) lossParallelOp(loss *Operator, E int64) int64 {
	loss.MemoryBytes, loss.TempBytes = 4*E, 10*E
	rows := E / (e.x.V / e.t)
	// exp(shifted) dies in the sum it feeds (the per-row sum is its next allocation).
	loss.seq = append(tempSeq(2*E, 4*E, 4*E), briefSeq(4*E)...)
	loss.seq = append(loss.seq, tempSeq(4*rows)...)
	loss.seq = append(loss.seq, keepSeq(4*E)...)
	// Forward tensors 0..5 (pred, x, shifted, exp, sum, output); backward 6: grad_input, 7: exp(x), 8: the
	// sum, 9: the product, 10: the 16-bit gradient of pred.
	loss.bwd = []bwdStep{{bytes: 4 * E}, {bytes: 4 * E}, {bytes: 4 * E, free: []int{7}}, {bytes: 4 * E, free: []int{8, 6}},
		{bytes: 2 * E, free: []int{9, 5}, carry: true}}
	loss.Formula = "4·b·s·V/t (fp32 log-softmax output); forward temp 10·b·s·V/t (16-bit pred, fp32 copy, shifted, exp); backward temp 12·b·s·V/t"
	loss.Notes = "loss parallel: DTensor log-softmax and NLL on the vocabulary-sharded logits"
	return 12 * E
}

// dtensorTP reports tensor parallelism through PyTorch's DTensor plans (torchtitan's parallelize_module with
// ColwiseParallel / RowwiseParallel / SequenceParallel) rather than Megatron-LM's own layers.
func (e *est) dtensorTP() bool { return e.t > 1 && e.c.Framework == "torchtitan" }

// reduceScatterInput is a row-parallel linear's partial output before sequence parallelism reduce-scatters it:
// a full [tokens, h] tensor in the caching allocator, or none with async TP, whose fused
// matmul-reduce-scatter writes the partial sums chunk by chunk into the symmetric-memory workspace
// (torch.distributed._symmetric_memory, enabled by torchtitan's enable_symm_mem_for_group).
func (e *est) reduceScatterInput(bytes int64) int64 {
	if e.c.Parallel.AsyncTP {
		return 0
	}
	return bytes
}

// symmetricMemoryBytes is async TP's symmetric-memory workspace: allocated outside the caching allocator and
// kept for the run, it holds one layer input gathered over the TP group (the largest buffer the fused
// all-gather-matmul and matmul-reduce-scatter stage through it).
func (e *est) symmetricMemoryBytes() int64 {
	if !e.c.Parallel.AsyncTP || e.inference {
		return 0
	}
	return e.n * e.x.h * int64(e.ab)
}

// ringAttention adds context parallelism's ring-attention buffers (torch.distributed.tensor.experimental
// context_parallel, _templated_ring_attention with the all-gather rotater, as torchtitan runs it): forward
// all-gathers the K and V the kernel sees (kvLocal bytes per rank, so cp·kvLocal) and merges the per-chunk
// results in fp32 (an fp32 output accumulator, b·s/cp·a/t·d·4); backward gathers K and V again, accumulates the
// query gradient in fp32 and rotates fp32 key and value gradients around the ring before casting each gradient
// back to the activation dtype.
func (e *est) ringAttention(attn *Operator, kvLocal int64) {
	cp := int64(e.c.Parallel.CP)
	gathered := cp * kvLocal
	q32 := e.b * e.sl * e.aL * e.x.d * 4
	attn.TempBytes = gathered + q32
	attn.seq = append(attn.seq, tempSeq(gathered, q32)...)
	n := len(attn.seq)
	// Backward allocations: n: gathered K and V, n+1: fp32 dq, n+2: fp32 dK and dV, n+3: dq, n+4: dK and dV.
	attn.bwd = []bwdStep{{bytes: gathered}, {bytes: q32}, {bytes: 2 * kvLocal * 2}, {bytes: q32 / 2, free: []int{n + 1}},
		{bytes: kvLocal, free: []int{n + 2, n}}}
	attn.Extra["ring_backward_temp_bytes"] = gathered + q32 + 4*kvLocal
	attn.Formula += " + ring attention: K, V all-gathered over cp, fp32 output and gradient accumulators"
}
