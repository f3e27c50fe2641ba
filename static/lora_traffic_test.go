package static

import (
	"math"
	"testing"
)

// TestTrainableParamTraffic: per-parameter work after backward (the optimizer step, the gradient reduction)
// counts only the parameters that train. Llama-3-8B with r=16 adapters on all seven projections has
// 32 × 16 × (2·(4096+4096) + 2·(4096+1024) + 2·(4096+14336)·… ) = 41,943,040 adapter parameters (PEFT's
// print_trainable_parameters figure), fp32; AdamW reads the gradient, reads and writes the parameter and both
// states: 4 + 2·4 + 2·2·4 = 28 B each, 12 FLOPs each.
func TestTrainableParamTraffic(t *testing.T) {
	const adapters = 41_943_040
	tests := []struct {
		name       string
		mut        func(*Config)
		stepped    float64 // parameters this GPU steps
		bytesEach  float64
		reduceTemp int64 // grad_reduce_scatter buffer, 0 = none
		dpGrads    float64
		gathers    bool // ZeRO-3: the stored weights are all-gathered too
	}{
		{"qlora 1 GPU", nil, adapters, 28, 0, 0, false},
		// ZeRO-2 over 2 GPUs: each steps half the adapters; the reduce bucket holds all adapter gradients
		// (41.9M < DeepSpeed's 5e8-element bucket), fp32; the all-reduce moves 2·(1/2)·adapters·4 B.
		{"qlora zero2 dp2", func(c *Config) {
			c.Hardware.NumGPUs, c.Parallel.DP, c.Parallel.ZeroStage, c.Training.GlobalBatchSize = 2, 2, 2, 4
		}, adapters / 2, 28, adapters * 4, adapters * 4, false},
		// ZeRO-3 reduce-scatters one layer's adapter gradients at a time (adapters/32 · 4 B) and also gathers the
		// stored bf16 base and the fp32 adapters: 2·(1/2)·(2 × weights per GPU) bytes more.
		{"qlora zero3 dp2", func(c *Config) {
			c.Hardware.NumGPUs, c.Parallel.DP, c.Parallel.ZeroStage, c.Training.GlobalBatchSize = 2, 2, 3, 4
			// A bf16 base (the nf4 one would need a 16-bit quant_storage to be sharded).
			c.Training.LoRA.BaseDtype, c.Training.LoRA.DoubleQuant, c.Training.LoRA.QuantStorage, c.Training.LoRA.KbitPrep = "bf16", nil, "", nil
		}, adapters / 2, 28, adapters / 32 * 4, adapters * 4, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := estimateFile(t, "../testdata/static/llama3-8b-qlora-rtx4090.json", tc.mut)
			if r.LoRA == nil || r.LoRA.AdapterParams != adapters {
				t.Fatalf("lora %+v, want %d adapter params", r.LoRA, adapters)
			}
			op := op(t, r, "optimizer_step")
			if op.FLOPs != 12*tc.stepped || op.BytesMoved != tc.stepped*tc.bytesEach {
				t.Errorf("optimizer_step %.0f FLOP %.0f B, want %.0f FLOP %.0f B", op.FLOPs, op.BytesMoved, 12*tc.stepped, tc.stepped*tc.bytesEach)
			}
			var reduce int64
			for _, o := range r.Operators {
				if o.Name == "grad_reduce_scatter" {
					reduce = o.TempBytes
				}
			}
			if reduce != tc.reduceTemp {
				t.Errorf("grad_reduce_scatter %d B, want %d", reduce, tc.reduceTemp)
			}
			if tc.dpGrads > 0 {
				rc := r.Config
				g := rc.GPU()
				bw := g.IntraGBps / 2 * 1e9 * rc.Hardware.CommEfficiency
				vol := 2 * 0.5 * tc.dpGrads
				if tc.gathers {
					vol += 2 * 0.5 * 2 * float64(r.Stages[r.WorstStage].Weights)
				}
				want := vol / bw
				if math.Abs(r.Time.DPCommSeconds-want) > 1e-12 {
					t.Errorf("DP communication %.6g s, want %.6g s (adapter gradients only)", r.Time.DPCommSeconds, want)
				}
			}
		})
	}

	// Plain data parallelism (ZeRO 0): every rank steps every parameter.
	r := estimateFile(t, "../testdata/static/llama3-8b-qlora-rtx4090.json", func(c *Config) {
		c.Training.LoRA = nil
		c.Model.Preset = "llama3.2-1b"
		c.Hardware.GPU, c.Hardware.NumGPUs, c.Parallel.DP, c.Training.GlobalBatchSize = "h100-sxm", 2, 2, 4
	})
	if op, p := op(t, r, "optimizer_step"), float64(r.Stages[r.WorstStage].Params); op.FLOPs != 12*p {
		t.Errorf("DDP optimizer_step %.0f FLOP, want 12 × %.0f params", op.FLOPs, p)
	}
}

// TestDecodeRooflineOnlyWithGeneration: a prefill-only inference config (generate_tokens 0) runs no decode step,
// so its roofline has no decode.* operators; with tokens to generate it does.
func TestDecodeRooflineOnlyWithGeneration(t *testing.T) {
	for _, gen := range []int{0, 16} {
		r := estimateFile(t, "../testdata/static/llama2-7b-inference.json", func(c *Config) { c.Inference.GenerateTokens = gen })
		decode := 0
		for _, p := range r.Roofline.Points {
			if p.Phase == "decode" {
				decode++
			}
		}
		if (decode > 0) != (gen > 0) {
			t.Errorf("generate_tokens %d: %d decode points on the roofline", gen, decode)
		}
	}
}
