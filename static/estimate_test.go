package static

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/memscan/memscan/gpu"
)

// estimate resolves DefaultConfig with mod applied and fails the test on error.
func estimate(t *testing.T, mod func(*Config)) *Report {
	t.Helper()
	c := DefaultConfig()
	mod(&c)
	r, err := Estimate(c)
	if err != nil {
		t.Fatalf("Estimate: %v", err)
	}
	return r
}

func near(got, want, relTol float64) bool {
	if want == 0 {
		return math.Abs(got) <= relTol
	}
	return math.Abs(got-want)/math.Abs(want) <= relTol
}

// Parameter counts published with the checkpoints (config.json dims, embeddings counted once when tied).
func TestPresetParamCounts(t *testing.T) {
	for _, tc := range []struct {
		preset string
		want   int64
	}{
		// LLaMA-2 7B: 32·(4·4096² + 3·4096·11008 + 2·4096) + 2·32000·4096 + 4096.
		{"llama2-7b", 6_738_415_616},
		{"llama2-13b", 13_015_864_320},
		{"llama2-70b", 68_976_648_192},
		{"llama3-8b", 8_030_261_248},
		{"llama3.2-1b", 1_235_814_400},
		{"llama3.2-3b", 3_212_749_824},
		{"mistral-7b", 7_241_732_096},
		{"mixtral-8x7b", 46_702_792_704},
		{"qwen2.5-7b", 7_615_616_512},
		{"gpt2", 124_439_808},
		{"pythia-1.4b", 1_414_647_808}, // GPT-NeoX: untied embed_in/embed_out, biases everywhere, rotary positions
		{"gemma-2b", 2_506_172_416},
		{"qwen2.5-0.5b", 494_032_768}, // as transformers counts it on the H200 run (runs.json n_params)
	} {
		t.Run(tc.preset, func(t *testing.T) {
			r := estimate(t, func(c *Config) { c.Model = ModelConfig{Preset: tc.preset}; c.Training.SeqLength = 1024 })
			if r.Summary.ParamCount != tc.want {
				t.Errorf("param_count = %d, want %d", r.Summary.ParamCount, tc.want)
			}
		})
	}
	// Mixtral activates 2 of 8 experts: 46.7B total, 12.9B active.
	r := estimate(t, func(c *Config) { c.Model = ModelConfig{Preset: "mixtral-8x7b"} })
	if want := int64(12_879_925_248); r.Params.Active != want {
		t.Errorf("mixtral active = %d, want %d", r.Params.Active, want)
	}
}

// Model-state bytes per parameter on one GPU (no sharding): weights + grads + optimizer states.
func TestBytesPerParam(t *testing.T) {
	const P = 6_738_415_616 // LLaMA-2 7B
	for _, tc := range []struct {
		name      string
		precision string
		grad      string
		opt       string
		want      float64
	}{
		{"fp32 adamw: 4 + 4 + 8", "fp32", "", "adamw", 16},
		{"mixed, fp32 main grads (Megatron): 2 + 4 + (4 master + 8)", "bf16-mixed", "", "adamw", 18},
		{"mixed, fp16 grads (ZeRO paper): 2 + 2 + 12", "fp16-mixed", "fp16", "adamw", 16},
		{"pure bf16: 2 + 2 + bf16 m,v 4", "bf16", "", "adamw", 8},
		{"fp32 sgd momentum: 4 + 4 + 4", "fp32", "", "sgd", 12},
		{"fp32 8-bit adam: 4 + 4 + 2 + absmax 8/2048", "fp32", "", "adamw-8bit", 10 + 8.0/2048},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := estimate(t, func(c *Config) {
				c.Model = ModelConfig{Preset: "llama2-7b"}
				c.Training.Precision, c.Training.GradPrecision, c.Training.Optimizer = tc.precision, tc.grad, tc.opt
			})
			s := r.Summary
			got := float64(s.WeightMemoryBytes + s.GradMemoryBytes + s.OptimizerMemoryBytes)
			if !near(got, tc.want*P, 1e-9) {
				t.Errorf("model states = %.0f B (%.4f B/param), want %.4f B/param", got, got/P, tc.want)
			}
			if !near(s.WholeModel.BytesPerParam, tc.want, 1e-9) {
				t.Errorf("whole-model bytes/param = %.4f, want %.4f", s.WholeModel.BytesPerParam, tc.want)
			}
		})
	}
}

// ZeRO (Rajbhandari et al. 2020, §5): with K = 12 and fp16 params and grads, model states per GPU are
// 16Ψ (DDP), 4Ψ + 12Ψ/N (P_os), 2Ψ + 14Ψ/N (P_os+g), 16Ψ/N (P_os+g+p). Megatron's distributed optimizer with
// fp32 main grads: 6Ψ + 12Ψ/N. FSDP2 (fp32 sharded params are the master, fp32 grads): 16Ψ/N.
func TestZeroStages(t *testing.T) {
	const P = 6_738_415_616.0
	const N = 64.0
	for _, tc := range []struct {
		name    string
		zero    int
		distOpt bool
		grad    string
		want    float64
	}{
		{"zero0", 0, false, "fp16", 16 * P},
		{"zero1", 1, false, "fp16", 4*P + 12*P/N},
		{"zero2", 2, false, "fp16", 2*P + 14*P/N},
		{"zero3 (DeepSpeed)", 3, false, "fp16", 16 * P / N},
		{"megatron distributed optimizer", 0, true, "fp32", 6*P + 12*P/N},
		{"fsdp2 full shard", 3, false, "fp32", 16 * P / N},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := estimate(t, func(c *Config) {
				c.Model = ModelConfig{Preset: "llama2-7b"}
				c.Training.Precision, c.Training.GradPrecision = "fp16-mixed", tc.grad
				c.Parallel.ZeroStage, c.Parallel.DistributedOptimizer = tc.zero, tc.distOpt
				c.Hardware.NumGPUs = int(N)
			})
			s := r.Summary
			got := float64(s.WeightMemoryBytes + s.GradMemoryBytes + s.OptimizerMemoryBytes)
			if !near(got, tc.want, 1e-9) {
				t.Errorf("model states per GPU = %.0f, want %.0f (%.3f vs %.3f B/param)", got, tc.want, got/P, tc.want/P)
			}
		})
	}
}

// gptBlock is the Korthikanti et al. setting: GPT block, MHA, GeLU with f = 4h, LayerNorm, attention and hidden
// dropout, standard attention, 2-byte activations.
func gptBlock(c *Config) {
	c.Model = ModelConfig{Type: "gpt", NumLayers: 4, HiddenSize: 1024, NumAttentionHeads: 16, VocabSize: 1024, MaxPositionEmbeddings: 512}
	c.Training.SeqLength, c.Training.MicroBatchSize = 512, 2
	c.Training.Attention, c.Training.AttentionDropout, c.Training.HiddenDropout = "standard", 0.1, 0.1
}

// layerBytes is the activation bytes one layer saves per micro-batch, read from the operator records.
func layerBytes(r *Report) float64 {
	var sum float64
	for _, op := range r.Operators {
		if op.Phase == "forward" && op.Layer >= 0 {
			sum += float64(op.MemoryBytes)
		}
	}
	return sum / float64(r.Config.Model.NumLayers/r.Config.Parallel.PP)
}

// Korthikanti et al. 2022, Table 2, per layer: sbh(34 + 5as/h) without parallelism; sbh(10 + 24/t + 5as/(ht))
// with TP; sbh(34/t + 5as/(ht)) with TP+SP; the 5as/h term disappears with selective recomputation; full
// recomputation keeps 2sbh (/t with SP). The paper ignores LayerNorm statistics; we also keep fp32 mean and rstd
// for the two LayerNorms: 16·s·b bytes (/t with SP).
func TestKorthikantiActivations(t *testing.T) {
	s, b, h, a := 512.0, 2.0, 1024.0, 16.0
	sbh := s * b * h
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want float64
	}{
		{"no parallelism", func(c *Config) {}, sbh*(34+5*a*s/h) + 16*s*b},
		{"tp2", func(c *Config) { c.Parallel.TP, c.Hardware.NumGPUs = 2, 2 }, sbh*(10+24.0/2+5*a*s/(h*2)) + 16*s*b},
		{"tp2+sp", func(c *Config) { c.Parallel.TP, c.Hardware.NumGPUs, c.Parallel.SequenceParallel = 2, 2, true }, sbh*(34.0/2+5*a*s/(h*2)) + 16*s*b/2},
		{"tp2 selective", func(c *Config) { c.Parallel.TP, c.Hardware.NumGPUs, c.Training.Recompute = 2, 2, "selective" }, sbh*(10+24.0/2) + 16*s*b},
		{"tp2+sp selective", func(c *Config) {
			c.Parallel.TP, c.Hardware.NumGPUs, c.Parallel.SequenceParallel, c.Training.Recompute = 2, 2, true, "selective"
		}, sbh*34/2 + 16*s*b/2},
		{"full recompute", func(c *Config) { c.Training.Recompute = "full" }, 2 * sbh},
		{"full recompute tp2+sp", func(c *Config) {
			c.Parallel.TP, c.Hardware.NumGPUs, c.Parallel.SequenceParallel, c.Training.Recompute = 2, 2, true, "full"
		}, 2 * sbh / 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := estimate(t, func(c *Config) { gptBlock(c); tc.mod(c) })
			if got := layerBytes(r); got != tc.want {
				t.Errorf("per-layer activations = %.0f B, want %.0f B (%.3f vs %.3f ·sbh)", got, tc.want, got/sbh, tc.want/sbh)
			}
		})
	}
}

// LLaMA adaptation (static_formulas.md §1.3): per layer sbh(12 + 4g/a) + sbf·6 (fused SwiGLU) + 4sba (fp32
// log-sum-exp) + 8sb (two fp32 rstd). HF eager kernels keep silu(gate) too (sbf·8) and RMSNorm's fp32 input plus
// its bf16 normalized output instead of the bf16 input (+4sbh per norm).
func TestLlamaActivations(t *testing.T) {
	s, b, h, a, g, f := 4096.0, 2.0, 4096.0, 32.0, 8.0, 14336.0 // Llama-3-8B
	for _, tc := range []struct {
		kernels string
		want    float64
	}{
		{"fused", s*b*h*(12+4*g/a) + 6*s*b*f + 4*s*b*a + 8*s*b},
		{"eager", s*b*h*(20+4*g/a) + 8*s*b*f + 4*s*b*a + 8*s*b},
	} {
		r := estimate(t, func(c *Config) {
			c.Model.Preset = "llama3-8b"
			c.Training.SeqLength, c.Training.MicroBatchSize, c.Training.Kernels = 4096, 2, tc.kernels
		})
		if got := layerBytes(r); got != tc.want {
			t.Errorf("%s: per-layer activations %.0f, want %.0f (%.2f vs %.2f ·sbh)", tc.kernels, got, tc.want, got/(s*b*h), tc.want/(s*b*h))
		}
	}
}

// The operator records add up to the summary: forward records are the saved activations, persistent records the
// model states.
func TestOperatorsAddUp(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"llama3-8b fsdp", func(c *Config) { c.Model.Preset = "llama3-8b"; c.Hardware.NumGPUs = 8; c.Parallel.ZeroStage = 3 }},
		{"unrolled pp4 interleaved", func(c *Config) {
			c.Model.Preset = "llama2-7b"
			c.Hardware.NumGPUs, c.Parallel.PP, c.Parallel.VirtualStages, c.Parallel.NumMicrobatches = 8, 4, 2, 8
			c.Output.Unroll = true
		}},
		{"full recompute partial layers", func(c *Config) {
			c.Model.Preset = "llama2-13b"
			c.Training.Recompute, c.Training.RecomputeLayers = "full", 10
		}},
		{"moe ep", func(c *Config) {
			c.Model.Preset = "mixtral-8x7b"
			c.Hardware.NumGPUs, c.Parallel.TP, c.Parallel.EP, c.Parallel.SequenceParallel = 16, 2, 4, true
			c.Training.HiddenDropout = 0.1
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := estimate(t, tc.mod)
			var act, w, g, o int64
			for _, op := range r.Operators {
				switch {
				case op.Phase == "forward":
					act += op.MemoryBytes
				case op.Category == "weights":
					w += op.MemoryBytes
				case op.Category == "grads":
					g += op.MemoryBytes
				case op.Category == "optimizer" && op.Phase == "persistent":
					o += op.MemoryBytes
				}
			}
			s := r.Summary
			if d := act - s.ActivationMemoryBytes; d < -16 || d > 16 {
				t.Errorf("forward records %d != activation_memory_bytes %d", act, s.ActivationMemoryBytes)
			}
			for _, p := range []struct {
				name      string
				got, want int64
			}{{"weights", w, s.WeightMemoryBytes}, {"grads", g, s.GradMemoryBytes}, {"optimizer", o, s.OptimizerMemoryBytes}} {
				if d := p.got - p.want; d < -2 || d > 2 {
					t.Errorf("%s records %d != summary %d", p.name, p.got, p.want)
				}
			}
			if s.PeakMemoryBytes < s.PersistentMemoryBytes-s.GradMemoryBytes || s.PeakReservedBytes < s.PeakMemoryBytes || s.DeviceTotalBytes < s.PeakReservedBytes {
				t.Errorf("ordering violated: peak %d, persistent %d, reserved %d, device %d", s.PeakMemoryBytes, s.PersistentMemoryBytes, s.PeakReservedBytes, s.DeviceTotalBytes)
			}
		})
	}
}

// 1F1B: stage i holds min(p − i, m) micro-batches of its L/p layers; interleaved with v chunks: stage 0 holds
// L·(1 + (p−1)/(p·v)) layer-micro-batches (Korthikanti §4.2.3; Megatron warm-up count (p−i−1)·2 + (v−1)·p + 1).
func TestPipelineInflight(t *testing.T) {
	r := estimate(t, func(c *Config) {
		c.Model.Preset = "llama2-7b"
		c.Hardware.NumGPUs, c.Parallel.PP, c.Parallel.NumMicrobatches = 4, 4, 8
	})
	for i, st := range r.Stages {
		if want := int64((4 - i) * 8); st.InflightLayerMBs != want {
			t.Errorf("1f1b stage %d: %d layer-microbatches, want %d", i, st.InflightLayerMBs, want)
		}
	}
	if r.Stages[0].Activations <= r.Stages[3].Activations {
		t.Errorf("stage 0 should hold the most activations")
	}
	r = estimate(t, func(c *Config) {
		c.Model.Preset = "llama2-7b"
		c.Hardware.NumGPUs, c.Parallel.PP, c.Parallel.VirtualStages, c.Parallel.NumMicrobatches = 4, 4, 2, 8
	})
	if want := int64(32 * (1 + 3.0/8)); r.Stages[0].InflightLayerMBs != want {
		t.Errorf("interleaved stage 0: %d, want L·(1+(p−1)/(pv)) = %d", r.Stages[0].InflightLayerMBs, want)
	}
	// Last stage: (v−1)·p + 1 = 5 chunks of 4 layers.
	if want := int64(20); r.Stages[3].InflightLayerMBs != want {
		t.Errorf("interleaved stage 3: %d, want %d", r.Stages[3].InflightLayerMBs, want)
	}
}

// KV cache bytes per token: 2 · L · g · d · bytes (static_formulas.md §1.10).
func TestKVCache(t *testing.T) {
	for _, tc := range []struct {
		preset string
		tp     int
		want   int64
	}{
		{"llama3-8b", 1, 131_072},  // 2·32·8·128·2 = 128 KiB
		{"llama2-7b", 1, 524_288},  // MHA: 2·32·32·128·2 = 512 KiB
		{"llama2-70b", 1, 327_680}, // 2·80·8·128·2 = 320 KiB
		{"llama2-70b", 8, 40_960},  // one KV head per GPU
		{"llama3-8b", 16, 16_384},  // t > g: each GPU still keeps one head (2·32·1·128·2)
	} {
		r := estimate(t, func(c *Config) {
			c.Mode = "inference"
			c.Model.Preset = tc.preset
			c.Parallel.TP, c.Hardware.NumGPUs = tc.tp, tc.tp
			c.Inference.PromptLength = 8192
		})
		if r.Inference.KVBytesPerToken != tc.want {
			t.Errorf("%s tp%d: %d B/token, want %d", tc.preset, tc.tp, r.Inference.KVBytesPerToken, tc.want)
		}
		if got, want := r.Summary.KVCacheMemoryBytes, tc.want*8192; got != want {
			t.Errorf("%s tp%d: KV cache %d, want %d", tc.preset, tc.tp, got, want)
		}
	}
}

// MemWall's example: Llama-7B, batch 4, sequence 2048, inference in bf16. Weights 2·6,738,415,616 B = 12.55 GiB;
// KV cache 2·32·32·128·2048·4·2 B = 4 GiB exactly; activations: the largest prefill working set, the SwiGLU of
// 8192 tokens (gate and up 4·8192·11008 B in, 2·8192·11008 B out) + the residual stream 2·8192·4096 B.
func TestMemWallLlama7BInference(t *testing.T) {
	c, err := LoadConfig("../testdata/static/llama2-7b-inference.json")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Estimate(*c)
	if err != nil {
		t.Fatal(err)
	}
	in := r.Inference
	if want := int64(2 * 6_738_415_616); in.Weights != want {
		t.Errorf("weights %d, want %d", in.Weights, want)
	}
	if want := int64(4 << 30); in.KVCache != want {
		t.Errorf("KV cache %d, want %d", in.KVCache, want)
	}
	n := int64(4 * 2048)
	if want := 6*n*11008 + 2*n*4096; in.Activations != want {
		t.Errorf("activations %d, want %d (MLP working set + residual)", in.Activations, want)
	}
	if !r.Fit.Fits {
		t.Errorf("7B inference at batch 4 must fit an 80 GB A100: %s", r.Fit.Verdict)
	}
	// Decode is memory-bound: reading 13.5 GB of weights for 4 tokens is far below the ridge point.
	for _, p := range r.Roofline.Points {
		if strings.HasPrefix(p.Name, "decode.") && strings.Contains(p.Name, "proj") && p.Bound != "memory" {
			t.Errorf("%s at batch 4 should be memory-bound (intensity %.1f, ridge %.0f)", p.Name, p.Intensity, r.Roofline.RidgePoint)
		}
	}
}

// memprof's 13B at 4K: standard attention keeps the a·s²·b probability matrices (bf16) that flash attention never
// stores; flash instead keeps the fp32 log-sum-exp (4·a·s·b). Per layer the difference is 2·a·s²·b − 4·a·s·b.
func TestMemprof13BFlashVsStandard(t *testing.T) {
	mk := func(attn string) *Report {
		return estimate(t, func(c *Config) {
			c.Model = ModelConfig{SizeBillions: 13}
			c.Training.SeqLength, c.Training.MicroBatchSize, c.Training.Attention = 4096, 1, attn
			c.Hardware.NumGPUs, c.Parallel.ZeroStage = 4, 3
			// FSDP's reserved pool comes from the allocator replay; with fixed-size segments its per-layer
			// gathers and reduce-scatter buffers leave ≈16 GiB of cached fragments here, so the fit is judged with
			// expandable segments, as torchtitan launches FSDP.
			c.Allocator.ExpandableSegments = true
		})
	}
	std, flash := mk("standard"), mk("flash")
	if std.Config.Model.NumLayers != 40 || std.Config.Model.HiddenSize != 5120 {
		t.Fatalf("--model-size 13 should pick the 13B shape (L40 h5120), got L%d h%d", std.Config.Model.NumLayers, std.Config.Model.HiddenSize)
	}
	a, s, L := 40.0, 4096.0, 40.0
	want := L * (2*a*s*s - 4*a*s)
	if got := float64(std.Summary.ActivationMemoryBytes - flash.Summary.ActivationMemoryBytes); got != want {
		t.Errorf("standard − flash activations = %.0f, want %.0f", got, want)
	}
	// Standard attention stores 40 layers × 1.25 GiB of probabilities: it cannot fit, flash does.
	if std.Fit.Fits || !flash.Fit.Fits {
		t.Errorf("fit: standard %v (%s), flash %v (%s)", std.Fit.Fits, std.Fit.Verdict, flash.Fit.Fits, flash.Fit.Verdict)
	}
	found := false
	for _, rc := range std.Recommendations {
		if strings.Contains(rc.Title, "flash") {
			found = true
			if rc.Severity != "critical" || rc.NewPeakBytes != flash.Summary.DeviceTotalBytes {
				t.Errorf("flash recommendation %+v, want critical with new total %d", rc, flash.Summary.DeviceTotalBytes)
			}
		}
	}
	if !found {
		t.Errorf("no flash-attention recommendation for standard attention at 4K: %+v", std.Recommendations)
	}
	// FSDP over 4 GPUs with fp32 grads: 16 B/param / 4.
	ms := float64(flash.Summary.WeightMemoryBytes + flash.Summary.GradMemoryBytes + flash.Summary.OptimizerMemoryBytes)
	if !near(ms, 16*float64(flash.Params.Total)/4, 1e-9) {
		t.Errorf("FSDP model states %.0f, want 4·P", ms)
	}
}

// memprof's "70B on 8×H100 with TP=8": every TP-sharded matrix splits 8 ways (g = 8 KV heads → one per GPU),
// norms stay replicated; with mixed-precision Adam (18 B/param) that is ≈ 145 GiB per GPU, so it does not fit,
// while bf16 inference (2 B/param) does.
func TestMemprof70BTensorParallel(t *testing.T) {
	train := estimate(t, func(c *Config) {
		c.Model.Preset = "llama2-70b"
		c.Parallel.TP, c.Hardware.NumGPUs = 8, 8
		c.Training.SeqLength = 4096
	})
	h, L, f, V := int64(8192), int64(80), int64(28672), int64(32000)
	sharded := L*(2*h*h+2*h*1024+3*h*f) + 2*V*h
	replicated := L*2*h + h
	perGPU := sharded/8 + replicated
	if train.Summary.ParamCountPerGPU != perGPU {
		t.Errorf("params per GPU %d, want %d", train.Summary.ParamCountPerGPU, perGPU)
	}
	if want := float64(perGPU) * 18; !near(float64(train.Summary.WeightMemoryBytes+train.Summary.GradMemoryBytes+train.Summary.OptimizerMemoryBytes), want, 1e-9) {
		t.Errorf("model states per GPU, want 18 B × %d", perGPU)
	}
	if train.Fit.Fits {
		t.Errorf("70B training with TP8 alone cannot fit 80 GB: %s", train.Fit.Verdict)
	}
	infer := estimate(t, func(c *Config) {
		c.Mode = "inference"
		c.Model.Preset = "llama2-70b"
		c.Parallel.TP, c.Hardware.NumGPUs = 8, 8
	})
	if infer.Summary.WeightMemoryBytes != 2*perGPU || !infer.Fit.Fits {
		t.Errorf("70B inference TP8: weights %d (want %d), fits %v", infer.Summary.WeightMemoryBytes, 2*perGPU, infer.Fit.Fits)
	}
}

// The max batch is the largest that fits: it fits, one more does not.
func TestMaxBatchAndSeq(t *testing.T) {
	c := DefaultConfig()
	c.Model.Preset = "llama3-8b"
	c.Hardware.NumGPUs, c.Parallel.ZeroStage = 8, 3
	c.Training.SeqLength = 4096
	res, err := MaxBatchSize(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if res.Max < 1 {
		t.Fatalf("max batch %d", res.Max)
	}
	c.Training.MicroBatchSize = res.Max
	if ok, _ := fitsWith(c); !ok {
		t.Errorf("max batch %d does not fit", res.Max)
	}
	c.Training.MicroBatchSize = res.Max + 1
	if ok, _ := fitsWith(c); ok {
		t.Errorf("max batch %d + 1 still fits", res.Max)
	}
	// The longest sequence is exact to the token, or under context parallelism to a multiple of 2·cp (the
	// load-balanced split): it fits and one more step does not (the search no longer stops at a multiple of
	// 256).
	c.Training.MicroBatchSize = 1
	for _, tc := range []struct{ cp, unit int }{{1, 1}, {4, 8}} {
		c.Parallel.CP, c.Training.SeqLength = tc.cp, 4096
		sq, err := MaxSeqLength(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		c.Training.SeqLength = sq.Max
		if ok, _ := fitsWith(c); !ok || sq.Max%tc.unit != 0 {
			t.Errorf("cp %d: max seq %d does not fit or is not a multiple of %d", tc.cp, sq.Max, tc.unit)
		}
		c.Training.SeqLength = sq.Max + tc.unit
		if ok, _ := fitsWith(c); ok {
			t.Errorf("cp %d: max seq %d + %d still fits", tc.cp, sq.Max, tc.unit)
		}
	}
}

// Recomputation and sharding must move memory in the right direction and the comparison table must cover them.
func TestStrategiesAndMonotonicity(t *testing.T) {
	base := func(c *Config) {
		c.Model.Preset = "llama2-13b"
		c.Hardware.NumGPUs = 8
		c.Training.SeqLength = 4096
		c.Training.GlobalBatchSize = 64
	}
	none := estimate(t, base)
	full := estimate(t, func(c *Config) { base(c); c.Training.Recompute = "full" })
	if full.Summary.ActivationMemoryBytes >= none.Summary.ActivationMemoryBytes {
		t.Errorf("full recompute did not reduce activations")
	}
	if full.Time.StepSeconds <= none.Time.StepSeconds {
		t.Errorf("full recompute should cost time: %.2f vs %.2f s", full.Time.StepSeconds, none.Time.StepSeconds)
	}
	c := DefaultConfig()
	base(&c)
	rows, err := CompareStrategies(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]StrategyRow{}
	for _, r := range rows {
		byName[r.Name] = r
	}
	ddp, fsdp := byName["DDP"], byName["FSDP (ZeRO-3)"]
	if ddp.PeakBytes == 0 || fsdp.PeakBytes == 0 || fsdp.PeakBytes >= ddp.PeakBytes {
		t.Errorf("FSDP should need less than DDP: %+v %+v", fsdp, ddp)
	}
	if ddp.Fits || !fsdp.Fits {
		t.Errorf("13B: DDP cannot fit (≈ 20 B/param), FSDP over 8 should: ddp %v fsdp %v", ddp.Fits, fsdp.Fits)
	}
}

func TestTimeEstimate(t *testing.T) {
	// FLOPs per token = 6·(matmul params) + 12·L·s·a·d·½ (causal attention, forward+backward).
	r := estimate(t, func(c *Config) {
		c.Model.Preset = "llama2-7b"
		c.Hardware.NumGPUs, c.Parallel.ZeroStage = 8, 3
		c.Training.SeqLength, c.Training.GlobalBatchSize, c.Training.TrainTokens = 4096, 8, 1e9
		c.Hardware.PricePerGPUHour = 2
	})
	matmul := 32*(4*4096*4096+3*4096*11008) + 32000*4096
	want := 6*float64(matmul) + 12*32*4096*4096*0.5
	if r.Time.FLOPsPerToken != want {
		t.Errorf("FLOPs/token %.4g, want %.4g", r.Time.FLOPsPerToken, want)
	}
	// Compute time = tokens·FLOPs / (GPUs · 989 TFLOP/s · 0.4).
	wantCompute := float64(8*4096) * want / (8 * 989e12 * 0.4)
	if !near(r.Time.ComputeSeconds, wantCompute, 1e-12) {
		t.Errorf("compute %.4f s, want %.4f", r.Time.ComputeSeconds, wantCompute)
	}
	if r.Time.Steps != int64(math.Ceil(1e9/(8*4096))) || !near(r.Time.Cost, r.Time.GPUHours*2, 1e-12) {
		t.Errorf("steps %d cost %.2f", r.Time.Steps, r.Time.Cost)
	}
}

func TestRoofline(t *testing.T) {
	g, _ := gpu.Lookup("h100")
	if want := 989e12 / 3.35e12; !near(g.RidgePoint("bf16"), want, 1e-12) {
		t.Errorf("ridge %.2f, want %.2f", g.RidgePoint("bf16"), want)
	}
	r := estimate(t, func(c *Config) { c.Model.Preset = "llama3-8b"; c.Training.SeqLength = 4096 })
	for _, p := range r.Roofline.Points {
		if (p.Intensity < r.Roofline.RidgePoint) != (p.Bound == "memory") {
			t.Errorf("%s: intensity %.1f vs ridge %.1f classified %s", p.Name, p.Intensity, r.Roofline.RidgePoint, p.Bound)
		}
		if p.Name == "input_norm" && p.Bound != "memory" || p.Name == "mlp.gate_up_proj" && p.Bound != "compute" {
			t.Errorf("%s classified %s", p.Name, p.Bound)
		}
	}
}

func TestCorrections(t *testing.T) {
	base := estimate(t, func(c *Config) { c.Model.Preset = "llama3.2-1b" })
	corr := estimate(t, func(c *Config) {
		c.Model.Preset = "llama3.2-1b"
		c.Corrections.Activations = 1.5
		c.Corrections.Weights = 2
	})
	if !near(float64(corr.Summary.ActivationMemoryBytes), 1.5*float64(base.Summary.ActivationMemoryBytes), 1e-9) ||
		!near(float64(corr.Summary.WeightMemoryBytes), 2*float64(base.Summary.WeightMemoryBytes), 1e-9) {
		t.Errorf("corrections not applied multiplicatively")
	}
}

// A sweep over presets, modes and layouts: every valid combination estimates, and the figures keep their order
// (peak allocated ≥ weights, reserved ≥ allocated, device ≥ reserved; the worst stage is the largest).
func TestSweepInvariants(t *testing.T) {
	n := 0
	for _, preset := range PresetNames() {
		for _, mode := range []string{"train", "inference"} {
			for _, lay := range []struct{ tp, pp, cp, ep, zero, gpus, v int }{
				{1, 1, 1, 1, 0, 1, 1}, {2, 1, 1, 1, 3, 8, 1}, {4, 2, 1, 1, 1, 16, 1}, {2, 4, 2, 2, 1, 32, 2}, {8, 1, 1, 1, 2, 16, 1},
			} {
				for _, attn := range []string{"flash", "standard"} {
					c := DefaultConfig()
					c.Mode = mode
					c.Model.Preset = preset
					c.Training.Attention, c.Training.Recompute, c.Training.HiddenDropout = attn, "selective", 0.1
					c.Training.SeqLength = 4096
					c.Parallel.TP, c.Parallel.PP, c.Parallel.CP, c.Parallel.EP, c.Parallel.ZeroStage, c.Parallel.VirtualStages = lay.tp, lay.pp, lay.cp, lay.ep, lay.zero, lay.v
					c.Parallel.SequenceParallel = lay.tp > 1
					c.Hardware.NumGPUs = lay.gpus
					r, err := Estimate(c)
					if err != nil {
						continue // e.g. tp not dividing heads, ep on a dense model
					}
					n++
					s := r.Summary
					if s.PeakMemoryBytes < s.WeightMemoryBytes || s.PeakReservedBytes < s.PeakMemoryBytes || s.DeviceTotalBytes < s.PeakReservedBytes || s.ActivationMemoryBytes < 0 {
						t.Errorf("%s %s %+v: order violated %+v", preset, mode, lay, s)
					}
					for _, st := range r.Stages {
						if st.DeviceTotal > s.DeviceTotalBytes {
							t.Errorf("%s %s %+v: stage %d exceeds the worst stage", preset, mode, lay, st.Index)
						}
					}
				}
			}
		}
	}
	if n < 100 {
		t.Errorf("only %d combinations estimated", n)
	}
}

// Caching-allocator rounding (static_formulas.md §1.9): 512-B granules; ≥ 10 MiB requests are rounded to 2 MiB.
func TestSegmentBytes(t *testing.T) {
	for _, tc := range []struct{ in, want int64 }{
		{1, 512}, {512, 512}, {513, 1024}, {1 << 20, 1 << 20}, {5<<20 + 1, 5<<20 + 512},
		{10 << 20, 10 << 20}, {10<<20 + 1, 12 << 20}, {(100 << 20) - 3, 100 << 20},
	} {
		if got := segmentBytes(tc.in); got != tc.want {
			t.Errorf("segmentBytes(%d) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// Loss memory per GPU with E = b·s·V/t logits: standard keeps 6E (bf16 logits + fp32 log-probs) and needs 8E in
// backward; fused keeps 4E; chunked keeps nothing and needs 10 B per logit of one chunk.
func TestLossVariants(t *testing.T) {
	b, s, V := int64(2), int64(4096), int64(128256)
	E := b * s * V
	loss := func(kind string) Operator {
		r := estimate(t, func(c *Config) {
			c.Model.Preset = "llama3-8b"
			c.Training.MicroBatchSize, c.Training.SeqLength, c.Training.Loss, c.Training.LossChunkTokens = int(b), int(s), kind, 1024
		})
		for _, op := range r.Operators {
			if op.Name == "cross_entropy" {
				return op
			}
		}
		t.Fatalf("%s: no cross_entropy record", kind)
		return Operator{}
	}
	// fused_jit (Megatron --cross-entropy-loss-fusion): the forward holds the bf16 logits 2E and their fp32 copy 4E
	// beside the new fp32 exp tensor that becomes the saved softmax 4E: 10E at its peak, 6E of it transient.
	for _, tc := range []struct {
		kind                    string
		saved, fwdTemp, bwdTemp int64
	}{{"standard", 6 * E, 4 * E, 8 * E}, {"fused", 4 * E, 2 * E, 2 * E}, {"fused_jit", 4 * E, 6 * E, 2 * E},
		{"chunked", 0, 10 * 1024 * V, 10 * 1024 * V}} {
		op := loss(tc.kind)
		if op.MemoryBytes != tc.saved || op.TempBytes != tc.fwdTemp || op.Extra["backward_temp_bytes"].(int64) != tc.bwdTemp {
			t.Errorf("%s: saved %d (want %d), forward temp %d (want %d), backward temp %v (want %d)", tc.kind,
				op.MemoryBytes, tc.saved, op.TempBytes, tc.fwdTemp, op.Extra["backward_temp_bytes"], tc.bwdTemp)
		}
	}
}

// MoE layer (Mixtral, top-2 of 8, ep=1, no TP): router input 2sbh + fp32 probs 4·sb·E + top-k indices and weights
// 12·sb·k; dispatched tokens 2·k·sb·h; expert SwiGLU 2·k·sb·3f (gate and up outputs, down input); expert outputs
// 2·k·sb·h kept for the weighted sum. Attention as in TestLlamaActivations.
func TestMoEActivations(t *testing.T) {
	s, b, h, f, E, k := 4096.0, 1.0, 4096.0, 14336.0, 8.0, 2.0
	r := estimate(t, func(c *Config) { c.Model.Preset = "mixtral-8x7b"; c.Training.SeqLength = int(s) })
	sb := s * b
	attn := sb*h*(2+2+2+2+2) + sb*h*4*(8.0/32) + 4*sb*32 + 8*sb // norms, qkv in, q, o, post-norm; k,v; lse; rstd
	router := 2*sb*h + 4*sb*E + 12*sb*k
	experts := k*sb*h*2 + k*sb*(4*f+2*f) + k*sb*h*2
	if got, want := layerBytes(r), attn+router+experts; got != want {
		t.Errorf("MoE layer activations %.0f, want %.0f", got, want)
	}
}
