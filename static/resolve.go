package static

import (
	"fmt"
	"strings"

	"github.com/memscan/memscan/gpu"
)

// Resolve fills auto values (derived dims, dp, microbatches, dtypes, allocator assumptions) and validates the
// config. It is idempotent; call it again after changing fields. Sections resolve in dependency order: the model
// first (training and parallelism check against its sizes), the parallel layout after training (micro-batches
// come from the global batch). The first problem found is returned, naming its key.
func (c *Config) Resolve() error {
	for _, step := range []func() error{
		c.checkLimits,
		c.resolveModel,
		c.resolveTraining,
		c.resolveInference,
		c.resolveParallel,
		c.validateHardware,
		c.validateAllocator,
		c.resolveExtensions,
		c.validateCorrections,
	} {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// resolveModel expands a preset or size, fills the architecture defaults of the model type and derives the
// dimensions left at 0.
func (c *Config) resolveModel() error {
	m := &c.Model
	empty, err := m.expandPreset()
	if err != nil {
		return err
	}
	if err := applyFamily(m); err != nil {
		return err
	}
	m.defaultArchitecture()
	if err := m.validateArchitecture(empty); err != nil {
		return err
	}
	if err := m.deriveSizes(c.Training.SeqLength); err != nil {
		return err
	}
	return m.validateSizes()
}

// expandPreset replaces a model given only by preset or size with the full model; empty reports whether the
// config named no dimensions of its own.
func (m *ModelConfig) expandPreset() (empty bool, err error) {
	empty = m.NumLayers == 0 && m.HiddenSize == 0 && m.VocabSize == 0
	if m.Preset != "" && empty {
		pm, err := Preset(m.Preset)
		if err != nil {
			return empty, fmt.Errorf("model.preset: %w", err)
		}
		*m = pm
	}
	if m.SizeBillions != 0 && empty {
		pm, err := ModelForSize(m.SizeBillions)
		if err != nil {
			return empty, fmt.Errorf("model.size_billions: %w", err)
		}
		*m = pm
	}
	return empty, nil
}

// defaultArchitecture fills the type and the per-type norm, activation and position embedding.
func (m *ModelConfig) defaultArchitecture() {
	if m.Type == "" {
		m.Type = "llama"
	}
	if m.NumKVHeads == 0 {
		m.NumKVHeads = m.NumAttentionHeads
	}
	if m.Norm == "" {
		m.Norm = map[string]string{"llama": "rmsnorm", "gpt": "layernorm"}[m.Type]
	}
	if m.Activation == "" {
		m.Activation = map[string]string{"llama": "swiglu", "gpt": "gelu"}[m.Type]
	}
	if m.PositionEmbedding == "" {
		m.PositionEmbedding = map[string]string{"llama": "rope", "gpt": "learned"}[m.Type]
	}
}

// validateArchitecture checks the named choices and the basic dimensions every model needs.
func (m *ModelConfig) validateArchitecture(empty bool) error {
	for _, ch := range []struct {
		key, v string
		ok     []string
	}{
		{"model.type", m.Type, []string{"llama", "gpt"}},
		{"model.norm", m.Norm, []string{"rmsnorm", "layernorm"}},
		{"model.activation", m.Activation, []string{"swiglu", "geglu", "gelu", "gelu_new", "squared-relu"}},
		{"model.position_embedding", m.PositionEmbedding, []string{"rope", "learned"}},
	} {
		if err := oneOf(ch.key, ch.v, ch.ok...); err != nil {
			return err
		}
	}
	for _, p := range []struct {
		key string
		v   int
	}{{"model.num_layers", m.NumLayers}, {"model.hidden_size", m.HiddenSize},
		{"model.num_attention_heads", m.NumAttentionHeads}, {"model.vocab_size", m.VocabSize}} {
		if p.v <= 0 {
			if p.v == 0 && empty && p.key == "model.num_layers" {
				return fmt.Errorf("%s: %d (must be > 0; set model.preset, model.size_billions or explicit dimensions)", p.key, p.v)
			}
			return fmt.Errorf("%s: %d (must be > 0)", p.key, p.v)
		}
	}
	if m.NumKVHeads < 0 {
		return fmt.Errorf("model.num_kv_heads: %d (must be > 0)", m.NumKVHeads)
	}
	if m.NumAttentionHeads%m.NumKVHeads != 0 {
		return fmt.Errorf("model.num_kv_heads: %d does not divide model.num_attention_heads (%d)", m.NumKVHeads, m.NumAttentionHeads)
	}
	return nil
}

// deriveSizes fills head, FFN and expert sizes left at 0 from the validated architecture, and the learned
// position table from the sequence length.
func (m *ModelConfig) deriveSizes(seqLength int) error {
	if m.HeadDim == 0 {
		if m.HiddenSize%m.NumAttentionHeads != 0 {
			return fmt.Errorf("model.num_attention_heads: %d does not divide model.hidden_size (%d); set model.head_dim explicitly", m.NumAttentionHeads, m.HiddenSize)
		}
		m.HeadDim = m.HiddenSize / m.NumAttentionHeads
	}
	if m.FFNHiddenSize == 0 {
		if m.Activation == "swiglu" || m.Activation == "geglu" {
			// LLaMA rule: 2/3 of 4h, rounded up to a multiple of 256.
			m.FFNHiddenSize = (8*m.HiddenSize/3 + 255) / 256 * 256
		} else {
			m.FFNHiddenSize = 4 * m.HiddenSize
		}
	}
	if m.NumExperts > 0 {
		if m.MoETopK == 0 {
			m.MoETopK = min(2, m.NumExperts)
		}
		if m.MoEFFNHiddenSize == 0 {
			m.MoEFFNHiddenSize = m.FFNHiddenSize
		}
	}
	if m.MoECapacityFactor == 0 {
		m.MoECapacityFactor = 1
	}
	if m.PositionEmbedding == "learned" && m.MaxPositionEmbeddings == 0 {
		m.MaxPositionEmbeddings = seqLength
	}
	return nil
}

// validateSizes checks the derived and explicit sizes.
func (m *ModelConfig) validateSizes() error {
	if m.HeadDim < 0 {
		return fmt.Errorf("model.head_dim: %d (must be > 0)", m.HeadDim)
	}
	if m.FFNHiddenSize < 0 {
		return fmt.Errorf("model.ffn_hidden_size: %d (must be > 0)", m.FFNHiddenSize)
	}
	if m.NumExperts < 0 || m.MoETopK < 0 || m.SharedExperts < 0 || m.MoEFFNHiddenSize < 0 {
		return fmt.Errorf("model: num_experts, moe_top_k, shared_experts and moe_ffn_hidden_size must be >= 0")
	}
	if m.NumExperts > 0 && m.MoETopK > m.NumExperts {
		return fmt.Errorf("model.moe_top_k: %d exceeds model.num_experts (%d)", m.MoETopK, m.NumExperts)
	}
	if m.MoECapacityFactor < 0 {
		return fmt.Errorf("model.moe_capacity_factor: %g (must be > 0)", m.MoECapacityFactor)
	}
	if m.MakeVocabDivisibleBy < 0 {
		return fmt.Errorf("model.make_vocab_size_divisible_by: %d (must be >= 0)", m.MakeVocabDivisibleBy)
	}
	return nil
}

// resolveTraining fills the gradient dtype and loss chunk and checks the mode and the training section.
func (c *Config) resolveTraining() error {
	t := &c.Training
	if t.Precision == "amp" {
		t.Precision = "amp-bf16" // torch.autocast's default CUDA dtype since bf16 GPUs
	}
	if t.Attention == "eager" {
		// HF attn_implementation="eager": unfused attention in the eager modules (fp32 softmax copy kept).
		t.Attention, t.Kernels = "standard", "eager"
	}
	if t.GradPrecision == "" {
		switch t.Precision {
		case "fp32", "bf16-mixed", "fp16-mixed", "amp-bf16", "amp-fp16":
			t.GradPrecision = "fp32"
		default:
			t.GradPrecision = t.Precision
		}
	}
	if t.CompiledLoss == nil {
		v := t.Compile // torchtitan (since April 2025), torchtune's compile_loss and HF's compiled forward
		if c.Framework == "torchtune" && t.Loss != "chunked_output" {
			// torchtune's recipes call training.compile_loss(self._loss_fn) and drop what it returns: its own
			// chunked loss compiles compute_cross_entropy in place, torch.compile(nn.CrossEntropyLoss()) returns
			// a compiled copy nobody keeps, so a standard loss runs eager.
			v = false
		}
		t.CompiledLoss = &v
	}
	if *t.CompiledLoss && !t.Compile {
		return fmt.Errorf("training.compiled_loss: needs training.compile")
	}
	if t.LossChunkTokens == 0 {
		t.LossChunkTokens = 1024
	}
	if t.LossChunks == 0 {
		t.LossChunks = 8
	}
	return c.validateTraining()
}

func (c *Config) validateTraining() error {
	m, t := &c.Model, &c.Training
	if err := oneOf("mode", c.Mode, "train", "inference"); err != nil {
		return err
	}
	if t.MicroBatchSize <= 0 {
		return fmt.Errorf("training.micro_batch_size: %d (must be > 0)", t.MicroBatchSize)
	}
	if t.SeqLength <= 0 {
		return fmt.Errorf("training.seq_length: %d (must be > 0)", t.SeqLength)
	}
	if m.PositionEmbedding == "learned" && c.Mode == "train" && t.SeqLength > m.MaxPositionEmbeddings {
		return fmt.Errorf("training.seq_length: %d exceeds model.max_position_embeddings (%d) of the learned position table", t.SeqLength, m.MaxPositionEmbeddings)
	}
	if t.GlobalBatchSize < 0 || t.TrainSteps < 0 || t.TrainTokens < 0 || t.LossChunkTokens < 0 || t.RecomputeLayers < 0 {
		return fmt.Errorf("training: global_batch_size, train_steps, train_tokens, loss_chunk_tokens and recompute_layers must be >= 0")
	}
	for _, ch := range []struct {
		key, v string
		ok     []string
	}{
		{"training.precision", t.Precision, []string{"fp32", "bf16", "fp16", "bf16-mixed", "fp16-mixed", "amp-bf16", "amp-fp16"}},
		{"training.optimizer", t.Optimizer, []string{"adamw", "adamw-8bit", "sgd", "adafactor"}},
		{"training.optimizer_impl", t.OptimizerImpl, []string{"foreach", "fused"}},
		{"training.attention", t.Attention, []string{"sdpa", "flash", "efficient", "cudnn", "math", "flex", "standard"}},
		{"training.recompute", t.Recompute, []string{"none", "selective", "full", "op_selective"}},
		{"training.loss", t.Loss, []string{"standard", "fused", "fused_jit", "chunked", "chunked_output"}},
		{"training.kernels", t.Kernels, []string{"fused", "eager"}},
		{"training.grad_precision", t.GradPrecision, []string{"fp32", "bf16", "fp16"}},
	} {
		if err := oneOf(ch.key, ch.v, ch.ok...); err != nil {
			return err
		}
	}
	for _, d := range []struct {
		key string
		v   float64
	}{{"training.attention_dropout", t.AttentionDropout}, {"training.hidden_dropout", t.HiddenDropout}} {
		if d.v < 0 || d.v >= 1 {
			return fmt.Errorf("%s: %g (must be in [0, 1))", d.key, d.v)
		}
	}
	if t.LossChunks < 0 {
		return fmt.Errorf("training.loss_chunks: %d (must be > 0)", t.LossChunks)
	}
	if len(t.SeqLengths) > 64 {
		return fmt.Errorf("training.seq_lengths: %d entries (at most 64 steps are replayed)", len(t.SeqLengths))
	}
	for i, n := range t.SeqLengths {
		if n <= 0 || n > t.SeqLength {
			return fmt.Errorf("training.seq_lengths[%d]: %d (must be in [1, training.seq_length = %d])", i, n, t.SeqLength)
		}
	}
	return nil
}

// resolveInference fills the weight and KV-cache dtypes (int8/int4 weights keep a bf16 cache) and the cache
// implementation (paged when given a block size, HF's dynamic cache under hf and deepspeed, else static), and
// checks the inference section.
func (c *Config) resolveInference() error {
	in := &c.Inference
	if in.WeightDtype == "" {
		in.WeightDtype = "bf16"
		if g := c.GPU(); g.FP16TFLOPS > 0 && !g.HasBF16() {
			in.WeightDtype = "fp16" // what a part without bf16 (V100) serves in
		}
	}
	if in.KVCache.Dtype == "" {
		in.KVCache.Dtype = in.WeightDtype
		if in.WeightDtype == "int8" || in.WeightDtype == "int4" {
			in.KVCache.Dtype = "bf16"
		}
	}
	kv := &in.KVCache
	if kv.Implementation == "" {
		switch {
		case kv.BlockTokens > 0:
			kv.Implementation = "paged"
		case c.Framework == "hf" || c.Framework == "deepspeed":
			kv.Implementation = "dynamic"
		default:
			kv.Implementation = "static"
		}
	}
	if err := oneOf("inference.kv_cache.implementation", kv.Implementation, "dynamic", "static", "paged"); err != nil {
		return err
	}
	if kv.Implementation == "paged" && kv.BlockTokens == 0 {
		kv.BlockTokens = 16
	}
	if kv.Implementation != "paged" && kv.BlockTokens > 0 {
		return fmt.Errorf("inference.kv_cache.block_tokens: %d applies to the paged cache, not %s", kv.BlockTokens, kv.Implementation)
	}
	if in.BatchSize <= 0 {
		return fmt.Errorf("inference.batch_size: %d (must be > 0)", in.BatchSize)
	}
	if in.PromptLength <= 0 {
		return fmt.Errorf("inference.prompt_length: %d (must be > 0)", in.PromptLength)
	}
	if in.GenerateTokens < 0 || in.KVCache.BlockTokens < 0 {
		return fmt.Errorf("inference: generate_tokens and kv_cache.block_tokens must be >= 0")
	}
	if _, ok := dtypeBytes[in.WeightDtype]; !ok {
		return fmt.Errorf("inference.weight_dtype: %q (must be one of fp32, bf16, fp16, fp8, int8, int4)", in.WeightDtype)
	}
	if _, ok := dtypeBytes[in.KVCache.Dtype]; !ok || in.KVCache.Dtype == "int4" {
		return fmt.Errorf("inference.kv_cache.dtype: %q (must be one of fp32, bf16, fp16, fp8, int8)", in.KVCache.Dtype)
	}
	return nil
}

// resolveParallel derives the data-parallel size, the expert layout and the micro-batch count, checks that
// every split divides what it splits, and fills the gradient-buffer and sharding defaults.
func (c *Config) resolveParallel() error {
	for _, step := range []func() error{c.resolveDataParallel, c.validateSplits, c.resolveExpertLayout, c.resolveMicrobatches, c.validatePipeline, c.resolveGradBuffer} {
		if err := step(); err != nil {
			return err
		}
	}
	p := &c.Parallel
	if p.DistributedOptimizer && p.ZeroStage == 0 {
		p.ZeroStage = 1 // the distributed optimizer shards exactly the optimizer states (ZeRO-1)
	}
	if p.FSDPPrefetchLayers == 0 {
		p.FSDPPrefetchLayers = 1
	}
	return nil
}

// resolveDataParallel checks the parallel sizes and GPU counts and derives dp (or num_gpus when it was left at
// its default of 1).
func (c *Config) resolveDataParallel() error {
	p, h := &c.Parallel, &c.Hardware
	for _, d := range []struct {
		key string
		v   int
	}{{"parallel.tp", p.TP}, {"parallel.pp", p.PP}, {"parallel.cp", p.CP}, {"parallel.ep", p.EP}, {"parallel.virtual_stages", p.VirtualStages}} {
		if d.v <= 0 {
			return fmt.Errorf("%s: %d (must be > 0)", d.key, d.v)
		}
	}
	if p.DP < 0 || p.NumMicrobatches < 0 || p.ETP < 0 || p.FSDPPrefetchLayers < 0 {
		return fmt.Errorf("parallel: dp, num_microbatches, etp and fsdp_prefetch_layers must be >= 0")
	}
	if h.NumGPUs <= 0 {
		return fmt.Errorf("hardware.num_gpus: %d (must be > 0)", h.NumGPUs)
	}
	if h.GPUsPerNode <= 0 {
		return fmt.Errorf("hardware.gpus_per_node: %d (must be > 0)", h.GPUsPerNode)
	}
	model := p.TP * p.PP * p.CP
	if p.DP == 0 {
		if h.NumGPUs%model != 0 {
			return fmt.Errorf("hardware.num_gpus: %d is not a multiple of tp·pp·cp = %d", h.NumGPUs, model)
		}
		p.DP = h.NumGPUs / model
	} else if p.DP*model != h.NumGPUs {
		if h.NumGPUs == 1 {
			h.NumGPUs = p.DP * model // num_gpus left at its default: derive it
		} else {
			return fmt.Errorf("parallel: dp·tp·pp·cp = %d·%d·%d·%d = %d does not equal hardware.num_gpus (%d)", p.DP, p.TP, p.PP, p.CP, p.DP*model, h.NumGPUs)
		}
	}
	return nil
}

// validateSplits checks that tensor, pipeline, context and sequence parallelism divide the sizes they split;
// more than one virtual stage implies the interleaved schedule.
func (c *Config) validateSplits() error {
	m, t, p := &c.Model, &c.Training, &c.Parallel
	if m.NumAttentionHeads%p.TP != 0 {
		return fmt.Errorf("parallel.tp: %d does not divide model.num_attention_heads (%d)", p.TP, m.NumAttentionHeads)
	}
	if m.NumKVHeads%p.TP != 0 && p.TP%m.NumKVHeads != 0 {
		return fmt.Errorf("parallel.tp: %d neither divides nor is a multiple of model.num_kv_heads (%d)", p.TP, m.NumKVHeads)
	}
	if m.FFNHiddenSize%p.TP != 0 {
		return fmt.Errorf("parallel.tp: %d does not divide model.ffn_hidden_size (%d)", p.TP, m.FFNHiddenSize)
	}
	if err := oneOf("parallel.pp_schedule", p.PPSchedule, "1f1b", "interleaved", "gpipe", "zero_bubble"); err != nil {
		return err
	}
	if p.VirtualStages > 1 && p.PPSchedule == "1f1b" {
		p.PPSchedule = "interleaved"
	}
	if (p.PPSchedule == "interleaved" || p.PPSchedule == "zero_bubble") && p.VirtualStages == 1 && p.PP > 1 && c.Framework == "torchtitan" {
		// torchtitan builds two stages per rank for looped schedules when no split is given.
		p.VirtualStages = 2
	}
	if p.CP > 1 && t.SeqLength%(2*p.CP) != 0 {
		return fmt.Errorf("parallel.cp: 2·cp = %d does not divide training.seq_length (%d)", 2*p.CP, t.SeqLength)
	}
	if p.SequenceParallel && p.TP > 1 && t.SeqLength%p.TP != 0 {
		return fmt.Errorf("parallel.sequence_parallel: tp (%d) does not divide training.seq_length (%d)", p.TP, t.SeqLength)
	}
	if p.ZeroStage < 0 || p.ZeroStage > 3 {
		return fmt.Errorf("parallel.zero_stage: %d (must be 0, 1, 2 or 3)", p.ZeroStage)
	}
	return nil
}

// resolveExpertLayout defaults the expert tensor-parallel size to tp and checks that the expert split fits the
// experts and the GPUs of a pipeline stage.
func (c *Config) resolveExpertLayout() error {
	m, p, h := &c.Model, &c.Parallel, &c.Hardware
	if p.ETP == 0 {
		p.ETP = p.TP
	}
	if m.NumExperts == 0 {
		if p.EP > 1 {
			return fmt.Errorf("parallel.ep: %d needs a mixture-of-experts model (model.num_experts > 0)", p.EP)
		}
		return nil
	}
	if m.NumExperts%p.EP != 0 {
		return fmt.Errorf("parallel.ep: %d does not divide model.num_experts (%d)", p.EP, m.NumExperts)
	}
	if (h.NumGPUs/p.PP)%(p.EP*p.ETP) != 0 {
		return fmt.Errorf("parallel.ep: ep·etp = %d does not divide the GPUs per pipeline stage (%d)", p.EP*p.ETP, h.NumGPUs/p.PP)
	}
	if m.MoEFFNHiddenSize%p.ETP != 0 {
		return fmt.Errorf("parallel.etp: %d does not divide model.moe_ffn_hidden_size (%d)", p.ETP, m.MoEFFNHiddenSize)
	}
	return nil
}

// resolveMicrobatches derives the micro-batch count from the global batch (or keeps the pipeline full) and the
// global batch from it, and checks that they agree.
func (c *Config) resolveMicrobatches() error {
	t, p := &c.Training, &c.Parallel
	if p.NumMicrobatches == 0 {
		if t.GlobalBatchSize > 0 {
			if t.GlobalBatchSize%(t.MicroBatchSize*p.DP) != 0 {
				return fmt.Errorf("training.global_batch_size: %d is not a multiple of micro_batch_size·dp = %d", t.GlobalBatchSize, t.MicroBatchSize*p.DP)
			}
			p.NumMicrobatches = t.GlobalBatchSize / (t.MicroBatchSize * p.DP)
		} else {
			p.NumMicrobatches = max(1, p.PP) // keep the pipeline full by default
		}
	}
	if t.GlobalBatchSize == 0 {
		t.GlobalBatchSize = t.MicroBatchSize * p.DP * p.NumMicrobatches
	}
	if t.GlobalBatchSize != t.MicroBatchSize*p.DP*p.NumMicrobatches {
		return fmt.Errorf("training.global_batch_size: %d does not equal micro_batch_size·dp·num_microbatches = %d", t.GlobalBatchSize, t.MicroBatchSize*p.DP*p.NumMicrobatches)
	}
	return nil
}

// resolveGradBuffer checks grad_buffer and resolves "auto": Megatron's distributed optimizer keeps a
// contiguous fp32 main-grad buffer for the whole run; plain PyTorch (zero_grad(set_to_none=True)) allocates
// gradients in backward and frees them after the step.
func (c *Config) resolveGradBuffer() error {
	p := &c.Parallel
	if err := oneOf("parallel.grad_buffer", p.GradBuffer, "auto", "persistent", "on_demand"); err != nil {
		return err
	}
	if p.GradBuffer == "auto" {
		p.GradBuffer = "on_demand"
		if p.DistributedOptimizer {
			p.GradBuffer = "persistent"
		}
	}
	return nil
}

// validateHardware checks the GPU and the efficiency and price assumptions.
func (c *Config) validateHardware() error {
	h := &c.Hardware
	if h.Custom != nil {
		if err := h.Custom.Validate("hardware.custom"); err != nil {
			return err
		}
	} else if _, err := gpu.Lookup(h.GPU); err != nil {
		return fmt.Errorf("hardware.gpu: %w", err)
	}
	for _, f := range []struct {
		key    string
		v      float64
		zeroOK bool
	}{
		{"hardware.usable_fraction", h.UsableFraction, false},
		{"hardware.mfu", h.MFU, false},
		{"hardware.comm_efficiency", h.CommEfficiency, false},
		{"hardware.dp_overlap", h.DPOverlap, true},
	} {
		switch {
		case f.zeroOK && (f.v < 0 || f.v > 1):
			return fmt.Errorf("%s: %g (must be in [0, 1])", f.key, f.v)
		case !f.zeroOK && (f.v <= 0 || f.v > 1):
			return fmt.Errorf("%s: %g (must be in (0, 1])", f.key, f.v)
		}
	}
	if h.InterNodeGBps <= 0 || h.PricePerGPUHour < 0 {
		return fmt.Errorf("hardware: inter_node_gbps must be > 0 and price_per_gpu_hour >= 0")
	}
	return nil
}

func (c *Config) validateAllocator() error {
	if f := c.Allocator.FragmentationFraction; f > 1 {
		return fmt.Errorf("allocator.fragmentation_fraction: %g (must be in [0, 1])", f)
	}
	for _, f := range []struct {
		key string
		v   float64
	}{{"allocator.cuda_context_mib", c.Allocator.CUDAContextMiB}, {"allocator.nccl_mib", c.Allocator.NCCLMiB},
		{"allocator.workspace_mib", c.Allocator.WorkspaceMiB}} {
		if f.v > maxOverheadMiB {
			return fmt.Errorf("%s: %g exceeds the limit of %d MiB (1 TiB)", f.key, f.v, maxOverheadMiB)
		}
	}
	return nil
}

// validateCorrections checks the static correction factors (1 means none).
func (c *Config) validateCorrections() error {
	for _, f := range []struct {
		key string
		v   float64
	}{{"corrections.weights", c.Corrections.Weights}, {"corrections.grads", c.Corrections.Grads},
		{"corrections.optimizer", c.Corrections.Optimizer}, {"corrections.activations", c.Corrections.Activations},
		{"corrections.temporaries", c.Corrections.Temporaries}, {"corrections.other", c.Corrections.Other}} {
		if !(f.v >= minCorrection && f.v <= maxCorrection) {
			return fmt.Errorf("%s: %g (must be in [%g, %g]; 1 means no correction)", f.key, f.v, minCorrection, maxCorrection)
		}
	}
	return nil
}

func oneOf(key, v string, ok ...string) error {
	for _, o := range ok {
		if v == o {
			return nil
		}
	}
	return fmt.Errorf("%s: %q (must be one of %s)", key, v, strings.Join(ok, ", "))
}

// dtypeBytes is the storage size per element; int4 packs two per byte.
var dtypeBytes = map[string]float64{"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1, "int4": 0.5, "int64": 8, "bool": 1}

// paramDtype is the dtype the training weights are stored in (fp32 under autocast).
func (c *Config) paramDtype() string {
	switch c.Training.Precision {
	case "fp32", "amp-bf16", "amp-fp16":
		return "fp32"
	case "fp16", "fp16-mixed":
		return "fp16"
	}
	return "bf16"
}

// actDtype is the dtype of matmul outputs and most saved activations: autocast's lower precision under AMP.
func (c *Config) actDtype() string {
	switch c.Training.Precision {
	case "fp32":
		return "fp32"
	case "amp-bf16":
		return "bf16"
	case "amp-fp16":
		return "fp16"
	}
	return c.paramDtype()
}

// mixed reports Megatron/DeepSpeed-style mixed precision: 16-bit parameters with an fp32 master copy.
func (c *Config) mixed() bool { return strings.HasSuffix(c.Training.Precision, "-mixed") }

// amp reports torch.autocast training: fp32 parameters, gradients and states, 16-bit matmuls whose casted
// weight copies autocast caches for the forward.
func (c *Config) amp() bool { return strings.HasPrefix(c.Training.Precision, "amp-") }

// lowPrecisionStates reports pure 16-bit training, whose optimizer keeps its states in the parameter dtype.
func (c *Config) lowPrecisionStates() bool {
	return c.Training.Precision == "bf16" || c.Training.Precision == "fp16"
}

// GPU returns the resolved accelerator.
func (c *Config) GPU() gpu.Spec {
	if c.Hardware.Custom != nil {
		return *c.Hardware.Custom
	}
	g, _ := gpu.Lookup(c.Hardware.GPU)
	return g
}
