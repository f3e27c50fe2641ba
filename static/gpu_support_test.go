package static

import (
	"strings"
	"testing"
)

// TestCatalogueFormats: each part lists only the formats its tensor cores have (vendor datasheets): V100 (sm 7.0)
// has FP16 tensor cores (125 TFLOP/s) and no BF16 or TF32, so fp32 matmuls run at its 15.7 TFLOP/s fp32 rate;
// MI250X (CDNA2) has no TF32 but fp32 matrix cores (95.7); TPUs have no TF32.
func TestCatalogueFormats(t *testing.T) {
	tests := []struct {
		key                    string
		bf16, fp16, tf32, fp32 float64 // catalogue fields
		peakFP32, peakBF16     float64 // what the roofline uses for fp32 and bf16 compute
	}{
		{"v100-32gb", 0, 125, 0, 15.7, 15.7, 125},
		{"v100-16gb", 0, 125, 0, 15.7, 15.7, 125},
		{"mi250x", 383, 383, 0, 47.9, 95.7, 383},
		{"tpu-v5e", 197, 197, 0, 24.6, 24.6, 197},
		{"a100-80gb-sxm", 312, 312, 156, 19.5, 156, 312},
	}
	for _, tc := range tests {
		g, err := LookupGPU(tc.key)
		if err != nil {
			t.Fatal(err)
		}
		if g.BF16TFLOPS != tc.bf16 || g.FP16TFLOPS != tc.fp16 || g.TF32TFLOPS != tc.tf32 || g.FP32TFLOPS != tc.fp32 {
			t.Errorf("%s: bf16 %g fp16 %g tf32 %g fp32 %g, want %g %g %g %g", tc.key, g.BF16TFLOPS, g.FP16TFLOPS, g.TF32TFLOPS, g.FP32TFLOPS,
				tc.bf16, tc.fp16, tc.tf32, tc.fp32)
		}
		if p := g.PeakTFLOPS("fp32"); p != tc.peakFP32 {
			t.Errorf("%s: fp32 matmul peak %g, want %g", tc.key, p, tc.peakFP32)
		}
		if p := g.PeakTFLOPS("bf16"); p != tc.peakBF16 {
			t.Errorf("%s: bf16 peak %g, want %g", tc.key, p, tc.peakBF16)
		}
	}
	for _, g := range GPUs() {
		if g.ComputeCapability > 0 && g.ComputeCapability < 8 && (g.BF16TFLOPS > 0 || g.TF32TFLOPS > 0) {
			t.Errorf("%s (sm %.1f) lists bf16 %g / tf32 %g: both arrived with sm 8.0", g.Key, g.ComputeCapability, g.BF16TFLOPS, g.TF32TFLOPS)
		}
	}
}

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
