package static

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// applyFamily fills the structural keys a Hugging Face family fixes (transformers' modeling_<family>.py),
// leaving keys the config already set:
//   - gpt2: learned positions, LayerNorm, Conv1D with biases, activation_function gelu_new (the tanh-approximation
//     written as seven eager elementwise ops, which keep their intermediates), dropout 0.1 everywhere;
//   - gpt-neox: rotary positions, LayerNorm, fused query_key_value with biases, exact GeLU, untied embed_out;
//   - llama, mistral: RMSNorm (upcast to fp32 in eager), SwiGLU, rotary positions, no biases;
//   - qwen2: as llama with biases on q, k and v;
//   - mixtral: as mistral with a top-2 router over 8 SwiGLU experts (HF dispatch: one_hot mask, per-expert
//     index gather and index_add_);
//   - gemma: GeGLU (gelu_pytorch_tanh), RMSNorm computing (1 + weight) in fp32, head_dim 256, tied embeddings
//     scaled by sqrt(hidden);
//   - gemma2 (modeling_gemma2.py): gemma's layer with sandwich norms (post_attention_layernorm on the attention
//     output and post_feedforward_layernorm on the MLP output before their residual adds, four per layer),
//     attention scores soft-capped (tanh(s/50)·50) and output logits soft-capped (tanh(x/30)·30), alternating
//     sliding-window layers (their eager mask is still s × s);
//   - phi3 (modeling_phi3.py): llama's layer with q, k, v fused in qkv_proj and gate, up in gate_up_proj (split
//     by views of the one output), untied embeddings.
func applyFamily(m *ModelConfig) error {
	if m.Family == "" {
		return nil
	}
	m.Family = strings.ToLower(m.Family)
	f, ok := families[m.Family]
	if !ok {
		return fmt.Errorf("model.family: %q (must be one of %s)", m.Family, strings.Join(slices.Sorted(maps.Keys(families)), ", "))
	}
	for _, kv := range [][2]*string{{&m.Type, &f.typ}, {&m.Norm, &f.norm}, {&m.Activation, &f.act}, {&m.PositionEmbedding, &f.pos}} {
		if *kv[0] == "" {
			*kv[0] = *kv[1]
		}
	}
	m.LinearBias = m.LinearBias || f.bias
	m.QKVBias = m.QKVBias || f.qkvBias
	if m.NumExperts == 0 {
		m.NumExperts = f.experts
	}
	if m.MoETopK == 0 {
		m.MoETopK = f.topK
	}
	if m.HeadDim == 0 {
		m.HeadDim = f.headDim
	}
	return nil
}

// familyDefaults are the structural keys a family fixes ("" or 0: the type's default).
type familyDefaults struct {
	typ, norm, act, pos    string
	bias, qkvBias          bool
	experts, topK, headDim int
}

var families = map[string]familyDefaults{
	"gpt2":     {typ: "gpt", norm: "layernorm", act: "gelu_new", pos: "learned", bias: true},
	"gpt-neox": {typ: "gpt", norm: "layernorm", act: "gelu", pos: "rope", bias: true},
	"llama":    {typ: "llama"},
	"mistral":  {typ: "llama"},
	"qwen2":    {typ: "llama", qkvBias: true},
	"mixtral":  {typ: "llama", experts: 8, topK: 2},
	"gemma":    {typ: "llama", act: "geglu", headDim: 256},
	"gemma2":   {typ: "llama", act: "geglu", headDim: 256},
	"phi3":     {typ: "llama"},
}
