package static

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// resolveExtensions resolves and validates what needs the resolved parallel layout: framework semantics, LoRA,
// the torchtitan/torchtune knobs, and the derived-size limits.
func (c *Config) resolveExtensions() error {
	t := &c.Training
	p := &c.Parallel
	if c.Framework == "torchtitan" && p.ZeroStage == 3 && p.DP*p.CP == 1 {
		// torchtitan applies FSDP only with a data-parallel shard degree > 1; on one GPU it trains the fp32 model
		// under autocast (maybe_enable_amp).
		p.ZeroStage = 0
		if t.Precision == "bf16-mixed" {
			t.Precision, t.GradPrecision = "amp-bf16", "fp32"
		}
	}
	if err := c.resolveFramework(); err != nil {
		return err
	}
	if t.Float8 && c.Mode == "train" && t.LoRA != nil {
		return fmt.Errorf("training.float8: float8 training of a frozen LoRA base is not supported by torchao; drop float8 or lora")
	}
	if t.LoRA != nil {
		if err := t.LoRA.resolve(c); err != nil {
			return err
		}
	}
	if err := c.checkGPUSupport(); err != nil {
		return err
	}
	return c.checkDerived()
}

// checkGPUSupport refuses dtypes and kernels the GPU does not have: bf16 needs NVIDIA compute capability 8.0
// (Ampere; the catalogue lists no bf16 rate for older parts), and the flash kernels (FlashAttention-2,
// PyTorch's SDPA flash, cuDNN attention, Transformer Engine's fused attention) need sm 8.0 too.
func (c *Config) checkGPUSupport() error {
	g := c.GPU()
	if !g.HasBF16() {
		t, in := &c.Training, &c.Inference
		why := fmt.Sprintf("%s has no bf16 (compute capability %.1f; bf16 needs 8.0, Ampere)", g.Name, g.ComputeCapability)
		switch {
		case c.Mode == "inference" && (in.WeightDtype == "bf16" || in.KVCache.Dtype == "bf16"):
			return fmt.Errorf("inference.weight_dtype / kv_cache.dtype: bf16: %s; use fp16", why)
		case c.Mode != "inference" && (c.actDtype() == "bf16" || c.paramDtype() == "bf16"):
			return fmt.Errorf("training.precision: %s: %s; use fp16-mixed, amp-fp16 or fp32", t.Precision, why)
		case c.Mode != "inference" && t.LoRA != nil && (t.LoRA.AdapterDtype == "bf16" || t.LoRA.BaseDtype == "bf16"):
			return fmt.Errorf("training.lora: bf16 adapters or base: %s; use fp16 or fp32", why)
		}
	}
	if cc := g.ComputeCapability; cc > 0 && cc < 8 {
		switch a := c.Training.Attention; {
		case a == "flash" || a == "cudnn":
			return fmt.Errorf("training.attention: %s needs compute capability 8.0 (Ampere); %s is %.1f: use sdpa (PyTorch then picks the memory-efficient kernel) or efficient",
				a, g.Name, cc)
		case c.Training.TransformerEngine && c.Mode != "inference":
			return fmt.Errorf("training.transformer_engine: Transformer Engine needs compute capability 8.0 (Ampere); %s is %.1f", g.Name, cc)
		}
	}
	return nil
}

// LoRAConfig describes PEFT LoRA / QLoRA fine-tuning: the base model is frozen (no gradients or optimizer
// states), low-rank adapters A (r × in) and B (out × r) on the target linears train.
type LoRAConfig struct {
	Rank  int     `json:"rank"`
	Alpha float64 `json:"alpha"` // scaling alpha/rank; does not change memory
	// Targets are the adapted linears: "all-linear" (PEFT's every linear except the output layer) or module
	// names: q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj (GPT-2's c_attn, c_proj, c_fc,
	// mlp.c_proj map onto the same projections).
	Targets LoRATargets `json:"targets"`
	// AdapterDtype is the adapters' weight, gradient and optimizer-state dtype; auto fp32 (PEFT's
	// autocast_adapter_dtype=True upcasts bf16/fp16 adapters).
	AdapterDtype string `json:"adapter_dtype"`
	// BaseDtype is the frozen base: bf16 | fp16 | fp32, or quantized by bitsandbytes: nf4 (QLoRA 4-bit, blocks
	// of 64 with an absmax each) | int8 (LLM.int8, one fp32 scale per row). Auto: the training precision.
	BaseDtype string `json:"base_dtype"`
	// DoubleQuant quantizes NF4's absmax to 8 bits in blocks of 256 (bnb_4bit_use_double_quant); auto true.
	DoubleQuant *bool   `json:"double_quant,omitempty"`
	Dropout     float64 `json:"dropout"` // lora_dropout: > 0 keeps a dropped copy of each adapter input
	// QuantStorage is the dtype bitsandbytes packs the 4-bit codes in (bnb_4bit_quant_storage): uint8 (auto),
	// or bf16/fp16/fp32, which FSDP and ZeRO-3 can shard like any 16/32-bit tensor (same bytes per weight).
	// torchtune's NF4 (torchao NF4Tensor) shards under FSDP2 either way.
	QuantStorage string `json:"quant_storage,omitempty"`
	// KbitPrep is PEFT's prepare_model_for_kbit_training, which upcasts every parameter that is not 4/8-bit
	// (embeddings, norms, output layer) to fp32. Auto: on for hf and deepspeed with an nf4/int8 base, as TRL's
	// SFTTrainer applies it, except sharded QLoRA (FSDP/ZeRO-3 with a 16/32-bit quant_storage), where it does not.
	KbitPrep *bool `json:"kbit_prep,omitempty"`
}

// LoRATargets accepts "all-linear" or a list of module names.
type LoRATargets []string

// UnmarshalJSON reads either the string "all-linear" (any single name) or a list of names.
func (l *LoRATargets) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if strings.HasPrefix(s, "\"") {
		var one string
		if err := json.Unmarshal(b, &one); err != nil {
			return err
		}
		*l = LoRATargets{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("expected \"all-linear\" or a list of module names, got %s", s)
	}
	*l = many
	return nil
}

// loraProjections are the projections of a layer an adapter can sit on, in memscan's names.
var loraProjections = []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}

// loraAliases maps other families' module names onto memscan's projections.
var loraAliases = map[string][]string{
	"c_attn": {"q_proj", "k_proj", "v_proj"}, "query_key_value": {"q_proj", "k_proj", "v_proj"},
	"qkv_proj": {"q_proj", "k_proj", "v_proj"}, "gate_up_proj": {"gate_proj", "up_proj"},
	"c_proj": {"o_proj", "down_proj"}, "dense": {"o_proj"}, "attn.c_proj": {"o_proj"}, "mlp.c_proj": {"down_proj"},
	"c_fc": {"up_proj"}, "dense_h_to_4h": {"up_proj"}, "dense_4h_to_h": {"down_proj"},
	"fc1": {"up_proj"}, "fc2": {"down_proj"}, "w1": {"gate_proj"}, "w3": {"up_proj"}, "w2": {"down_proj"},
	"wq": {"q_proj"}, "wk": {"k_proj"}, "wv": {"v_proj"}, "wo": {"o_proj"},
}

func (l *LoRAConfig) resolve(c *Config) error {
	if l.Rank <= 0 {
		return fmt.Errorf("training.lora.rank: %d (must be > 0)", l.Rank)
	}
	if l.Alpha < 0 || math.IsNaN(l.Alpha) {
		return fmt.Errorf("training.lora.alpha: %g (must be >= 0)", l.Alpha)
	}
	if l.Alpha == 0 {
		l.Alpha = float64(2 * l.Rank)
	}
	if l.Dropout < 0 || l.Dropout >= 1 {
		return fmt.Errorf("training.lora.dropout: %g (must be in [0, 1))", l.Dropout)
	}
	if len(l.Targets) == 0 {
		l.Targets = LoRATargets{"all-linear"}
	}
	var resolved []string
	seen := map[string]bool{}
	for _, n := range l.Targets {
		var add []string
		switch {
		case n == "all-linear":
			add = loraProjections
		case slices.Contains(loraProjections, n):
			add = []string{n}
		default:
			a, ok := loraAliases[n]
			if !ok {
				return fmt.Errorf("training.lora.targets: unknown module %q (known: all-linear, %s, or %s)", n,
					strings.Join(loraProjections, ", "), strings.Join(slices.Sorted(maps.Keys(loraAliases)), ", "))
			}
			add = a
		}
		for _, a := range add {
			if !seen[a] {
				seen[a] = true
				resolved = append(resolved, a)
			}
		}
	}
	if c.Model.Family == "phi3" {
		// Phi-3 has no separate q/k/v or gate/up linears: adapting any of them adapts the fused one.
		var fused []string
		for _, n := range resolved {
			switch n {
			case "q_proj", "k_proj", "v_proj":
				n = "qkv_proj"
			case "gate_proj", "up_proj":
				n = "gate_up_proj"
			}
			if !slices.Contains(fused, n) {
				fused = append(fused, n)
			}
		}
		resolved = fused
	}
	l.Targets = resolved
	if l.AdapterDtype == "" {
		// PEFT upcasts 16-bit adapters to fp32 (autocast_adapter_dtype); torchtune builds them in the model dtype.
		l.AdapterDtype = "fp32"
		if c.Framework == "torchtune" {
			l.AdapterDtype = c.actDtype()
		}
	}
	if err := oneOf("training.lora.adapter_dtype", l.AdapterDtype, "fp32", "bf16", "fp16"); err != nil {
		return err
	}
	if l.BaseDtype == "" {
		l.BaseDtype = c.paramDtype()
	}
	if err := oneOf("training.lora.base_dtype", l.BaseDtype, "bf16", "fp16", "fp32", "nf4", "int8"); err != nil {
		return err
	}
	if l.DoubleQuant == nil {
		v := l.BaseDtype == "nf4"
		l.DoubleQuant = &v
	} else if *l.DoubleQuant && l.BaseDtype != "nf4" {
		return fmt.Errorf("training.lora.double_quant: applies to base_dtype nf4, not %s", l.BaseDtype)
	}
	if c.Parallel.TP > 1 || c.Parallel.PP > 1 {
		return fmt.Errorf("training.lora: PEFT LoRA is modelled for data parallelism only (tp = pp = 1)")
	}
	quantized := l.BaseDtype == "nf4" || l.BaseDtype == "int8"
	if l.QuantStorage == "" && quantized {
		l.QuantStorage = "uint8"
	}
	if l.QuantStorage != "" {
		if !quantized {
			return fmt.Errorf("training.lora.quant_storage: applies to base_dtype nf4 or int8, not %s", l.BaseDtype)
		}
		if err := oneOf("training.lora.quant_storage", l.QuantStorage, "uint8", "bf16", "fp16", "fp32"); err != nil {
			return err
		}
	}
	sharded := c.Parallel.ZeroStage == 3
	if quantized && sharded && l.QuantStorage == "uint8" && c.Framework != "torchtune" {
		return fmt.Errorf("training.lora.quant_storage: uint8 bitsandbytes weights cannot be sharded by ZeRO-3/FSDP; store them in bf16 (bnb_4bit_quant_storage) as PEFT's FSDP/DeepSpeed QLoRA guides do")
	}
	if l.KbitPrep == nil {
		v := quantized && !sharded && (c.Framework == "hf" || c.Framework == "deepspeed")
		l.KbitPrep = &v
	} else if *l.KbitPrep && !quantized {
		return fmt.Errorf("training.lora.kbit_prep: prepares a quantized (nf4/int8) base, not %s", l.BaseDtype)
	}
	return nil
}
