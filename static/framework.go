package static

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// A framework is the training stack whose defaults memscan assumes for every key a config leaves out. The
// defaults are what each stack's own training loop does when the user sets nothing (sources in the comments);
// explicit config keys and flags override them.
type framework struct {
	doc   string
	apply func(c *Config)
}

var frameworks = map[string]framework{
	// Megatron-LM (megatron/training/arguments.py, megatron/core): --bf16 with fp32 main gradients
	// (accumulate_allreduce_grads_in_fp32 is forced on with bf16) in one contiguous DDP buffer, Transformer Engine
	// layers (--transformer-impl transformer_engine) with fused attention and fused kernels, Apex/TE FusedAdam,
	// vocab-parallel cross entropy that keeps the fp32 softmax; --recompute-granularity selective recomputes the
	// core attention only.
	"megatron": {"Megatron-LM: bf16 params + fp32 main grads in a persistent buffer, TE fused kernels and attention, FusedAdam, vocab-parallel cross entropy; selective recompute = core attention", func(c *Config) {
		t := &c.Training
		t.Precision, t.Optimizer, t.OptimizerImpl, t.Attention, t.Kernels, t.Loss = "bf16-mixed", "adamw", "fused", "flash", "fused", "fused"
		t.TransformerEngine = true
		c.Parallel.GradBuffer = "persistent"
		c.Inference.KVCache.Implementation = "static"
	}},
	// Hugging Face transformers (plain loop or Trainer, model loaded with torch_dtype=bfloat16): eager PyTorch
	// modules (RMSNorm upcasts to fp32, unfused SwiGLU/GeLU chains), attn_implementation="sdpa" (PyTorch picks the
	// kernel), ForCausalLMLoss = logits.float() + F.cross_entropy, torch.optim.AdamW (foreach on CUDA),
	// gradients allocated in backward and dropped by zero_grad(set_to_none=True); gradient_checkpointing
	// checkpoints every decoder layer (full); generate() uses DynamicCache.
	"hf": {"Hugging Face transformers: eager modules, SDPA, logits.float() cross entropy, torch AdamW foreach, on-demand gradients; recompute full = gradient_checkpointing per decoder layer; DynamicCache", func(c *Config) {
		t := &c.Training
		t.Precision, t.Optimizer, t.OptimizerImpl, t.Attention, t.Kernels, t.Loss = "bf16", "adamw", "foreach", "sdpa", "eager", "standard"
		c.Parallel.GradBuffer = "on_demand"
		c.Inference.KVCache.Implementation = "dynamic"
	}},
	// torchtitan (torchtitan/config/job_config.py, torchtitan/models/llama3): FSDP2 over all data-parallel ranks
	// with MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32), so the sharded fp32 parameter is the master;
	// AdamW implementation "fused"; SDPA attention; cross_entropy on pred.float(); RMSNorm, rotary embedding and
	// SwiGLU as eager PyTorch ops (models/norms.py, then nn.RMSNorm), fused only under training.compile;
	// activation_checkpoint selective with option "op" = the per-op policy (op_selective); its launcher
	// (run_train.sh, run_llama_train.sh) sets PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True".
	"torchtitan": {"torchtitan: FSDP2 (fp32 sharded master, bf16 compute), fused AdamW, SDPA, eager norms until compiled, fp32 cross entropy; selective = per-op policy (op_selective); expandable segments", func(c *Config) {
		t := &c.Training
		t.Precision, t.Optimizer, t.OptimizerImpl, t.Attention, t.Kernels, t.Loss = "bf16-mixed", "adamw", "fused", "sdpa", "eager", "standard"
		c.Parallel.ZeroStage, c.Parallel.GradBuffer = 3, "on_demand"
		c.Allocator.ExpandableSegments = true // run_train.sh: PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True"
	}},
	// torchtune (recipes/full_finetune_*.py, configs llama3_1/8B_full*.yaml): pure bf16 weights (dtype: bf16),
	// torch AdamW fused, CEWithChunkedOutputLoss (8 output chunks upcast one at a time), torchtune's own
	// RMSNorm (fp32 upcast, eager) and FeedForward, SDPA (flex attention for packed samples),
	// enable_activation_checkpointing = every transformer layer (full); FSDP2 across GPUs.
	"torchtune": {"torchtune: pure bf16, fused AdamW, chunked-output cross entropy (8 chunks), eager RMSNorm, SDPA; activation checkpointing = full per layer; FSDP2 across GPUs", func(c *Config) {
		t := &c.Training
		t.Precision, t.Optimizer, t.OptimizerImpl, t.Attention, t.Kernels, t.Loss = "bf16", "adamw", "fused", "sdpa", "eager", "chunked_output"
		t.Recompute, t.LossChunks = "full", 8
		c.Parallel.GradBuffer = "on_demand"
	}},
	// DeepSpeed with a Hugging Face model (deepspeed/runtime/zero/stage_1_and_2.py, bf16 config): bf16
	// parameters and gradients, fp32 master weights and Adam states kept by the ZeRO optimizer (16 B/param
	// before sharding, the ZeRO paper's K = 12), FusedAdam, reduce buckets of 5e8 elements, HF modules and loss.
	"deepspeed": {"DeepSpeed (+HF model): bf16 params and grads, fp32 master + Adam states in the ZeRO optimizer (ZeRO-2 unless set), FusedAdam, 5e8-element buckets, HF eager modules and loss", func(c *Config) {
		t := &c.Training
		t.Precision, t.GradPrecision, t.Optimizer, t.OptimizerImpl, t.Attention, t.Kernels, t.Loss = "bf16-mixed", "bf16", "adamw", "fused", "sdpa", "eager", "standard"
		c.Parallel.ZeroStage, c.Parallel.GradBuffer = 2, "on_demand"
		c.Inference.KVCache.Implementation = "dynamic"
	}},
}

// FrameworkNames lists the known frameworks, sorted.
func FrameworkNames() []string { return slices.Sorted(maps.Keys(frameworks)) }

// FrameworkDoc is the one-line description of a framework's defaults ("" for an unknown name).
func FrameworkDoc(name string) string { return frameworks[name].doc }

// ApplyFramework sets c.Framework and overwrites the keys that framework decides with its defaults; call it
// before setting explicit keys (ParseConfig does). The empty name keeps the current values.
func (c *Config) ApplyFramework(name string) error {
	if name == "" {
		c.Framework = ""
		return nil
	}
	fw, ok := frameworks[name]
	if !ok {
		return fmt.Errorf("framework: %q (must be one of %s)", name, strings.Join(FrameworkNames(), ", "))
	}
	c.Framework = name
	fw.apply(c)
	return nil
}

// DefaultConfigFor is DefaultConfig with a framework's defaults applied.
func DefaultConfigFor(name string) (Config, error) {
	c := DefaultConfig()
	err := c.ApplyFramework(name)
	return c, err
}

// resolveFramework maps each framework's meaning of the recompute option onto memscan's and rejects the
// combinations a framework cannot run.
func (c *Config) resolveFramework() error {
	fw := c.Framework
	if fw != "" {
		if _, ok := frameworks[fw]; !ok {
			return fmt.Errorf("framework: %q (must be one of %s)", fw, strings.Join(FrameworkNames(), ", "))
		}
	}
	t := &c.Training
	switch {
	case t.Recompute == "selective" && (fw == "torchtitan" || fw == "torchtune"):
		// torchtitan's (and torchtune's copy of it) selective AC with option "op" is the per-op policy.
		t.Recompute = "op_selective"
	case t.Recompute == "selective" && (fw == "hf" || fw == "deepspeed"):
		return fmt.Errorf("training.recompute: selective is Megatron's core-attention recompute; %s's gradient checkpointing recomputes whole layers (use full)", fw)
	case t.Recompute == "op_selective" && (fw == "megatron" || fw == "hf" || fw == "deepspeed"):
		return fmt.Errorf("training.recompute: op_selective is torchtitan's per-op checkpoint policy, which %s does not have (use %s)", fw, map[string]string{"megatron": "selective or full", "hf": "full", "deepspeed": "full"}[fw])
	}
	if t.Float8 {
		g := c.GPU()
		if !g.FP8Capable() {
			return fmt.Errorf("training.float8: %s has no fp8 tensor cores (float8 training needs compute capability 8.9 or later: L4, L40S, H100, H200, B200)", g.Name)
		}
		if c.paramDtype() == "fp32" && !c.amp() {
			return fmt.Errorf("training.float8: float8 linears need bf16 compute (precision bf16, bf16-mixed or amp-bf16), not %s", t.Precision)
		}
	}
	if t.PackedSequences && t.Attention == "flash" {
		return fmt.Errorf("training.attention: flash cannot take the block-causal mask of packed sequences (use sdpa, flex or efficient)")
	}
	if t.LoRA != nil && fw == "megatron" {
		return fmt.Errorf("training.lora: Megatron-LM has no LoRA; use framework hf (PEFT) or torchtune")
	}
	if t.OptimizerInBackward && c.Parallel.PP > 1 {
		return fmt.Errorf("training.optimizer_in_backward: cannot step inside backward with pipeline parallelism (gradients of several micro-batches accumulate)")
	}
	if t.OptimizerInBackward && c.Parallel.NumMicrobatches > 1 {
		return fmt.Errorf("training.optimizer_in_backward: gradient accumulation over %d micro-batches needs the gradients kept until the step", c.Parallel.NumMicrobatches)
	}
	if c.Parallel.FSDPOffload && c.Parallel.ZeroStage != 3 {
		return fmt.Errorf("parallel.fsdp_offload: applies to FSDP (parallel.zero_stage 3), not zero_stage %d", c.Parallel.ZeroStage)
	}
	if r := c.Parallel.FSDPReshardAfterForward; r != nil && c.Parallel.ZeroStage != 3 {
		return fmt.Errorf("parallel.fsdp_reshard_after_forward: applies to FSDP (parallel.zero_stage 3), not zero_stage %d", c.Parallel.ZeroStage)
	}
	return nil
}
