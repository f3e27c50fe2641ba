package static

import (
	"fmt"
	"math"
)

// Upper limits on config values. They are far beyond any model or cluster built so far, low enough that every
// size memscan computes stays exact in int64 (see checkDerived) and that the per-layer and search loops finish at
// once. A value beyond its limit is an error naming the key; nothing wraps or saturates silently.
const (
	maxConfigBytes   = 1 << 20 // a config file
	maxConfigList    = 1 << 16 // elements of one list (seq_lengths, lora.targets)
	maxLayers        = 4096
	maxHidden        = 1 << 18 // 262,144
	maxHeads         = 1 << 14
	maxHeadDim       = 1 << 14
	maxFFN           = 1 << 22
	maxVocab         = 1 << 24 // 16.7 M tokens
	maxExperts       = 1 << 12
	maxSeq           = 1 << 24 // 16.7 M tokens per sequence
	maxBatch         = 1 << 20
	maxGlobalBatch   = 1 << 30
	maxGPUs          = 1 << 20
	maxParallel      = 1 << 16 // tp, pp, cp, ep, etp, dp
	maxVirtualStages = 1 << 10
	maxMicrobatches  = 1 << 24
	maxLoRARank      = 1 << 16
	maxTrainSteps    = 1 << 40
	maxTrainTokens   = 1e18
	maxOverheadMiB   = 1 << 20 // allocator.cuda_context_mib, nccl_mib, workspace_mib: 1 TiB
	// Correction factors multiply a component's bytes: beyond these bounds a factor is a mistake (1e308 once
	// overflowed the total into "-8.0 EiB needed"), not a calibration.
	minCorrection = 0.01
	maxCorrection = 100.0
	// maxTensorBytes bounds the largest tensor (and sum) the model forms: 2^60 B = 1 EiB keeps every int64
	// product and sum in the estimator exact.
	maxTensorBytes = float64(1 << 60)
)

// LimitDoc lists the documented upper limits (key, limit) in the order of the README.
func LimitDoc() [][2]string {
	return [][2]string{
		{"config file size", "1 MiB"},
		{"model.num_layers", fmt.Sprint(maxLayers)}, {"model.hidden_size", fmt.Sprint(maxHidden)},
		{"model.num_attention_heads, num_kv_heads", fmt.Sprint(maxHeads)}, {"model.head_dim", fmt.Sprint(maxHeadDim)},
		{"model.ffn_hidden_size, moe_ffn_hidden_size", fmt.Sprint(maxFFN)}, {"model.vocab_size", fmt.Sprint(maxVocab)},
		{"model.num_experts", fmt.Sprint(maxExperts)}, {"model.max_position_embeddings, training.seq_length, inference.prompt_length, inference.generate_tokens, training.loss_chunk_tokens", fmt.Sprint(maxSeq)},
		{"training.micro_batch_size, inference.batch_size", fmt.Sprint(maxBatch)}, {"training.global_batch_size", fmt.Sprint(maxGlobalBatch)},
		{"hardware.num_gpus, gpus_per_node", fmt.Sprint(maxGPUs)}, {"parallel.dp, tp, pp, cp, ep, etp", fmt.Sprint(maxParallel)},
		{"parallel.virtual_stages", fmt.Sprint(maxVirtualStages)}, {"parallel.num_microbatches", fmt.Sprint(maxMicrobatches)},
		{"training.lora.rank", fmt.Sprint(maxLoRARank)}, {"training.train_steps", fmt.Sprint(int64(maxTrainSteps))},
		{"training.train_tokens", fmt.Sprintf("%g", maxTrainTokens)},
		{"allocator.cuda_context_mib, nccl_mib, workspace_mib", fmt.Sprint(maxOverheadMiB)},
		{"corrections.* (each factor, at least " + fmt.Sprint(minCorrection) + ")", fmt.Sprint(maxCorrection)},
		{"largest tensor formed (e.g. b·heads·s² scores, b·s·V logits, KV cache)", "2^60 bytes"},
	}
}

// checkLimits rejects values beyond the documented limits before any arithmetic uses them.
func (c *Config) checkLimits() error {
	m, t, in, p, h := &c.Model, &c.Training, &c.Inference, &c.Parallel, &c.Hardware
	for _, f := range []struct {
		key string
		v   int
		max int
	}{
		{"model.num_layers", m.NumLayers, maxLayers}, {"model.hidden_size", m.HiddenSize, maxHidden},
		{"model.num_attention_heads", m.NumAttentionHeads, maxHeads}, {"model.num_kv_heads", m.NumKVHeads, maxHeads},
		{"model.head_dim", m.HeadDim, maxHeadDim}, {"model.ffn_hidden_size", m.FFNHiddenSize, maxFFN},
		{"model.moe_ffn_hidden_size", m.MoEFFNHiddenSize, maxFFN}, {"model.vocab_size", m.VocabSize, maxVocab},
		{"model.make_vocab_size_divisible_by", m.MakeVocabDivisibleBy, maxVocab},
		{"model.num_experts", m.NumExperts, maxExperts}, {"model.moe_top_k", m.MoETopK, maxExperts},
		{"model.shared_experts", m.SharedExperts, maxExperts},
		{"model.max_position_embeddings", m.MaxPositionEmbeddings, maxSeq},
		{"training.micro_batch_size", t.MicroBatchSize, maxBatch}, {"training.seq_length", t.SeqLength, maxSeq},
		{"training.global_batch_size", t.GlobalBatchSize, maxGlobalBatch},
		{"training.recompute_layers", t.RecomputeLayers, maxLayers},
		{"training.loss_chunk_tokens", t.LossChunkTokens, maxSeq}, {"training.loss_chunks", t.LossChunks, maxSeq},
		{"inference.batch_size", in.BatchSize, maxBatch}, {"inference.prompt_length", in.PromptLength, maxSeq},
		{"inference.generate_tokens", in.GenerateTokens, maxSeq}, {"inference.kv_cache.block_tokens", in.KVCache.BlockTokens, maxSeq},
		{"parallel.dp", p.DP, maxParallel}, {"parallel.tp", p.TP, maxParallel}, {"parallel.pp", p.PP, maxParallel},
		{"parallel.cp", p.CP, maxParallel}, {"parallel.ep", p.EP, maxParallel}, {"parallel.etp", p.ETP, maxParallel},
		{"parallel.virtual_stages", p.VirtualStages, maxVirtualStages},
		{"parallel.num_microbatches", p.NumMicrobatches, maxMicrobatches},
		{"parallel.fsdp_prefetch_layers", p.FSDPPrefetchLayers, maxLayers},
		{"hardware.num_gpus", h.NumGPUs, maxGPUs}, {"hardware.gpus_per_node", h.GPUsPerNode, maxGPUs},
	} {
		if f.v > f.max {
			return fmt.Errorf("%s: %d exceeds the limit of %d", f.key, f.v, f.max)
		}
	}
	if int64(t.TrainSteps) > maxTrainSteps {
		return fmt.Errorf("training.train_steps: %d exceeds the limit of %d", t.TrainSteps, int64(maxTrainSteps))
	}
	if t.TrainTokens > maxTrainTokens || math.IsNaN(t.TrainTokens) {
		return fmt.Errorf("training.train_tokens: %g exceeds the limit of %g", t.TrainTokens, maxTrainTokens)
	}
	if l := t.LoRA; l != nil && l.Rank > maxLoRARank {
		return fmt.Errorf("training.lora.rank: %d exceeds the limit of %d", l.Rank, maxLoRARank)
	}
	for _, f := range []struct {
		key string
		v   float64
	}{
		{"model.size_billions", m.SizeBillions}, {"model.moe_capacity_factor", m.MoECapacityFactor},
		{"training.attention_dropout", t.AttentionDropout}, {"training.hidden_dropout", t.HiddenDropout},
		{"hardware.usable_fraction", h.UsableFraction}, {"hardware.mfu", h.MFU}, {"hardware.inter_node_gbps", h.InterNodeGBps},
		{"hardware.comm_efficiency", h.CommEfficiency}, {"hardware.dp_overlap", h.DPOverlap},
		{"hardware.price_per_gpu_hour", h.PricePerGPUHour}, {"allocator.cuda_context_mib", c.Allocator.CUDAContextMiB},
		{"allocator.nccl_mib", c.Allocator.NCCLMiB}, {"allocator.workspace_mib", c.Allocator.WorkspaceMiB},
		{"allocator.fragmentation_fraction", c.Allocator.FragmentationFraction},
	} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || math.Abs(f.v) > 1e15 {
			return fmt.Errorf("%s: %g is not a usable number", f.key, f.v)
		}
	}
	if m.MoECapacityFactor > float64(maxExperts) {
		return fmt.Errorf("model.moe_capacity_factor: %g exceeds the limit of %d", m.MoECapacityFactor, maxExperts)
	}
	return nil
}

// checkDerived bounds the largest tensors the estimator forms, in float64, so that the int64 arithmetic that
// follows is exact: the attention scores b·a·s², the logits b·s·V, the MLP intermediates b·s·f·k, the whole
// model's parameters and the KV cache. Called after Resolve filled the derived dimensions.
func (c *Config) checkDerived() error {
	m := c.Model
	b, s := float64(c.Training.MicroBatchSize), float64(c.Training.SeqLength)
	if c.Mode == "inference" {
		b = float64(c.Inference.BatchSize)
		s = float64(c.Inference.PromptLength) + float64(c.Inference.GenerateTokens)
	}
	a, hd, h, v, l := float64(m.NumAttentionHeads), float64(m.HeadDim), float64(m.HiddenSize), float64(m.VocabSize), float64(m.NumLayers)
	f := float64(max(m.FFNHiddenSize, m.MoEFFNHiddenSize)) * float64(max(1, m.MoETopK))
	// Only kernels that form the scores (math, unfused) have a b·a·s² tensor; flash, memory-efficient, cuDNN and
	// flex work in tiles. A packed-sequence mask is b·s² whatever the kernel.
	var scores, mask float64
	if k := newEst(c).kernel; k.name == "math" || k.name == "standard" {
		scores = 8 * b * a * s * s
	} else if k.maskBytes > 0 {
		mask = 8 * b * s * s
	}
	for _, x := range []struct {
		what  string
		bytes float64
	}{
		{"attention scores (micro-batch × heads × sequence²)", scores},
		{"attention mask (micro-batch × sequence²)", mask},
		{"logits (micro-batch × sequence × vocab)", 16 * b * s * v},
		{"MLP intermediates (micro-batch × sequence × ffn × top-k)", 8 * b * s * f},
		{"attention projections (micro-batch × sequence × heads × head_dim)", 8 * b * s * a * hd},
		{"parameters (layers × hidden × (ffn·experts + 4·heads·head_dim))", 16 * l * h * (float64(m.FFNHiddenSize)*3*float64(max(1, m.NumExperts)) + 4*a*hd)},
		{"KV cache (layers × batch × context × heads × head_dim)", 8 * l * b * s * a * hd},
	} {
		if x.bytes > maxTensorBytes {
			return fmt.Errorf("config: the %s would take %.3g bytes, beyond the 2^60-byte limit memscan computes exactly; reduce the sizes", x.what, x.bytes)
		}
	}
	return nil
}
