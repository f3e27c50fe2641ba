package static

import (
	"strings"
	"testing"
)

// TestPreAmpereRefusals: a config a pre-Ampere GPU cannot run is an error naming the reason; what it can run
// (fp16, SDPA's memory-efficient kernel) estimates.
func TestPreAmpereRefusals(t *testing.T) {
	tests := []struct {
		name string
		mod  func(*Config)
		want string // "" = estimates
	}{
		{"bf16 on V100", func(c *Config) { c.Hardware.GPU, c.Training.Precision = "v100", "bf16" }, "training.precision: bf16: NVIDIA V100 SXM2 32GB has no bf16 (compute capability 7.0"},
		{"bf16-mixed on V100", func(c *Config) { c.Hardware.GPU, c.Training.Precision = "v100", "bf16-mixed" }, "has no bf16"},
		{"amp-bf16 on V100", func(c *Config) { c.Hardware.GPU, c.Training.Precision = "v100", "amp-bf16" }, "has no bf16"},
		{"flash on V100", func(c *Config) {
			c.Hardware.GPU, c.Training.Precision, c.Training.Attention = "v100", "fp16-mixed", "flash"
		},
			"training.attention: flash needs compute capability 8.0 (Ampere); NVIDIA V100 SXM2 32GB is 7.0"},
		{"transformer engine on V100", func(c *Config) {
			c.Hardware.GPU, c.Training.Precision, c.Training.TransformerEngine = "v100", "fp16-mixed", true
		}, "Transformer Engine needs compute capability 8.0"},
		{"inference bf16 on V100", func(c *Config) { c.Mode, c.Hardware.GPU, c.Inference.WeightDtype = "inference", "v100", "bf16" }, "use fp16"},
		{"fp16-mixed sdpa on V100", func(c *Config) { c.Hardware.GPU, c.Training.Precision = "v100", "fp16-mixed" }, ""},
		{"inference on V100 defaults to fp16", func(c *Config) { c.Mode, c.Hardware.GPU = "inference", "v100" }, ""},
		{"bf16 flash on A100", func(c *Config) { c.Hardware.GPU, c.Training.Attention = "a100", "flash" }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Model = ModelConfig{Preset: "llama3.2-1b"}
			c.Training.MicroBatchSize, c.Training.SeqLength = 1, 1024
			c.Hardware.NumGPUs = 1
			c.Training.Attention = "sdpa" // memscan's default, flash, is itself refused before sm 8.0
			tc.mod(&c)
			r, err := Estimate(c)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("error %v, want an estimate", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			case tc.want == "" && c.Mode == "inference" && r.Config.Inference.WeightDtype != "fp16":
				t.Errorf("inference weight dtype %s, want fp16 on a part without bf16", r.Config.Inference.WeightDtype)
			}
		})
	}
}

// TestResolvedPreset: `memscan gpus --presets` shows what an estimate uses; GPT-2 and NeoX presets leave KV heads
// and FFN width to the family defaults (KV heads = heads, FFN = 4·hidden).
func TestResolvedPreset(t *testing.T) {
	for _, tc := range []struct {
		name     string
		kv, ffn  int
		wantsSet bool
	}{
		{"gpt2", 12, 4 * 768, false},
		{"gpt-neox-20b", 64, 4 * 6144, false},
		{"llama3-8b", 8, 14336, true},
	} {
		raw, err := Preset(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		m, err := ResolvedPreset(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if m.NumKVHeads != tc.kv || m.FFNHiddenSize != tc.ffn || (raw.NumKVHeads != 0) != tc.wantsSet {
			t.Errorf("%s: kv %d ffn %d (raw kv %d), want %d %d", tc.name, m.NumKVHeads, m.FFNHiddenSize, raw.NumKVHeads, tc.kv, tc.ffn)
		}
	}
}
