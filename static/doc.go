// Package static predicts GPU memory, time and fit for a transformer training or inference configuration
// without running it: config -> parameter and operator records -> per-GPU memory for every pipeline stage ->
// peak allocated (and at which moment: forward_end, backward, optimizer_step, prefill), reserved and device-total
// predictions, fit verdict, max batch / sequence searches, strategy comparison, time, cost and roofline.
//
// Peak reserved comes from the allocator package: the operator records also list the tensors each operator
// allocates and when they die (steps.go), which gives one run's allocation sequence — parameters as built, two
// training steps (or one per training.seq_lengths entry), or one generate call — replayed through the
// caching-allocator model (Summary.ReservedSource says so; Megatron-LM's persistent gradient buffers keep the flat
// fragmentation allowance). Data, tensor, context and expert parallelism, FSDP (fsdp.go) and torchtitan's pipeline
// ranks (pipeline.go: each rank runs its schedule) are part of the sequence. A run that cannot fit gets the first
// allocation that fails (Report.OOM). Which attention kernel runs, and why, is Report.Attention (sdpa.go follows
// PyTorch's dispatch).
//
// # Config (JSON or YAML, snake_case keys; unknown keys are errors)
//
//	name                 free text
//	framework            megatron | hf | torchtitan | torchtune | deepspeed: that stack's defaults for every key
//	                     left out (framework.go documents each and its sources); explicit keys override
//	mode                 train | inference
//	model                preset (llama2-7b … gpt3-175b, see PresetNames) or size_billions, then any of: type
//	                     llama|gpt, family gpt2|gpt-neox|llama|mistral|qwen2|mixtral|gemma|gemma2|phi3 (HF class), num_layers, hidden_size, num_attention_heads, num_kv_heads, head_dim,
//	                     ffn_hidden_size, vocab_size, make_vocab_size_divisible_by (Megatron padding, × tp),
//	                     tie_word_embeddings, max_position_embeddings, position_embedding rope|learned,
//	                     norm rmsnorm|layernorm, activation swiglu|geglu|gelu|gelu_new|squared-relu, linear_bias, qkv_bias,
//	                     num_experts, moe_top_k, moe_ffn_hidden_size, shared_experts, moe_capacity_factor
//	training             micro_batch_size, seq_length, global_batch_size, precision fp32|bf16|fp16|bf16-mixed|
//	                     fp16-mixed|amp-bf16|amp-fp16, grad_precision, optimizer adamw|adamw-8bit|sgd|adafactor,
//	                     optimizer_impl foreach|fused, attention sdpa|flash|efficient|cudnn|math|flex|standard (sdpa:
//	                     PyTorch's dispatch, see selectAttention), attention_dropout, hidden_dropout, recompute
//	                     none|selective|full|op_selective, recompute_layers, loss standard|fused|fused_jit|chunked|
//	                     chunked_output, loss_chunk_tokens, loss_chunks, kernels fused|eager, transformer_engine (TE
//	                     layers: +TE cuBLASLt workspace), compile, compiled_loss, float8, float8_recipe
//	                     tensorwise|rowwise, packed_sequences, activation_offload,
//	                     optimizer_in_backward, lora {rank, alpha, targets "all-linear"|[names], adapter_dtype,
//	                     base_dtype bf16|fp16|fp32|nf4|int8, double_quant, dropout, quant_storage, kbit_prep},
//	                     seq_lengths (per-step
//	                     lengths when they vary; replayed for reserved), train_tokens, train_steps
//	inference            batch_size, prompt_length, generate_tokens, weight_dtype, logits_all_tokens,
//	                     kv_cache {implementation dynamic|static|paged, dtype, block_tokens}
//	parallel             dp, tp, pp, cp, ep, etp, sequence_parallel, zero_stage 0-3 (3 = FSDP full shard),
//	                     distributed_optimizer, pp_schedule 1f1b|interleaved|gpipe|zero_bubble, virtual_stages,
//	                     pp_layers (per stage), num_microbatches, grad_buffer auto|persistent|on_demand,
//	                     fsdp_prefetch_layers, fsdp_reshard_after_forward, fsdp_offload, async_tp
//	hardware             gpu (catalogue key), custom {gpu.Spec}, num_gpus, gpus_per_node, usable_fraction, mfu,
//	                     inter_node_gbps, comm_efficiency, dp_overlap, price_per_gpu_hour
//	allocator            expandable_segments, cuda_context_mib, nccl_mib, workspace_mib (auto 64: PyTorch's cuBLAS
//	                     and cuBLASLt workspaces), fragmentation_fraction
//	corrections          weights, grads, optimizer, activations, temporaries, other (multiplicative, 1 = none)
//	output               unroll (one operator record per layer)
//
// Every size has a documented upper limit (LimitDoc; e.g. 4096 layers, 16.7 M tokens per sequence, no tensor
// beyond 2^60 bytes), checked before any arithmetic, so predictions are exact int64 figures or an error naming
// the key.
//
// Per-component predictions are on Report.Summary (worst GPU) and Report.Stages (every stage: weights, grads,
// optimizer, activations, temporaries, other, and what is live at the peak in AtPeak); Corrections scale them.
// Stage.ComponentsAtPeak names the peak in package components' parts, the definitions runtime attribution uses
// too (activations are what forward keeps for backward; the loss, its gradient and inference's working set are
// temporaries; the KV cache is its own part).
// Config.Apply lays command-line Overrides over a config; Resolve fills defaults and validates it.
//
// It imports only units, components, allocator, gpu (the accelerator catalogue) and its config decoders (YAML);
// it renders nothing and writes no files: results holds the console, Markdown and JSON views and the chart data,
// plots draws them.
package static
