package static

import "strconv"

// shardClass says how a parameter tensor is split across GPUs.
type shardClass int

const (
	replicated  shardClass = iota // norms, router, learned positions, row-parallel biases: full copy on every TP rank
	tpSharded                     // column/row-parallel weights, vocab-parallel embedding: 1/tp per rank
	kvSharded                     // K/V projections: g/tp heads per rank, at least one head
	expertShard                   // routed experts: 1/ep experts per rank, each 1/etp
)

// paramTensor is one parameter tensor of the full (unsharded) model.
type paramTensor struct {
	Name  string
	Shape []int64
	Class shardClass
}

func (p paramTensor) numel() int64 {
	n := int64(1)
	for _, d := range p.Shape {
		n *= d
	}
	return n
}

// matrix reports whether the tensor is 2-D (Adafactor factors those).
func (p paramTensor) matrix() bool { return len(p.Shape) == 2 }

// dims returns the model dimensions with defaults applied, so counting works on unresolved configs too.
type dims struct {
	L, h, a, g, d, f, V, E, k, fe, shared, maxPos   int64
	llama, rms, gated, bias, qkvBias, tied, learned bool
	// Gemma-2: sandwich norms (the attention and MLP outputs normalized before their residual adds) and logit
	// soft-capping (tanh(x/cap)·cap) of the attention scores and of the output logits.
	sandwich, attnSoftcap, logitSoftcap bool
	// Phi-3: q, k and v in one fused qkv_proj, gate and up in one gate_up_proj (LoRA adapts them whole).
	fusedProj bool
}

func modelDims(m ModelConfig, vocabPadded int64) dims {
	x := dims{
		L: int64(m.NumLayers), h: int64(m.HiddenSize), a: int64(m.NumAttentionHeads), g: int64(m.NumKVHeads),
		d: int64(m.HeadDim), f: int64(m.FFNHiddenSize), V: vocabPadded, E: int64(m.NumExperts), k: int64(m.MoETopK),
		fe: int64(m.MoEFFNHiddenSize), shared: int64(m.SharedExperts), maxPos: int64(m.MaxPositionEmbeddings),
		llama: m.Type != "gpt", bias: m.LinearBias, qkvBias: m.QKVBias || m.LinearBias, tied: m.TieWordEmbeddings,
	}
	x.rms = m.Norm == "rmsnorm" || (m.Norm == "" && x.llama)
	x.sandwich = m.Family == "gemma2"
	x.attnSoftcap, x.logitSoftcap = m.Family == "gemma2", m.Family == "gemma2"
	x.fusedProj = m.Family == "phi3"
	x.gated = m.Activation == "swiglu" || m.Activation == "geglu" || (m.Activation == "" && x.llama)
	x.learned = m.PositionEmbedding == "learned" || (m.PositionEmbedding == "" && !x.llama)
	if x.g == 0 {
		x.g = x.a
	}
	if x.d == 0 && x.a > 0 {
		x.d = x.h / x.a
	}
	if x.f == 0 {
		if x.gated {
			x.f = (8*x.h/3 + 255) / 256 * 256
		} else {
			x.f = 4 * x.h
		}
	}
	if x.fe == 0 {
		x.fe = x.f
	}
	if x.E > 0 && x.k == 0 {
		x.k = min(2, x.E)
	}
	return x
}

// layerParams lists one transformer layer's parameters.
func layerParams(x dims) []paramTensor {
	norm := func(name string) []paramTensor {
		ps := []paramTensor{{name + ".weight", []int64{x.h}, replicated}}
		if !x.rms {
			ps = append(ps, paramTensor{name + ".bias", []int64{x.h}, replicated})
		}
		return ps
	}
	var ps []paramTensor
	ps = append(ps, norm("input_norm")...)
	ps = append(ps,
		paramTensor{"attn.q_proj.weight", []int64{x.a * x.d, x.h}, tpSharded},
		paramTensor{"attn.k_proj.weight", []int64{x.g * x.d, x.h}, kvSharded},
		paramTensor{"attn.v_proj.weight", []int64{x.g * x.d, x.h}, kvSharded},
		paramTensor{"attn.o_proj.weight", []int64{x.h, x.a * x.d}, tpSharded})
	if x.qkvBias {
		ps = append(ps,
			paramTensor{"attn.q_proj.bias", []int64{x.a * x.d}, tpSharded},
			paramTensor{"attn.k_proj.bias", []int64{x.g * x.d}, kvSharded},
			paramTensor{"attn.v_proj.bias", []int64{x.g * x.d}, kvSharded})
	}
	if x.bias {
		ps = append(ps, paramTensor{"attn.o_proj.bias", []int64{x.h}, replicated})
	}
	if x.sandwich {
		ps = append(ps, norm("attn_out_norm")...)
	}
	ps = append(ps, norm("post_attn_norm")...)
	if x.sandwich {
		ps = append(ps, norm("mlp_out_norm")...)
	}
	mlp := func(prefix string, f int64, class shardClass, count int64) []paramTensor {
		var out []paramTensor
		for e := int64(0); e < count; e++ {
			p := prefix
			if count > 1 {
				p = prefix + "." + strconv.FormatInt(e, 10)
			}
			if x.gated {
				out = append(out,
					paramTensor{p + ".gate_proj.weight", []int64{f, x.h}, class},
					paramTensor{p + ".up_proj.weight", []int64{f, x.h}, class},
					paramTensor{p + ".down_proj.weight", []int64{x.h, f}, class})
			} else {
				out = append(out,
					paramTensor{p + ".fc1.weight", []int64{f, x.h}, class},
					paramTensor{p + ".fc2.weight", []int64{x.h, f}, class})
				if x.bias {
					bc := class
					if class == tpSharded {
						bc = replicated
					}
					out = append(out,
						paramTensor{p + ".fc1.bias", []int64{f}, class},
						paramTensor{p + ".fc2.bias", []int64{x.h}, bc})
				}
			}
		}
		return out
	}
	if x.E > 0 {
		ps = append(ps, paramTensor{"moe.router.weight", []int64{x.E, x.h}, replicated})
		ps = append(ps, mlp("moe.experts", x.fe, expertShard, x.E)...)
		if x.shared > 0 {
			ps = append(ps, mlp("moe.shared_expert", x.shared*x.fe, tpSharded, 1)...)
		}
	} else {
		ps = append(ps, mlp("mlp", x.f, tpSharded, 1)...)
	}
	return ps
}

// embeddingParams are the input-side parameters (first pipeline stage).
func embeddingParams(x dims) []paramTensor {
	ps := []paramTensor{{"embed_tokens.weight", []int64{x.V, x.h}, tpSharded}}
	if x.learned && x.maxPos > 0 {
		ps = append(ps, paramTensor{"embed_positions.weight", []int64{x.maxPos, x.h}, replicated})
	}
	return ps
}

// headParams are the output-side parameters (last pipeline stage). With tied embeddings and one stage the output
// layer reuses the embedding; with several stages Megatron keeps a synchronized copy on the last stage.
func headParams(x dims, pp int) []paramTensor {
	ps := []paramTensor{{"final_norm.weight", []int64{x.h}, replicated}}
	if !x.rms {
		ps = append(ps, paramTensor{"final_norm.bias", []int64{x.h}, replicated})
	}
	if !x.tied {
		ps = append(ps, paramTensor{"lm_head.weight", []int64{x.V, x.h}, tpSharded})
	} else if pp > 1 {
		ps = append(ps, paramTensor{"lm_head.weight (tied copy)", []int64{x.V, x.h}, tpSharded})
	}
	return ps
}

// ParamCount is the whole-model parameter count split by where the parameters live.
type ParamCount struct {
	Total     int64 `json:"total"`
	Embedding int64 `json:"embedding"` // token (+ position) embeddings
	Head      int64 `json:"head"`      // final norm + untied output layer
	PerLayer  int64 `json:"per_layer"`
	Layers    int64 `json:"layers"`
	// Active counts the parameters one token touches (top-k experts instead of all).
	Active int64 `json:"active"`
	// Matmul counts the parameters in matrix multiplies per token (excludes embedding lookups, norms): FLOPs ≈ 2·Matmul.
	Matmul int64 `json:"matmul"`
}

func countParams(m ModelConfig) ParamCount {
	x := modelDims(m, int64(m.VocabSize))
	return countParamsDims(x)
}

func countParamsDims(x dims) ParamCount {
	var c ParamCount
	for _, p := range embeddingParams(x) {
		c.Embedding += p.numel()
	}
	for _, p := range headParams(x, 1) {
		c.Head += p.numel()
	}
	var expert int64
	var layerMatmul int64
	for _, p := range layerParams(x) {
		c.PerLayer += p.numel()
		if p.Class == expertShard {
			expert += p.numel()
		}
		if p.matrix() && p.Class != expertShard {
			layerMatmul += p.numel()
		}
	}
	c.Layers = c.PerLayer * x.L
	c.Total = c.Embedding + c.Head + c.Layers
	c.Active = c.Total
	expertActive := int64(0)
	if x.E > 0 {
		expertActive = expert / x.E * x.k
		c.Active = c.Total - x.L*expert + x.L*expertActive
	}
	c.Matmul = x.L*(layerMatmul+expertActive) + x.V*x.h // output projection (tied or not) is a matmul
	return c
}
