package static

import (
	"math"
	"path/filepath"
	"testing"
)

// loadCalibrationConfig reads one of the small Megatron functional-test configs of the calibration benchmark.
func loadCalibrationConfig(t *testing.T, name string) *Config {
	t.Helper()
	c, err := LoadConfig(filepath.Join("..", "testdata", "calibration", "megatron", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func lastStage(t *testing.T, c Config) Stage {
	t.Helper()
	r, err := Estimate(c)
	if err != nil {
		t.Fatal(err)
	}
	return r.Stages[len(r.Stages)-1]
}

// The 12-layer GPT of Megatron's functional tests (h 512, 8 heads, GPT-2 vocabulary 50257 padded to 50304, learned
// positions 1024, LayerNorm, GeLU, biases, dropout 0.1, tied embeddings), micro-batch 4 × 1024 tokens, TP1 PP1 DP8,
// distributed optimizer, Transformer Engine with flash attention, vocab-parallel cross entropy, on an H100.
// Derived by hand, n = b·s = 4096 tokens, E = n·V logits:
//
//	P       = L·(12h² + 13h) + V·h + s·h + 2h                  = 64,109,568
//	states  = 2P (bf16) + 4P (fp32 main_grad buffer) + 12P/8 (fp32 master + Adam m, v over DP 8)
//	other   = 64 MiB (cuBLAS + cuBLASLt workspaces) + 32 MiB (Transformer Engine workspace on Hopper)
//	layer   = 34·n·h + 48·n: LN in 2nh + fp32 mean/rstd 8n (×2), QKV in 2nh, Q K V 6nh, fp32 LSE 4·a·n, o_proj in
//	          2nh, fc1 in 2nh, GeLU in 8nh, fc2 in 8nh, two dropout masks 2nh
//	input   = int64 ids 8n + embedding-dropout mask nh; head = final LN 2nh + 8n, lm_head input 2nh
//	loss    = fp32 softmax 4E kept for backward; 2E more while the bf16 logits (forward) or the bf16 logit gradient
//	          (backward) exist beside it
//
// The measured values are Megatron's (golden_values_dev_dgx_h100: allocated_bytes.all.peak 2,691,870,753 and
// allocated_bytes.all.current 581,968,069 on the last rank).
func TestMegatronSmallGPTByHand(t *testing.T) {
	c := loadCalibrationConfig(t, "gpt3_mcore_te_tp1_pp1_resume_torch_dist_dist_optimizer")
	const h, L, V, s, b, a = 512, 12, 50304, 1024, 4, 8
	const n, E = b * s, b * s * V
	P := int64(L*(12*h*h+13*h) + V*h + s*h + 2*h)
	end := 2*P + 4*P + 12*P/8 + 96*mib
	act := int64(L*(34*n*h+48*n) + 8*n + n*h + 2*n*h + 8*n + 2*n*h + 4*E)
	peak := end + act + 2*E
	st := lastStage(t, *c)
	if st.Params != P {
		t.Errorf("params %d, want %d", st.Params, P)
	}
	if st.EndOfStepAllocated != end {
		t.Errorf("end of step %d, want %d", st.EndOfStepAllocated, end)
	}
	if st.PeakAllocated != peak {
		t.Errorf("peak %d (%s), want %d", st.PeakAllocated, st.PeakStage, peak)
	}
	for _, m := range []struct {
		name           string
		pred, measured int64
	}{{"peak", peak, 2_691_870_753}, {"end of step", end, 581_968_069}} {
		if e := float64(m.pred)/float64(m.measured) - 1; math.Abs(e) > 0.01 {
			t.Errorf("%s: hand formula %d vs measured %d: %+.2f%% (bound 1%%)", m.name, m.pred, m.measured, 100*e)
		}
	}
}

// Transformer Engine allocates a cuBLASLt workspace of 32 MiB on compute capability ≥ 9 and 4 MiB before
// (get_cublas_workspace_size_bytes); without TE there is none. Everything else in "other" is unchanged.
func TestTransformerEngineWorkspace(t *testing.T) {
	base := loadCalibrationConfig(t, "gpt3_mcore_te_tp1_pp1_resume_torch_dist_dist_optimizer")
	for _, tc := range []struct {
		gpu  string
		te   bool
		want int64
	}{
		{"h100-sxm", true, 32 * mib}, {"gb200", true, 32 * mib}, {"h200-sxm", true, 32 * mib},
		{"a100-80gb-sxm", true, 4 * mib}, {"l40s", true, 4 * mib}, {"h100-sxm", false, 0}, {"a100-80gb-sxm", false, 0},
	} {
		c := *base
		c.Hardware.GPU, c.Training.TransformerEngine = tc.gpu, tc.te
		if got := lastStage(t, c).Other - 64*mib; got != tc.want {
			t.Errorf("%s te=%t: other beyond the 64 MiB cuBLAS workspaces = %d, want %d", tc.gpu, tc.te, got, tc.want)
		}
	}
}

// Megatron's local attention takes the [b·a/t, s, s] input of its score baddbmm from the global memory buffer and
// keeps it: 2·b·(a/t)·s² bytes for the run. tp1_pp2 (b 4, a 8, s 1024): 67,108,864; TP 2 halves it; flash, HF
// eager attention and Transformer Engine's unfused attention have no such buffer.
func TestMegatronScoreBuffer(t *testing.T) {
	base := loadCalibrationConfig(t, "gpt3_mcore_tp1_pp2")
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want int64
	}{
		{"local attention", func(*Config) {}, 2 * 4 * 8 * 1024 * 1024},
		{"tp 2", func(c *Config) { c.Parallel.TP, c.Parallel.DP, c.Parallel.NumMicrobatches = 2, 0, 0 }, 2 * 4 * 4 * 1024 * 1024},
		{"flash", func(c *Config) { c.Training.Attention = "flash" }, 0},
		{"eager", func(c *Config) { c.Training.Kernels = "eager" }, 0},
		{"transformer engine unfused (its H100 workspace only)", func(c *Config) { c.Training.TransformerEngine = true }, 32 * mib},
	} {
		c := *base
		tc.mod(&c)
		if got := lastStage(t, c).Other - 64*mib; got != tc.want {
			t.Errorf("%s: other beyond the workspaces = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// fp16 in Megatron: the main_grad buffer is fp16 (only bf16 forces fp32 accumulation) and the optimizer steps on
// fp32 copies (main_param.grad = main_grad.float()) that live until the next zero_grad. Model memory at the end of
// the step is then 2 + 2 + 12 + 4 = 20 B per parameter, (2 + 2) + (12 + 4)/d with the distributed optimizer:
// the fp16 row of Megatron's distributed-optimizer table. In backward the copies do not exist yet.
func TestFP16MainGradCopies(t *testing.T) {
	base := loadCalibrationConfig(t, "gpt3_mcore_tp4_pp1_resume_torch_dist")
	for _, tc := range []struct {
		name     string
		distOpt  bool
		perParam float64
	}{{"fp16 optimizer", false, 20}, {"distributed optimizer over dp 2", true, 4 + 16.0/2}} {
		c := *base
		c.Parallel.DistributedOptimizer, c.Parallel.ZeroStage = tc.distOpt, 0
		st := lastStage(t, c)
		P := float64(st.Params)
		if got, want := float64(st.EndOfStepAllocated-st.Other), tc.perParam*P; math.Abs(got-want) > 8 {
			t.Errorf("%s: end of step without workspaces %.0f B, want %g·P = %.0f", tc.name, got, tc.perParam, want)
		}
		copies := 4 * P
		if tc.distOpt {
			copies /= 2
		}
		if got := float64(st.OptimizerPeak - (st.Weights + st.Grads + st.Optimizer + st.Other)); math.Abs(got-copies) > 8 {
			t.Errorf("%s: optimizer-step extra %.0f B, want the fp32 copies %.0f", tc.name, got, copies)
		}
		// Forward and backward hold only the 2 B fp16 buffer: exactly 2P below the same run with fp32 main grads.
		c32 := c
		c32.Training.GradPrecision = "fp32"
		st32 := lastStage(t, c32)
		for _, m := range []struct {
			name      string
			fp16, f32 int64
		}{{"forward", st.ForwardPeak, st32.ForwardPeak}, {"backward", st.BackwardPeak, st32.BackwardPeak}} {
			if d := float64(m.f32 - m.fp16); math.Abs(d-2*P) > 8 {
				t.Errorf("%s: %s peak %.0f B below fp32 main grads, want 2P = %.0f", tc.name, m.name, d, 2*P)
			}
		}
	}
	// Measured (golden_values_dev_dgx_h100, last rank): allocated_bytes.all.current 416,611,828.
	st := lastStage(t, *base)
	if e := float64(st.EndOfStepAllocated)/416_611_828 - 1; math.Abs(e) > 0.02 {
		t.Errorf("end of step %d vs measured 416,611,828: %+.1f%% (bound 2%%)", st.EndOfStepAllocated, 100*e)
	}
	// bf16 keeps fp32 main grads in the buffer itself: no copies, 18 B per parameter.
	c := *base
	c.Training.Precision, c.Training.GradPrecision = "bf16-mixed", ""
	st = lastStage(t, c)
	if got, want := float64(st.EndOfStepAllocated-st.Other), 18*float64(st.Params); math.Abs(got-want) > 8 {
		t.Errorf("bf16: end of step without workspaces %.0f B, want 18·P = %.0f", got, want)
	}
}
