// Package static predicts GPU memory, time and fit for a transformer training or inference configuration
// without running it: config -> parameter and operator records -> per-GPU memory for every pipeline stage ->
// peak allocated (and at which moment: forward_end, backward, optimizer_step, prefill), reserved and device-total
// predictions, fit verdict, max batch / sequence searches, strategy comparison, time, cost and roofline.
//
// # Config (JSON or YAML, snake_case keys; unknown keys are errors)
//
//	name                 free text
//	mode                 train | inference
//	model                preset (llama2-7b … gpt3-175b, see PresetNames) or size_billions, then any of: type
//	                     llama|gpt, num_layers, hidden_size, num_attention_heads, num_kv_heads, head_dim,
//	                     ffn_hidden_size, vocab_size, make_vocab_size_divisible_by (Megatron padding, × tp),
//	                     tie_word_embeddings, max_position_embeddings, position_embedding rope|learned,
//	                     norm rmsnorm|layernorm, activation swiglu|gelu|squared-relu, linear_bias, qkv_bias,
//	                     num_experts, moe_top_k, moe_ffn_hidden_size, shared_experts, moe_capacity_factor
//	training             micro_batch_size, seq_length, global_batch_size, precision fp32|bf16|fp16|bf16-mixed|
//	                     fp16-mixed, grad_precision, optimizer adamw|adamw-8bit|sgd|adafactor, optimizer_impl
//	                     foreach|fused, attention flash|standard, attention_dropout, hidden_dropout, recompute
//	                     none|selective|full, recompute_layers, loss standard|fused|fused_jit|chunked, loss_chunk_tokens,
//	                     kernels fused|eager, transformer_engine (TE layers: +TE cuBLASLt workspace),
//	                     train_tokens, train_steps
//	inference            batch_size, prompt_length, generate_tokens, weight_dtype, logits_all_tokens,
//	                     kv_cache {dtype, block_tokens}
//	parallel             dp, tp, pp, cp, ep, etp, sequence_parallel, zero_stage 0-3 (3 = FSDP full shard),
//	                     distributed_optimizer, pp_schedule 1f1b|interleaved, virtual_stages, num_microbatches,
//	                     grad_buffer auto|persistent|on_demand, fsdp_prefetch_layers
//	hardware             gpu (catalogue key), custom {GPUSpec}, num_gpus, gpus_per_node, usable_fraction, mfu,
//	                     inter_node_gbps, comm_efficiency, dp_overlap, price_per_gpu_hour
//	allocator            expandable_segments, cuda_context_mib, nccl_mib, workspace_mib (auto 64: PyTorch's cuBLAS
//	                     and cuBLASLt workspaces), fragmentation_fraction
//	corrections          weights, grads, optimizer, activations, temporaries, other (multiplicative, 1 = none)
//	output               unroll (one operator record per layer)
//
// Per-component predictions are on Report.Summary (worst GPU) and Report.Stages (every stage: weights, grads,
// optimizer, activations, temporaries, other, and what is live at the peak in AtPeak); Corrections scale them.
// Config.Apply lays command-line Overrides over a config; Resolve fills defaults and validates it.
//
// It imports only units and its config decoders (YAML); it renders nothing and writes no files: results holds
// the console, Markdown and JSON views and the chart data, plots draws them.
package static
