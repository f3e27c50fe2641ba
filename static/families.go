package static

import (
	"fmt"
	"strings"
)

// familyNames are the Hugging Face model classes memscan follows op by op.
var familyNames = []string{"gpt2", "gpt-neox", "llama", "mistral", "qwen2", "mixtral", "gemma"}

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
//     scaled by sqrt(hidden).
func applyFamily(m *ModelConfig) error {
	if m.Family == "" {
		return nil
	}
	m.Family = strings.ToLower(m.Family)
	set := func(dst *string, v string) {
		if *dst == "" {
			*dst = v
		}
	}
	switch m.Family {
	case "gpt2":
		set(&m.Type, "gpt")
		set(&m.Norm, "layernorm")
		set(&m.Activation, "gelu_new")
		set(&m.PositionEmbedding, "learned")
		m.LinearBias = true
	case "gpt-neox":
		set(&m.Type, "gpt")
		set(&m.Norm, "layernorm")
		set(&m.Activation, "gelu")
		set(&m.PositionEmbedding, "rope")
		m.LinearBias = true
	case "llama", "mistral":
		set(&m.Type, "llama")
	case "qwen2":
		set(&m.Type, "llama")
		m.QKVBias = true
	case "mixtral":
		set(&m.Type, "llama")
		if m.NumExperts == 0 {
			m.NumExperts = 8
		}
		if m.MoETopK == 0 {
			m.MoETopK = 2
		}
	case "gemma":
		set(&m.Type, "llama")
		set(&m.Activation, "geglu")
		if m.HeadDim == 0 {
			m.HeadDim = 256
		}
	default:
		return fmt.Errorf("model.family: %q (must be one of %s)", m.Family, strings.Join(familyNames, ", "))
	}
	return nil
}
