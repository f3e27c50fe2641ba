package categorize

import (
	"slices"
	"testing"
)

// TestDecideRuleOverlaps covers frames that rules of two categories both match, so that only the priorities in
// defaults.yaml decide between them. The wanted category is what the memory is in the framework's own code, not
// what the rules happen to say:
//   - apply_rotary_pos_emb (Hugging Face's Llama and Qwen3, Megatron's rope_utils) returns the rotated query and
//     key that go straight into attention: Attention, although "pos_emb" also names an embedding. At the peak of
//     the shared H200 Llama run these are 640 MiB in 32 blocks.
//   - torch.nn.Linear.__init__ creates the layer's weight: Parameters/Weights, although the file is linear.py.
//   - a MoE module's init_weights initialises expert weights: Parameters/Weights, although the file is moe.py.
//   - Megatron's distributed optimizer builds its fp32 main parameter groups: Optimizer State, although the
//     function name contains "_build_model".
func TestDecideRuleOverlaps(t *testing.T) {
	const (
		hf      = sp + "transformers/models/"
		modAttn = hf + "llama/modeling_llama.py:282:forward"
	)
	tests := []struct {
		name     string
		frames   []string
		category string
		rule     string
		losers   []string // rules of another category that match the deciding frame too
	}{
		{
			name:     "HF Llama rotary embedding",
			frames:   []string{hf + "llama/modeling_llama.py:150:apply_rotary_pos_emb", modAttn, modCall, modWrap, user + "train.py:40:main"},
			category: Attention, rule: "attention-functions", losers: []string{"embedding"},
		},
		{
			name:     "HF Qwen3 rotary embedding",
			frames:   []string{hf + "qwen3/modeling_qwen3.py:113:apply_rotary_pos_emb", hf + "qwen3/modeling_qwen3.py:241:forward", modCall, user + "train.py:40:main"},
			category: Attention, rule: "attention-functions", losers: []string{"embedding"},
		},
		{
			name:     "Megatron rotary embedding",
			frames:   []string{sp + "megatron/core/models/common/embeddings/rope_utils.py:212:apply_rotary_pos_emb", sp + "megatron/core/transformer/attention.py:640:forward", modCall},
			category: Attention, rule: "attention-functions", losers: []string{"embedding"},
		},
		{
			name:     "torch Linear constructor",
			frames:   []string{sp + "torch/nn/modules/linear.py:106:__init__", user + "model.py:42:__init__", user + "train.py:9:main"},
			category: Parameters, rule: "module-constructors", losers: []string{"linear-files"},
		},
		{
			name:     "MoE expert weight initialisation",
			frames:   []string{sp + "torchtitan/models/moe/moe.py:410:init_weights", sp + "torchtitan/models/llama4/model.py:520:init_weights", user + "train.py:9:main"},
			category: Parameters, rule: "weight-init-functions", losers: []string{"moe-files"},
		},
		{
			name:     "Megatron distributed optimizer main parameters",
			frames:   []string{sp + "megatron/core/optimizer/distrib_optimizer.py:330:_build_model_and_main_param_groups", sp + "megatron/core/optimizer/distrib_optimizer.py:520:__init__", user + "pretrain_gpt.py:20:main"},
			category: OptimizerState, rule: "optimizer-libraries", losers: []string{"weight-init-functions"},
		},
	}
	r := Default()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			frames := fr(tc.frames...)
			d := r.Decide(frames)
			if d.Category != tc.category || d.Rule != tc.rule || d.FrameIndex != 0 {
				t.Errorf("Decide = %s by %q at frame %d (%s), want %s by %q at frame 0", d.Category, d.Rule, d.FrameIndex, d.Frame, tc.category, tc.rule)
			}
			// The case must stay an overlap: the losing rules match the deciding frame as well.
			v := viewOf(&frames[0])
			for _, name := range tc.losers {
				i := slices.IndexFunc(r.rules, func(ru rule) bool { return ru.name == name })
				if i < 0 || !r.rules[i].match(&v) || r.rules[i].category == tc.category {
					t.Errorf("rule %q does not match %s with another category: the case no longer tests a priority", name, tc.frames[0])
				}
			}
		})
	}
}
