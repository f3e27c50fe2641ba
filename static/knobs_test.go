package static

import (
	"strings"
	"testing"

	"github.com/memscan/memscan/gpu"
)

// tiny is a small Llama-style model every knob test derives by hand: 2 layers, h 64, 4 query and 2 KV heads of
// 16, ffn 128, vocab 256, batch 2 × 32 tokens on one H100, HF framework defaults.
const (
	tb, ts, th, ta, tg, td, tf, tv, tl = 2, 32, 64, 4, 2, 16, 128, 256, 2
	tn                                 = tb * ts // tokens per micro-batch
)

func tiny(t *testing.T, mod func(*Config)) *Report {
	t.Helper()
	c, err := DefaultConfigFor("hf")
	if err != nil {
		t.Fatal(err)
	}
	c.Model = ModelConfig{Family: "llama", NumLayers: tl, HiddenSize: th, NumAttentionHeads: ta, NumKVHeads: tg,
		FFNHiddenSize: tf, VocabSize: tv}
	c.Training.MicroBatchSize, c.Training.SeqLength = tb, ts
	c.Hardware.GPU = "h100"
	if mod != nil {
		mod(&c)
	}
	r, err := Estimate(c)
	if err != nil {
		t.Fatalf("Estimate: %v", err)
	}
	return r
}

// op returns the per-layer-micro-batch record of a layer operator (or the single record of others).
func op(t *testing.T, r *Report, name string) Operator {
	t.Helper()
	for _, o := range r.Operators {
		if o.Name == name {
			if o.Multiplier > 1 {
				o.MemoryBytes /= o.Multiplier
			}
			return o
		}
	}
	t.Fatalf("no operator %q", name)
	return Operator{}
}

// Each framework sets its documented defaults; explicit keys override them; the recompute option means what
// the framework means by it.
func TestFrameworkDefaults(t *testing.T) {
	for _, tc := range []struct {
		fw, precision, kernels, loss, attention, impl, grads string
		zero                                                 int
	}{
		{"megatron", "bf16-mixed", "fused", "fused", "flash", "fused", "persistent", 0},
		{"hf", "bf16", "eager", "standard", "sdpa", "foreach", "on_demand", 0},
		{"torchtitan", "bf16-mixed", "eager", "standard", "sdpa", "fused", "on_demand", 3}, // eager RMSNorm and SwiGLU until compiled
		{"torchtune", "bf16", "eager", "chunked_output", "sdpa", "fused", "on_demand", 0},
		{"deepspeed", "bf16-mixed", "eager", "standard", "sdpa", "fused", "on_demand", 2},
	} {
		t.Run(tc.fw, func(t *testing.T) {
			c, err := ParseConfig([]byte(`{"framework":"`+tc.fw+`","model":{"preset":"llama3.2-1b"},"hardware":{"num_gpus":8}}`), false)
			if err != nil {
				t.Fatal(err)
			}
			tr := c.Training
			if tr.Precision != tc.precision || tr.Kernels != tc.kernels || tr.Loss != tc.loss || tr.Attention != tc.attention ||
				tr.OptimizerImpl != tc.impl || c.Parallel.GradBuffer != tc.grads || c.Parallel.ZeroStage != tc.zero {
				t.Errorf("got precision %s kernels %s loss %s attention %s impl %s grads %s zero %d", tr.Precision, tr.Kernels,
					tr.Loss, tr.Attention, tr.OptimizerImpl, c.Parallel.GradBuffer, c.Parallel.ZeroStage)
			}
			o, err := ParseConfig([]byte(`{"framework":"`+tc.fw+`","model":{"preset":"llama3.2-1b"},"training":{"loss":"chunked","precision":"fp32"}}`), false)
			if err != nil {
				t.Fatal(err)
			}
			if o.Training.Loss != "chunked" || o.Training.Precision != "fp32" {
				t.Errorf("explicit keys did not override: loss %s precision %s", o.Training.Loss, o.Training.Precision)
			}
		})
	}
	c, err := ParseConfig([]byte(`{"framework":"torchtitan","model":{"preset":"llama3-8b"},"training":{"recompute":"selective"},"hardware":{"num_gpus":8}}`), false)
	if err != nil || c.Training.Recompute != "op_selective" {
		t.Errorf("torchtitan selective should mean op_selective: %v %v", c, err)
	}
	// torchtitan without a data-parallel shard group trains the fp32 model under autocast, without FSDP.
	c, err = ParseConfig([]byte(`{"framework":"torchtitan","model":{"preset":"llama3.2-1b"}}`), false)
	if err != nil || c.Parallel.ZeroStage != 0 || c.Training.Precision != "amp-bf16" {
		t.Errorf("torchtitan on one GPU: zero %d precision %s (%v)", c.Parallel.ZeroStage, c.Training.Precision, err)
	}
	// HF's attn_implementation="eager" is the unfused attention with eager modules.
	c, err = ParseConfig([]byte(`{"model":{"preset":"llama3.2-1b"},"training":{"attention":"eager"}}`), false)
	if err != nil || c.Training.Attention != "standard" || c.Training.Kernels != "eager" {
		t.Errorf("attention eager: %s / %s (%v)", c.Training.Attention, c.Training.Kernels, err)
	}
	// LoRA adapters: PEFT upcasts them to fp32, torchtune keeps the model dtype.
	for fw, want := range map[string]string{"hf": "fp32", "torchtune": "bf16"} {
		c, err = ParseConfig([]byte(`{"framework":"`+fw+`","model":{"preset":"llama3.2-1b"},"training":{"lora":{"rank":8}}}`), false)
		if err != nil || c.Training.LoRA.AdapterDtype != want {
			t.Errorf("%s LoRA adapters: %v (%v), want %s", fw, c.Training.LoRA, err, want)
		}
	}
	// The framework from outside (--framework) replaces the file's and keeps its explicit keys.
	c, err = ParseConfigFramework([]byte(`{"framework":"megatron","model":{"preset":"llama3.2-1b"},"training":{"loss":"chunked"}}`), false, "hf")
	if err != nil || c.Framework != "hf" || c.Training.Kernels != "eager" || c.Training.Loss != "chunked" {
		t.Errorf("framework override: %+v %v", c.Training, err)
	}
}

// Combinations a framework or GPU cannot run are errors that say why; unknown values list the known ones.
func TestInvalidCombinations(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{"framework":"pytorch-lightning","model":{"preset":"gpt2"}}`, `framework: "pytorch-lightning" (must be one of deepspeed, hf, megatron, torchtitan, torchtune)`},
		{`{"framework":7,"model":{"preset":"gpt2"}}`, "framework: expected a string"},
		{`{"model":{"preset":"llama3-8b"},"training":{"float8":true},"hardware":{"gpu":"a100"}}`, "training.float8: NVIDIA A100 80GB SXM4 has no fp8 tensor cores"},
		{`{"model":{"preset":"llama3-8b"},"training":{"float8":true,"precision":"fp32"},"hardware":{"gpu":"h100"}}`, "float8 linears need bf16 compute"},
		{`{"framework":"hf","model":{"preset":"llama3-8b"},"training":{"recompute":"selective"}}`, "hf's gradient checkpointing recomputes whole layers"},
		{`{"framework":"megatron","model":{"preset":"llama3-8b"},"training":{"recompute":"op_selective"}}`, "op_selective is torchtitan's per-op checkpoint policy, which megatron does not have"},
		{`{"model":{"preset":"llama3-8b"},"training":{"packed_sequences":true,"attention":"flash"}}`, "flash cannot take the block-causal mask"},
		{`{"framework":"megatron","model":{"preset":"llama3-8b"},"training":{"lora":{"rank":8}}}`, "Megatron-LM has no LoRA"},
		{`{"model":{"preset":"llama3-8b"},"training":{"optimizer_in_backward":true},"parallel":{"pp":2},"hardware":{"num_gpus":2}}`, "optimizer_in_backward: cannot step inside backward with pipeline parallelism"},
		{`{"model":{"preset":"llama3-8b"},"parallel":{"fsdp_reshard_after_forward":false}}`, "fsdp_reshard_after_forward: applies to FSDP"},
		{`{"model":{"preset":"llama3-8b"},"training":{"lora":{"rank":8,"targets":["qkv"]}}}`, `training.lora.targets: unknown module "qkv"`},
		{`{"model":{"preset":"llama3-8b"},"training":{"lora":{"rank":0}}}`, "training.lora.rank: 0 (must be > 0)"},
		{`{"model":{"preset":"llama3-8b"},"training":{"lora":{"rank":8,"base_dtype":"int4"}}}`, `training.lora.base_dtype: "int4"`},
		{`{"model":{"preset":"llama3-8b"},"training":{"lora":{"rank":8,"rnk":2}}}`, `training.lora.rnk: unknown key (did you mean "rank"?)`},
		{`{"model":{"preset":"llama3-8b"},"training":{"lora":{"rank":8,"zzz":2}}}`, "training.lora.zzz: unknown key (known keys: adapter_dtype, alpha, base_dtype, double_quant, dropout, kbit_prep, quant_storage, rank, targets)"},
		{`{"mode":"inference","model":{"preset":"llama3-8b"},"inference":{"kv_cache":{"implementation":"ring"}}}`, `inference.kv_cache.implementation: "ring"`},
		{`{"mode":"inference","model":{"preset":"llama3-8b"},"inference":{"kv_cache":{"implementation":"static","block_tokens":16}}}`, "block_tokens: 16 applies to the paged cache"},
		{`{"model":{"family":"bert","num_layers":2,"hidden_size":64,"num_attention_heads":4,"vocab_size":100}}`, `model.family: "bert"`},
		{`{"model":{"preset":"llama3-8b"},"training":{"attention":"xformers"}}`, `training.attention: "xformers" (must be one of sdpa, flash, efficient, cudnn, math, flex, standard)`},
	} {
		_, err := ParseConfig([]byte(tc.doc), false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.doc, err, tc.want)
		}
	}
}

// PyTorch's SDPA dispatch (flash → memory-efficient → math) for the dtype, GPU, grouped-query heads, head dim
// and mask of the config.
func TestSDPASelection(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"bf16 GQA on H100", nil, "flash"},
		{"amp-bf16 runs 16-bit attention", func(c *Config) { c.Training.Precision = "amp-bf16" }, "flash"},
		{"fp32 GQA: no flash, efficient has no GQA", func(c *Config) { c.Training.Precision = "fp32" }, "math"},
		{"fp32 MHA", func(c *Config) { c.Training.Precision, c.Model.NumKVHeads = "fp32", ta }, "efficient"},
		{"fp16 MHA on V100 (sm 7.0)", func(c *Config) { c.Model.NumKVHeads, c.Hardware.GPU, c.Training.Precision = ta, "v100", "fp16" }, "efficient"},
		{"fp16 GQA on V100", func(c *Config) { c.Hardware.GPU, c.Training.Precision = "v100", "fp16" }, "math"},
		{"head_dim 320 > 256", func(c *Config) { c.Model.HeadDim, c.Model.NumKVHeads = 320, ta }, "efficient"},
		{"packed, torchtune: flex", func(c *Config) { c.Framework, c.Training.PackedSequences = "torchtune", true }, "flex"},
		{"packed, hf: mask → efficient on repeated K/V", func(c *Config) { c.Training.PackedSequences = true }, "efficient"},
		{"explicit math", func(c *Config) { c.Training.Attention = "math" }, "math"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tiny(t, tc.mod)
			if r.Attention.Kernel != tc.want {
				t.Errorf("kernel %s (%s), want %s", r.Attention.Kernel, r.Attention.Why, tc.want)
			}
		})
	}
}

// What each attention kernel keeps per layer (b·s tokens, a query heads, g KV heads of d): flash keeps Q, K, V
// and the fp32 log-sum-exp; math keeps q and K, V repeated to a heads in its compute dtype plus the b·a·s²
// probabilities (fp32 for 16-bit inputs, since the math kernel upcasts); a packed-sequence mask adds b·s² in
// the query dtype.
func TestAttentionKernelBytes(t *testing.T) {
	bas := int64(tb * ta * ts)
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want int64
	}{
		{"flash bf16", nil, 2*tn*ta*td + 2*2*tn*tg*td + 4*bas},
		{"math fp32 GQA", func(c *Config) { c.Training.Precision = "fp32" }, 4*tn*ta*td*3 + 4*bas*ts},
		{"math fp16 upcast on V100", func(c *Config) { c.Hardware.GPU, c.Training.Precision = "v100", "fp16" }, 4*tn*ta*td*3 + 4*bas*ts},
		{"efficient with packed mask", func(c *Config) { c.Training.PackedSequences = true }, 2*tn*ta*td*3 + 4*bas + 2*tb*ts*ts},
		{"hf eager (standard): fp32 and bf16 probabilities", func(c *Config) { c.Training.Attention = "standard" }, 2*tn*ta*td*3 + 6*bas*ts},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := op(t, tiny(t, tc.mod), "attention").MemoryBytes; got != tc.want {
				t.Errorf("attention keeps %d B, want %d", got, tc.want)
			}
		})
	}
}

// GPT-2's gelu_new as transformers writes it, 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))), runs as eager ops:
// besides x it keeps tanh's output, 1 + tanh and 0.5·x (3 more f-wide tensors). Under autocast pow runs in
// fp32: it keeps an fp32 copy of x, and tanh, 1 + tanh are fp32. torch.compile fuses the chain: x only.
func TestGeluNewChain(t *testing.T) {
	gpt := func(mod func(*Config)) func(*Config) {
		return func(c *Config) {
			c.Model = ModelConfig{Family: "gpt2", NumLayers: tl, HiddenSize: th, NumAttentionHeads: ta, VocabSize: tv, MaxPositionEmbeddings: ts, TieWordEmbeddings: true}
			if mod != nil {
				mod(c)
			}
		}
	}
	nf := int64(tn * 4 * th)
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want int64
	}{
		{"bf16 eager", nil, nf * (2 + 2 + 2 + 2)},
		{"amp-bf16 eager", func(c *Config) { c.Training.Precision = "amp-bf16" }, nf * (4 + 4 + 4 + 2)},
		{"compiled", func(c *Config) { c.Training.Compile = true }, nf * 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := op(t, tiny(t, gpt(tc.mod)), "mlp.gelu_new").MemoryBytes; got != tc.want {
				t.Errorf("gelu_new keeps %d B, want %d", got, tc.want)
			}
		})
	}
}

// Autocast (fp32 parameters): every matmul keeps the cached 16-bit weight copy; Llama's separate q/k/v and
// gate/up projections each cast the fp32 norm output themselves; the eager RMSNorm keeps its fp32 input and
// fp32 normalized output. Parameters, gradients and AdamW states are all fp32 (16 B/param), no master copy.
func TestAMP(t *testing.T) {
	r := tiny(t, func(c *Config) { c.Training.Precision = "amp-bf16" })
	matmul := int64(th*ta*td + 2*th*tg*td + ta*td*th + 3*th*tf)
	for _, tc := range []struct {
		op   string
		want int64
	}{
		{"autocast_weight_copies", 2 * matmul},
		{"qkv_proj", 3 * 2 * tn * th},
		{"mlp.gate_up_proj", 2 * 2 * tn * th},
		{"input_norm", 4*tn*th + 4*tn*th + 4*tn},
	} {
		if got := op(t, r, tc.op).MemoryBytes; got != tc.want {
			t.Errorf("%s keeps %d B, want %d", tc.op, got, tc.want)
		}
	}
	s := r.Summary
	if got, want := s.WeightMemoryBytes+s.GradMemoryBytes+s.OptimizerMemoryBytes, 16*r.Params.Total; got != want {
		t.Errorf("model states %d, want 16 B × %d params", got, r.Params.Total)
	}
}

// LoRA r = 4 on every projection, fp32 adapters on a frozen bf16 base (PEFT defaults). Adapter parameters
// per layer: Σ (in + out)·r; weights 2 B × base + 4 B × adapters, gradients 4 B and AdamW states 8 B per
// adapter parameter only. Per layer the frozen projections keep nothing; each adapter keeps an fp32 copy of its
// input and its r-wide lora_A output (fp32); the eager RMSNorm with a frozen weight keeps the fp32 input and
// rstd; SwiGLU keeps gate, up and silu(gate); flash keeps Q, K, V, its output and the log-sum-exp.
func TestLoRA(t *testing.T) {
	const r = 4
	r1 := tiny(t, func(c *Config) { c.Training.LoRA = &LoRAConfig{Rank: r, Targets: LoRATargets{"all-linear"}} })
	perLayer := int64((th+ta*td)*r + 2*(th+tg*td)*r + (ta*td+th)*r + 2*(th+tf)*r + (tf+th)*r)
	if got := r1.LoRA.AdapterParams; got != tl*perLayer {
		t.Fatalf("adapter params %d, want %d", got, tl*perLayer)
	}
	a := tl * perLayer
	s := r1.Summary
	if s.WeightMemoryBytes != 2*r1.Params.Total+4*a || s.GradMemoryBytes != 4*a || s.OptimizerMemoryBytes != 8*a {
		t.Errorf("weights %d grads %d optimizer %d; want %d, %d, %d", s.WeightMemoryBytes, s.GradMemoryBytes, s.OptimizerMemoryBytes,
			2*r1.Params.Total+4*a, 4*a, 8*a)
	}
	nh, nr := int64(tn*th), int64(tn*r)
	layer := 2*(4*nh+4*tn) + // two frozen-weight RMSNorms
		3*(4*nh+4*nr) + // q, k, v adapters
		2*tn*ta*td + 2*2*tn*tg*td + 4*tb*ta*ts + 2*tn*ta*td + // flash: Q, K, V, lse, output
		(4*tn*ta*td + 4*nr) + // o adapter
		2*(4*nh+4*nr) + // gate, up adapters
		6*tn*tf + // gate, up, silu(gate)
		(4*tn*tf + 4*nr) // down adapter
	if got := layerBytes(r1); got != float64(layer) {
		t.Errorf("LoRA layer keeps %.0f B, want %d", got, layer)
	}
	// bf16 adapters share the input: the frozen projections' inputs are kept once, by lora_A.
	r2 := tiny(t, func(c *Config) {
		c.Training.LoRA = &LoRAConfig{Rank: r, AdapterDtype: "bf16", Targets: LoRATargets{"q_proj", "v_proj"}}
	})
	if got, want := op(t, r2, "qkv.lora").MemoryBytes, 2*nh+2*(2*nr); got != want {
		t.Errorf("bf16 q/v adapters keep %d B, want %d", got, want)
	}
}

// QLoRA: NF4 stores 4 bits per linear weight plus, with double quantization, one 8-bit absmax per 64 weights and
// one fp32 constant per 256 blocks; norms and embeddings stay bf16, or fp32 after PEFT's
// prepare_model_for_kbit_training (hf's default: TRL's SFTTrainer calls it for a 4/8-bit model). Each quantized
// linear is dequantized to bf16 one at a time in forward and backward.
func TestQLoRANF4(t *testing.T) {
	off := false
	r := tiny(t, func(c *Config) { c.Training.LoRA = &LoRAConfig{Rank: 4, BaseDtype: "nf4", KbitPrep: &off} })
	matmul := float64(th*ta*td + 2*th*tg*td + ta*td*th + 3*th*tf)
	other := float64(r.Params.Total) - tl*matmul
	want := int64(tl*matmul*(0.5+1.0/64+4.0/(64*256)) + 2*other)
	if got := r.LoRA.FrozenBaseBytes; got < want-1 || got > want+1 {
		t.Errorf("frozen NF4 base %d B, want %d", got, want)
	}
	prep := tiny(t, func(c *Config) { c.Training.LoRA = &LoRAConfig{Rank: 4, BaseDtype: "nf4"} })
	if got, want := prep.LoRA.FrozenBaseBytes, want+int64(2*other); got < want-1 || got > want+1 {
		t.Errorf("frozen NF4 base after kbit preparation %d B, want %d (norms and embeddings fp32)", got, want)
	}
	if got, want := r.LoRA.DequantTempBytes, int64(2*th*tf); got != want {
		t.Errorf("dequantization temporary %d B, want %d (the largest weight in bf16)", got, want)
	}
	noDQ := false
	r2 := tiny(t, func(c *Config) {
		c.Training.LoRA = &LoRAConfig{Rank: 4, BaseDtype: "nf4", DoubleQuant: &noDQ, KbitPrep: &off}
	})
	if d := r2.LoRA.FrozenBaseBytes - r.LoRA.FrozenBaseBytes; d != int64(tl*matmul*(4.0/64-1.0/64-4.0/(64*256))) {
		t.Errorf("double quantization saves %d B", d)
	}
}

// KV caches with b = 2, prompt 32, 16 generated tokens, 2 layers of 2 KV heads of 16 (bf16): 256 B per token
// and sequence. Static preallocates prompt + generated tokens before the prefill (and, its keys being longer
// than the prompt, HF builds a boolean prompt × cache mask); dynamic holds the prompt in
// the prefill and, in the last decode step, the whole cache plus one layer's concatenation copy; paged rounds
// each sequence up to 16-token blocks.
func TestKVCacheImplementations(t *testing.T) {
	perTok := int64(2 * tl * tg * td * 2)
	inf := func(impl string, gen, block int) *Report {
		return tiny(t, func(c *Config) {
			c.Mode = "inference"
			c.Inference.BatchSize, c.Inference.PromptLength, c.Inference.GenerateTokens = tb, ts, gen
			c.Inference.KVCache.Implementation, c.Inference.KVCache.BlockTokens = impl, block
		})
	}
	st := inf("static", 16, 0)
	dy := inf("dynamic", 16, 0)
	if st.Summary.KVCacheMemoryBytes != perTok*tb*(ts+16) || dy.Summary.KVCacheMemoryBytes != st.Summary.KVCacheMemoryBytes {
		t.Errorf("KV cache static %d dynamic %d, want %d", st.Summary.KVCacheMemoryBytes, dy.Summary.KVCacheMemoryBytes, perTok*tb*(ts+16))
	}
	// HF with a preallocated cache also keeps a b × 1 × prompt × cache boolean mask through the prefill.
	if d, want := st.Stages[0].ForwardPeak-dy.Stages[0].ForwardPeak, int64(perTok*tb*16+tb*ts*(ts+16)); d != want {
		t.Errorf("static − dynamic prefill peak %d, want the generated tokens' cache and the mask: %d", d, want)
	}
	pg := inf("paged", 1, 16)
	if got, want := pg.Summary.KVCacheMemoryBytes, perTok*tb*48; got != want {
		t.Errorf("paged cache for 33 tokens %d, want 3 blocks of 16: %d", got, want)
	}
	// A long generation makes the dynamic cache's last step the peak: cache + one layer's copy + the step's
	// logits (bf16, their fp32 copy and the processed fp32 scores).
	long := inf("dynamic", 4096, 0)
	kv := perTok * tb * (ts + 4096)
	want := long.Summary.WeightMemoryBytes + long.Summary.OtherMemoryBytes + kv + kv/tl + tb*tv*(2+4+4)
	if long.Summary.PeakStage != "decode" || long.Summary.PeakMemoryBytes != want {
		t.Errorf("dynamic decode peak %d at %s, want %d at decode", long.Summary.PeakMemoryBytes, long.Summary.PeakStage, want)
	}
}

// torchtitan's op-level selective checkpointing keeps, per layer, its input and the outputs of SDPA (output +
// log-sum-exp) and of every other matmul in execution order: wq (1st), wv (3rd), w1 (5th), w2 (7th).
func TestOpSelectiveRecompute(t *testing.T) {
	r := tiny(t, func(c *Config) { c.Framework, c.Training.Recompute = "torchtitan", "op_selective" })
	want := int64(2*tn*th + 2*tn*ta*td + 2*tn*tg*td + 2*tn*tf + 2*tn*th + 2*tn*ta*td + 4*tb*ta*ts)
	if got := op(t, r, "recompute_checkpoint").MemoryBytes; got != want {
		t.Errorf("op-selective layer keeps %d B, want %d", got, want)
	}
}

// torch.compile fuses the eager chains: RMSNorm keeps its 16-bit input and rstd, SwiGLU only gate and up.
func TestCompile(t *testing.T) {
	r := tiny(t, func(c *Config) { c.Training.Compile = true })
	if got, want := op(t, r, "input_norm").MemoryBytes, int64(2*tn*th+4*tn); got != want {
		t.Errorf("compiled RMSNorm keeps %d, want %d", got, want)
	}
	if got, want := op(t, r, "mlp.swiglu").MemoryBytes, int64(4*tn*tf); got != want {
		t.Errorf("compiled SwiGLU keeps %d, want %d", got, want)
	}
}

// Float8 linears keep their input cast to fp8 (1 B) and the fp8 weight cast; on an fp8 GPU only.
func TestFloat8(t *testing.T) {
	r := tiny(t, func(c *Config) { c.Training.Float8 = true })
	if got, want := op(t, r, "qkv_proj").MemoryBytes, int64(tn*th); got != want {
		t.Errorf("float8 qkv_proj keeps %d, want %d", got, want)
	}
	if got, want := op(t, r, "float8_weight_copies").MemoryBytes, int64(th*ta*td+2*th*tg*td+ta*td*th+3*th*tf); got != want {
		t.Errorf("fp8 weight copies %d, want %d", got, want)
	}
}

// torchtune's chunked-output cross entropy with E = b·s·V logits and k = 8 chunks: fp32 log-probs of every
// chunk stay saved (4E); the forward holds the 16-bit logits (2E) and one fp32 chunk (4E/k); backward one
// chunk's gradients (10E/k).
func TestChunkedOutputLoss(t *testing.T) {
	r := tiny(t, func(c *Config) { c.Training.Loss = "chunked_output" })
	E := int64(tn * tv)
	l := op(t, r, "cross_entropy")
	if l.MemoryBytes != 4*E || l.TempBytes != 2*E+4*E/8 || l.Extra["backward_temp_bytes"].(int64) != 10*E/8 {
		t.Errorf("saved %d temp %d backward %v; want %d, %d, %d", l.MemoryBytes, l.TempBytes, l.Extra["backward_temp_bytes"], 4*E, 2*E+4*E/8, 10*E/8)
	}
}

// Activation offloading leaves two layer-micro-batches of saved activations on the GPU.
func TestActivationOffload(t *testing.T) {
	deep := func(c *Config) { c.Model.NumLayers = 8 }
	on := tiny(t, func(c *Config) { deep(c); c.Training.ActivationOffload = true })
	off := tiny(t, deep)
	var layer int64
	for _, o := range off.Operators {
		if o.Phase == "forward" && o.Layer >= 0 {
			layer += o.MemoryBytes
		}
	}
	if d := off.Summary.ActivationMemoryBytes - on.Summary.ActivationMemoryBytes; d != layer*6/8 {
		t.Errorf("offloading moved %d B, want 6 of 8 layers' %d B", d, layer)
	}
}

// optimizer_in_backward frees each gradient right after its step: at most the largest parameter's gradient is
// alive, and there is no separate step (no foreach intermediates).
func TestOptimizerInBackward(t *testing.T) {
	r := tiny(t, func(c *Config) { c.Training.OptimizerInBackward = true })
	st := r.Stages[0]
	largest := int64(2 * tv * th) // the tied embedding's bf16 gradient
	if st.AtPeak.Grads > largest || op(t, r, "optimizer_step").TempBytes != 0 {
		t.Errorf("grads at peak %d (max %d), optimizer temp %d", st.AtPeak.Grads, largest, op(t, r, "optimizer_step").TempBytes)
	}
	if st.OptimizerPeak >= st.BackwardPeak {
		t.Errorf("no optimizer-step peak expected: %d vs backward %d", st.OptimizerPeak, st.BackwardPeak)
	}
}

// FSDP2 with reshard_after_forward=false keeps every layer's gathered (bf16) parameters but the one in flight
// from forward to backward: (L − 1) × layer params.
func TestFSDPReshardAfterForward(t *testing.T) {
	no := false
	r := tiny(t, func(c *Config) {
		c.Model.NumLayers = 4
		c.Training.Precision, c.Parallel.ZeroStage, c.Hardware.NumGPUs = "bf16-mixed", 3, 4
		c.Parallel.FSDPReshardAfterForward = &no
	})
	layer := int64(2*th + th*ta*td + 2*th*tg*td + ta*td*th + 3*th*tf)
	if got := op(t, r, "fsdp_unsharded_params").TempBytes; got != 3*layer*2 {
		t.Errorf("unsharded parameters kept %d, want %d", got, 3*layer*2)
	}
}

// The Gemma family: GeGLU, RMSNorm in fp32 with (1 + weight) — fp32 input and fp32 normalized output kept —
// head_dim 256; gemma-2b has 2,506,172,416 parameters (config.json dims, tied embeddings).
func TestGemmaFamily(t *testing.T) {
	r := estimate(t, func(c *Config) {
		c.Framework, c.Training.Kernels = "hf", "eager"
		c.Model = ModelConfig{Preset: "gemma-2b"}
		c.Training.SeqLength = 256
	})
	if r.Params.Total != 2_506_172_416 {
		t.Errorf("gemma-2b params %d", r.Params.Total)
	}
	if got, want := op(t, r, "input_norm").MemoryBytes, int64(8*256*2048+4*256); got != want {
		t.Errorf("Gemma norm keeps %d, want %d", got, want)
	}
	if op(t, r, "mlp.geglu").MemoryBytes != 6*256*16384 {
		t.Errorf("GeGLU keeps %d", op(t, r, "mlp.geglu").MemoryBytes)
	}
}

// Mixtral's HF dispatch holds, while its expert loop runs, the int64 one-hot expert mask (b·s·k·E) and the zeroed
// output it index_add_s into (b·s·h); the saved tensors are Megatron's (router input, fp32 probabilities,
// top-k indices and weights, the gathered tokens, expert SwiGLUs and outputs).
func TestMixtralHFDispatch(t *testing.T) {
	r := tiny(t, func(c *Config) {
		c.Model = ModelConfig{Family: "mixtral", NumLayers: tl, HiddenSize: th, NumAttentionHeads: ta, NumKVHeads: tg, FFNHiddenSize: tf, VocabSize: tv}
	})
	router := op(t, r, "moe.router")
	if want := int64(8*tn*2*8 + 2*tn*th); router.TempBytes != want {
		t.Errorf("router temporaries %d, want %d", router.TempBytes, want)
	}
	if want := int64(2*tn*th + 4*tn*8 + 8*tn*2 + 4*tn*2); router.MemoryBytes != want {
		t.Errorf("router keeps %d, want %d", router.MemoryBytes, want)
	}
}

// LoRA with gradient checkpointing: each layer keeps only its 16-bit input (the frozen embedding's output is
// made to require grad, so the checkpointed layers still run backward), the frozen embedding and output layer
// get no gradients, and one layer's LoRA activations are rebuilt at a time.
func TestLoRAWithCheckpointing(t *testing.T) {
	r := tiny(t, func(c *Config) { c.Training.LoRA, c.Training.Recompute = &LoRAConfig{Rank: 4}, "full" })
	if got, want := op(t, r, "recompute_checkpoint").MemoryBytes, int64(2*tn*th); got != want {
		t.Errorf("checkpointed LoRA layer keeps %d B, want %d", got, want)
	}
	if r.Summary.GradMemoryBytes != 4*r.LoRA.AdapterParams {
		t.Errorf("gradients %d B, want only the adapters' %d", r.Summary.GradMemoryBytes, 4*r.LoRA.AdapterParams)
	}
}

// Varying sequence lengths: the peak allocated is the longest step's, the allocator replay runs one step per
// length; an entry beyond seq_length is an error.
func TestSeqLengths(t *testing.T) {
	fixed := tiny(t, nil)
	varied := tiny(t, func(c *Config) { c.Training.SeqLengths = []int{8, ts, 16} })
	if varied.Summary.PeakMemoryBytes != fixed.Summary.PeakMemoryBytes || varied.Summary.PeakReservedBytes < fixed.Summary.PeakReservedBytes {
		t.Errorf("varied lengths: peak %d reserved %d; fixed: peak %d reserved %d", varied.Summary.PeakMemoryBytes,
			varied.Summary.PeakReservedBytes, fixed.Summary.PeakMemoryBytes, fixed.Summary.PeakReservedBytes)
	}
	_, err := ParseConfig([]byte(`{"model":{"preset":"gpt2"},"training":{"seq_length":512,"seq_lengths":[256,1024]}}`), false)
	if err == nil || !strings.Contains(err.Error(), "training.seq_lengths[1]: 1024 (must be in [1, training.seq_length = 512])") {
		t.Errorf("error %v", err)
	}
}

// Where a run that cannot fit fails: with W weights, B of buffers, embeddings keeping E and every layer keeping
// S (the per-layer sum), a GPU whose limit is W + B + E + 3.5·S must fail inside the fourth layer (index 3) of
// the first step's forward, with between W + B + E + 3·S and the limit allocated, and the failing request not
// fitting beside it.
func TestOOMPoint(t *testing.T) {
	mod := func(c *Config) { c.Model.NumLayers, c.Training.MicroBatchSize, c.Allocator.CUDAContextMiB = 8, 64, 0 }
	fits := tiny(t, mod)
	s := int64(layerBytes(fits))
	var emb int64
	for _, o := range fits.Operators {
		if o.Name == "embedding" {
			emb = o.MemoryBytes
		}
	}
	base := fits.Summary.WeightMemoryBytes + fits.Summary.OtherMemoryBytes + emb
	limit := base + 7*s/2
	r := tiny(t, func(c *Config) {
		mod(c)
		c.Hardware.Custom = &gpu.Spec{Name: "small", MemoryGiB: float64(limit) / gib, BandwidthTBs: 1, BF16TFLOPS: 10}
	})
	p := r.OOM
	if p == nil || r.Fit.Fits {
		t.Fatalf("expected a failure point: %s", r.Fit.Verdict)
	}
	lim := r.Fit.CapacityBytes
	// The report's point comes from the allocator replay, where cached blocks and segment sizes also count.
	if p.Step != 1 || p.Phase != "forward" || p.Layer != 3 || p.AllocatedBytes < base+3*s || p.AllocatedBytes > lim {
		t.Errorf("replayed failure %+v; want step 1, forward, layer 3, allocated in [%d, %d]", *p, base+3*s, lim)
	}
	// The plain walk (used where no sequence is replayed) fails at the first tensor that passes the limit.
	c := r.Config
	e := newEst(&c)
	w := e.oomPoint(r.Stages[0], 0, e.layerOps(), e.embeddingOps(), e.headOps(), lim)
	if w == nil || w.Layer != 3 || w.AllocatedBytes < base+3*s || w.AllocatedBytes > lim || w.AllocatedBytes+w.RequestBytes <= lim {
		t.Errorf("walked failure %+v; want layer 3, allocated in [%d, %d], request beyond %d", w, base+3*s, lim, lim)
	}
}

// Every framework × family × precision × LoRA combination that resolves estimates with ordered figures, and
// the allocator replay never predicts less reserved than allocated.
func TestFrameworkSweep(t *testing.T) {
	n := 0
	for _, fw := range FrameworkNames() {
		for _, preset := range []string{"gpt2", "llama3.2-1b", "qwen2.5-0.5b", "gemma-2b", "mixtral-8x7b", "pythia-1.4b"} {
			for _, prec := range []string{"bf16", "bf16-mixed", "amp-bf16", "fp32"} {
				for _, lora := range []bool{false, true} {
					c, err := DefaultConfigFor(fw)
					if err != nil {
						t.Fatal(err)
					}
					c.Model = ModelConfig{Preset: preset}
					c.Training.Precision, c.Training.GradPrecision, c.Training.SeqLength = prec, "", 512
					c.Hardware.GPU = "h200"
					if lora {
						c.Training.LoRA = &LoRAConfig{Rank: 8, BaseDtype: "nf4"}
					}
					r, err := estimateCore(c) // without the recommendations' re-estimates
					if err != nil {
						continue // e.g. LoRA under Megatron
					}
					n++
					s := r.Summary
					if s.PeakMemoryBytes < s.WeightMemoryBytes || s.PeakReservedBytes < s.PeakMemoryBytes || s.DeviceTotalBytes < s.PeakReservedBytes {
						t.Errorf("%s %s %s lora=%v: %+v", fw, preset, prec, lora, s)
					}
				}
			}
		}
	}
	if n < 150 {
		t.Errorf("only %d combinations estimated", n)
	}
}

// LoRA under FSDP (torchtune's distributed LoRA): the frozen base, the adapters, their gradients and states are
// all sharded over the data-parallel group.
func TestLoRAFSDP(t *testing.T) {
	one := tiny(t, func(c *Config) { c.Training.LoRA = &LoRAConfig{Rank: 4} })
	four := tiny(t, func(c *Config) {
		c.Training.LoRA = &LoRAConfig{Rank: 4}
		c.Parallel.ZeroStage, c.Hardware.NumGPUs = 3, 4
	})
	a, b := one.Summary, four.Summary
	if a.WeightMemoryBytes/4 != b.WeightMemoryBytes || a.GradMemoryBytes/4 != b.GradMemoryBytes || a.OptimizerMemoryBytes/4 != b.OptimizerMemoryBytes {
		t.Errorf("one GPU %d/%d/%d, FSDP over 4 %d/%d/%d (want a quarter each)", a.WeightMemoryBytes, a.GradMemoryBytes,
			a.OptimizerMemoryBytes, b.WeightMemoryBytes, b.GradMemoryBytes, b.OptimizerMemoryBytes)
	}
}

// LoRA dropout keeps, per adapter, its dropped copy of the input in the adapter dtype and a bool mask instead of
// the cast copy; LLM.int8 stores one byte per linear weight plus an fp32 scale per output row.
func TestLoRADropoutAndInt8(t *testing.T) {
	const r = 4
	nh, nr := int64(tn*th), int64(tn*r)
	d := tiny(t, func(c *Config) {
		c.Training.LoRA = &LoRAConfig{Rank: r, Dropout: 0.05, Targets: LoRATargets{"q_proj", "v_proj"}}
	})
	if got, want := op(t, d, "qkv.lora").MemoryBytes, 2*(4*nh+nh+4*nr); got != want {
		t.Errorf("q/v adapters with dropout keep %d B, want %d", got, want)
	}
	i8 := tiny(t, func(c *Config) { c.Training.LoRA = &LoRAConfig{Rank: r, BaseDtype: "int8"} })
	rows := int64(ta*td + 2*tg*td + th + 2*tf + th) // output rows of q, k, v, o, gate, up, down
	matmul := int64(th*ta*td + 2*th*tg*td + ta*td*th + 3*th*tf)
	other := i8.Params.Total - tl*matmul
	// int8 codes and one fp32 scale per output row; kbit preparation leaves the rest fp32.
	if got, want := i8.LoRA.FrozenBaseBytes, tl*(matmul+4*rows)+4*other; got != want {
		t.Errorf("int8 base %d B, want %d", got, want)
	}
}

// TestCompiledLoss: under torch.compile, F.cross_entropy(logits.float(), labels) becomes Inductor reductions
// that read the 16-bit logits in place; the partitioner saves the logits (E = b·s·V = 2·32·256 = 16,384
// elements, 2 B each) and the fp32 log-sum-exp per row (4·64 B), and the backward writes the 16-bit gradient
// (2·E) in one kernel. torchtitan's build_cross_entropy_loss compiles its loss with training.compile since April
// 2025; HF's compiled forward contains its loss; torchtune's decoder returns self.output(h).float() eagerly, so
// its compiled loss keeps fp32 logits (4·E), after a 2·E forward temporary, and returns an fp32 gradient (4·E)
// cast back to 16 bits; its chunked loss compiles compute_cross_entropy per chunk (8 chunks of 2·E/8).
//
// torchtune compiles its loss only when the loss compiles itself in place: the recipes call
// training.compile_loss(self._loss_fn) without keeping the result, which for CEWithChunkedOutputLoss replaces
// compute_cross_entropy on the loss object but for nn.CrossEntropyLoss is a compiled copy nobody calls. So with
// compile and the standard loss, torchtune's default is the eager record: bf16 logits kept with the fp32
// log-probs (6·E), a 4·E forward temporary, an 8·E backward.
func TestCompiledLoss(t *testing.T) {
	const E = tn * tv
	for _, tc := range []struct {
		name             string
		mod              func(*Config)
		saved, temp, bwd int64
		firstLife        tensorLife
	}{
		{"hf", func(c *Config) { c.Training.Compile = true }, 2*E + 4*tn, 0, 2 * E, lifeOutput},
		{"torchtitan", func(c *Config) { c.Framework, c.Training.Compile = "torchtitan", true }, 2*E + 4*tn, 0, 2 * E, lifeSaved},
		{"torchtune standard, compiled by hand", func(c *Config) {
			on := true
			c.Framework, c.Training.Compile, c.Training.Loss, c.Training.CompiledLoss = "torchtune", true, "standard", &on
		}, 4*E + 4*tn, 2 * E, 4 * E, lifeOp},
		{"torchtune chunked", func(c *Config) {
			c.Framework, c.Training.Compile, c.Training.Loss = "torchtune", true, "chunked_output"
		}, 2*E + 4*tn, 0, 2 * E / 8, lifeSaved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tiny(t, tc.mod)
			l := op(t, r, "cross_entropy")
			if l.MemoryBytes != tc.saved || l.TempBytes != tc.temp || l.Extra["backward_temp_bytes"] != tc.bwd {
				t.Errorf("loss keeps %d, temp %d, backward %v; want %d, %d, %d", l.MemoryBytes, l.TempBytes, l.Extra["backward_temp_bytes"], tc.saved, tc.temp, tc.bwd)
			}
			if got := r.Config.Training.CompiledLoss; got == nil || !*got {
				t.Errorf("compiled_loss %v, want true with compile", got)
			}
			c := r.Config
			e := newEst(&c)
			ops := e.headOps()
			if seq := ops[len(ops)-1].seq; len(seq) == 0 || seq[0].life != tc.firstLife {
				t.Errorf("loss tensors %v, want the first one of life %d", seq, tc.firstLife)
			}
		})
	}
	tune := tiny(t, func(c *Config) { c.Framework, c.Training.Compile, c.Training.Loss = "torchtune", true, "standard" })
	if got := tune.Config.Training.CompiledLoss; got == nil || *got {
		t.Errorf("torchtune standard loss: compiled_loss %v, want false (compile_loss's result is dropped)", got)
	}
	if l := op(t, tune, "cross_entropy"); l.MemoryBytes != 6*E || l.TempBytes != 4*E || l.Extra["backward_temp_bytes"] != int64(8*E) {
		t.Errorf("torchtune eager loss keeps %d, temp %d, backward %v; want %d, %d, %d", l.MemoryBytes, l.TempBytes, l.Extra["backward_temp_bytes"], 6*E, 4*E, 8*E)
	}
	// The Dec 2024 benchmark ran torchtitan with compiled blocks and an eager loss.
	off := false
	r := tiny(t, func(c *Config) { c.Framework, c.Training.Compile, c.Training.CompiledLoss = "torchtitan", true, &off })
	if l := op(t, r, "cross_entropy"); l.MemoryBytes != 4*E {
		t.Errorf("eager torchtitan loss keeps %d, want the fp32 log-probs 4·E = %d", l.MemoryBytes, 4*E)
	}
	if _, err := ParseConfig([]byte(`{"model":{"preset":"llama3.2-1b"},"training":{"compiled_loss":true}}`), false); err == nil {
		t.Error("compiled_loss without compile accepted")
	}
}

// TestKbitPreparation follows PEFT's prepare_model_for_kbit_training: the fp32 embedding returns fp32 hidden
// states and the fp32 norm weights keep the residual stream fp32, so a checkpointed layer keeps its input at
// 4·b·s·h = 4·64·64 B; the frozen fp32 output layer runs under the Trainer's bf16 autocast on a 16-bit copy of
// its weight (V·h·2 = 256·64·2 B), which the matmul keeps for the input gradient.
func TestKbitPreparation(t *testing.T) {
	r := tiny(t, func(c *Config) {
		c.Training.Recompute = "full"
		c.Training.LoRA = &LoRAConfig{Rank: 4, BaseDtype: "nf4"}
	})
	if k := r.Config.Training.LoRA.KbitPrep; k == nil || !*k {
		t.Fatalf("kbit_prep %v, want on for hf with an nf4 base", k)
	}
	if got, want := op(t, r, "recompute_checkpoint").MemoryBytes, int64(4*tn*th); got != want {
		t.Errorf("checkpointed layer input %d B, want %d (fp32 residual stream)", got, want)
	}
	if got, want := op(t, r, "lm_head").MemoryBytes, int64(tv*th*2); got != want {
		t.Errorf("output layer keeps %d B, want %d (its autocast bf16 weight copy)", got, want)
	}
	off := false
	r = tiny(t, func(c *Config) {
		c.Training.Recompute = "full"
		c.Training.LoRA = &LoRAConfig{Rank: 4, BaseDtype: "nf4", KbitPrep: &off}
	})
	if got, want := op(t, r, "recompute_checkpoint").MemoryBytes, int64(2*tn*th); got != want {
		t.Errorf("without kbit preparation the checkpoint keeps %d B, want %d", got, want)
	}
}

// TestShardedQLoRA: PEFT's FSDP and DeepSpeed QLoRA guides store the 4-bit codes in bf16
// (bnb_4bit_quant_storage), which ZeRO-3/FSDP shard like any bf16 tensor, and TRL does not call
// prepare_model_for_kbit_training for a sharded QLoRA model. uint8 storage cannot be sharded. FSDP CPU offload
// keeps every shard (base, adapters, their gradients and states) in host memory.
//
// The quantization statistics are not sharded (quantStatsWhole): transformers quantizes each weight on the GPU
// before FSDP or ZeRO-3 takes the model and moves only its data to the CPU, and bitsandbytes keeps the
// QuantState as an attribute of the parameter and its Linear4bit, which neither flattens nor partitions. On the
// tiny model (2 layers of q 64·64, k and v 64·32, o 64·64, gate, up and down 64·128: 36,864 quantized weights
// a layer) with double quantization that is 2 · 36,864 · (1/64 + 4/(64·256)) = 1,170 B on every GPU, whole;
// the rest of the single-GPU 136,978 B (codes 36,864, norms 640 and embedding and output layer 2 · 32,768 in
// bf16, fp32 adapters 2 · 4,096 · 4) halves over 2 GPUs.
func TestShardedQLoRA(t *testing.T) {
	const stats = 1170
	off := false
	one := tiny(t, func(c *Config) {
		c.Training.LoRA = &LoRAConfig{Rank: 4, BaseDtype: "nf4", KbitPrep: &off}
	})
	if got := one.Summary.WeightMemoryBytes; got != 136978 {
		t.Fatalf("single-GPU base and adapters %d B, want 136,978", got)
	}
	shard := func(c *Config) {
		c.Hardware.NumGPUs, c.Parallel.ZeroStage = 2, 3
		c.Training.LoRA = &LoRAConfig{Rank: 4, BaseDtype: "nf4", QuantStorage: "bf16"}
	}
	two := tiny(t, shard)
	if k := two.Config.Training.LoRA.KbitPrep; k == nil || *k {
		t.Errorf("kbit_prep %v for sharded QLoRA, want off", k)
	}
	if got, want := two.Summary.WeightMemoryBytes, int64((136978-stats)/2+stats); got != want {
		t.Errorf("sharded base and adapters %d B per GPU, want %d (half of all but the %d B of statistics)", got, want, stats)
	}
	if _, err := ParseConfig([]byte(`{"framework":"hf","model":{"preset":"llama3-8b"},"training":{"lora":{"rank":8,"base_dtype":"nf4"}},"parallel":{"zero_stage":3},"hardware":{"num_gpus":2}}`), false); err == nil {
		t.Error("uint8 NF4 storage under ZeRO-3 accepted")
	}
	offload := tiny(t, func(c *Config) {
		shard(c)
		c.Parallel.FSDPOffload = true
	})
	if s := offload.Summary; s.WeightMemoryBytes != stats || s.GradMemoryBytes != 0 || s.OptimizerMemoryBytes != 0 {
		t.Errorf("offloaded shards on the GPU: weights %d (want the %d B of statistics), grads %d, states %d", s.WeightMemoryBytes, stats, s.GradMemoryBytes, s.OptimizerMemoryBytes)
	}
	// The allocation sequence creates each weight's QuantState tensors as quantize_4bit leaves them: the NF4
	// code table (64 B), the offset (4 B), the fp32 absmax of the 256-block groups and the uint8 absmax, one
	// per 64 weights. Per layer: q and o 64 blocks (4 B of fp32 absmax each), k and v 32 (4 B), gate, up and
	// down 128 (4 B): 7 · (64 + 4 + 4) + 64 + 32 + 32 + 64 + 3 · 128 = 1,080 B; with the offloaded shards that
	// is all buildWeights puts on the GPU, 2,160 B for 2 layers.
	cfg := offload.Config
	e := newEst(&cfg)
	s := newSeq()
	e.buildWeights(s, embeddingParams(e.x), layerParams(e.x), headParams(e.x, 1))
	if s.allocated != 2160 {
		t.Errorf("the model as built leaves %d B on the GPU, want 2,160 (the quantization statistics)", s.allocated)
	}
	// FSDP all-gathers the flat parameter, which holds the packed codes without the statistics: a layer's
	// 36,864 · 0.5 B and its two bf16 norms of 64.
	var gathered int64
	for _, p := range layerParams(e.x) {
		gathered += e.gatherBytes(p, true)
	}
	if want := int64(36864/2 + 2*64*2); gathered != want {
		t.Errorf("one layer gathers %d B, want %d", gathered, want)
	}
}

// TestGemma2Family follows transformers' modeling_gemma2.py on the tiny model (b 2, s 32, 4 heads of 16 with 2
// KV heads, eager attention):
//   - four RMSNorms per layer (input, post_attention on the attention output, pre_ and post_feedforward): the
//     two sandwich norms are records of their own, each keeping, like Gemma's, its fp32 input and fp32
//     normalized tensor and the rstd: 8·b·s·h + 4·b·s = 8·64·64 + 256 B;
//   - soft-capped scores: q·kᵀ·scale, /50, tanh (kept), ·50, + mask, fp32 softmax (kept), bf16 cast (kept), so
//     the eager attention keeps q (b·s·a·d·2 = 8,192 B), K and V repeated to the 4 heads (8,192 B each), the tanh
//     scores (b·a·s²·2 = 16,384 B), the fp32 probabilities (32,768 B) and the bf16 ones (16,384 B);
//   - the output logits are soft-capped: tanh's output (b·s·V·2 = 32,768 B) is kept for its backward.
func TestGemma2Family(t *testing.T) {
	r := tiny(t, func(c *Config) {
		c.Model = ModelConfig{Family: "gemma2", NumLayers: tl, HiddenSize: th, NumAttentionHeads: ta, NumKVHeads: tg, HeadDim: td,
			FFNHiddenSize: tf, VocabSize: tv, TieWordEmbeddings: true}
		c.Training.Attention = "eager"
	})
	for _, name := range []string{"attn_out_norm", "mlp_out_norm"} {
		if got, want := op(t, r, name).MemoryBytes, int64(8*tn*th+4*tn); got != want {
			t.Errorf("%s keeps %d B, want %d", name, got, want)
		}
	}
	if got, want := op(t, r, "attention").MemoryBytes, int64(8192+2*8192+16384+32768+16384); got != want {
		t.Errorf("soft-capped eager attention keeps %d B, want %d", got, want)
	}
	if got, want := op(t, r, "final_logit_softcap").MemoryBytes, int64(2*tn*tv); got != want {
		t.Errorf("final logit soft-capping keeps %d B, want %d", got, want)
	}
	if got, want := r.Params.PerLayer, int64(4*th+th*ta*td+2*th*tg*td+ta*td*th+3*th*tf); got != want {
		t.Errorf("%d parameters per layer, want %d (four norms)", got, want)
	}
}

// TestPhi3Family: transformers' modeling_phi3.py computes q, k, v with one qkv_proj and gate, up with one
// gate_up_proj, so LoRA adapts the fused linears: per layer (tiny model, r 4) qkv_proj 4·64 + (64 + 2·32)·4,
// o_proj 4·64 + 64·4, gate_up_proj 4·64 + 2·128·4 and down_proj 4·128 + 64·4 = 3,328 adapter parameters,
// where Llama's separate projections carry 4,096.
func TestPhi3Family(t *testing.T) {
	mk := func(family string) *Report {
		return tiny(t, func(c *Config) {
			c.Model.Family = family
			c.Training.LoRA = &LoRAConfig{Rank: 4}
		})
	}
	if got := mk("phi3").LoRA.AdapterParams; got != tl*3328 {
		t.Errorf("phi3 adapters %d, want %d", got, tl*3328)
	}
	if got := mk("llama").LoRA.AdapterParams; got != tl*4096 {
		t.Errorf("llama adapters %d, want %d", got, tl*4096)
	}
	if got := mk("phi3").Config.Training.LoRA.Targets; strings.Join(got, ",") != "qkv_proj,o_proj,gate_up_proj,down_proj" {
		t.Errorf("phi3 targets %v", got)
	}
}
