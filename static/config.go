package static

import (
	"errors"
	"fmt"
	"strings"

	"github.com/memscan/memscan/gpu"
	"github.com/memscan/memscan/internal/configfile"
)

// Config is a complete estimator input. Zero values of the fields documented as "auto" are filled by Resolve.
type Config struct {
	Name string `json:"name,omitempty"`
	// Framework picks the training stack whose defaults fill every key the config leaves out (see framework.go):
	// megatron | hf | torchtitan | torchtune | deepspeed; empty keeps the framework-neutral defaults.
	Framework   string            `json:"framework,omitempty"`
	Mode        string            `json:"mode"` // train | inference
	Model       ModelConfig       `json:"model"`
	Training    TrainingConfig    `json:"training"`
	Inference   InferenceConfig   `json:"inference"`
	Parallel    ParallelConfig    `json:"parallel"`
	Hardware    HardwareConfig    `json:"hardware"`
	Allocator   AllocatorConfig   `json:"allocator"`
	Corrections Corrections       `json:"corrections"`
	Output      OutputConfig      `json:"output"`
	Extra       map[string]string `json:"notes,omitempty"` // free-form provenance notes, not interpreted
}

// ModelConfig describes the architecture. A preset fills every dimension; explicit keys override it.
type ModelConfig struct {
	Preset       string  `json:"preset,omitempty"`
	SizeBillions float64 `json:"size_billions,omitempty"` // pick standard dims for this size
	Type         string  `json:"type"`                    // llama | gpt
	// Family is the Hugging Face model class whose forward memscan follows (gpt2, gpt-neox, llama, mistral,
	// qwen2, mixtral, gemma, gemma2, phi3); it sets the structural defaults (norm, activation, positions,
	// biases) and the eager-kernel intermediates. Empty: a generic decoder of Type.
	Family                string  `json:"family,omitempty"`
	NumLayers             int     `json:"num_layers"`
	HiddenSize            int     `json:"hidden_size"`
	NumAttentionHeads     int     `json:"num_attention_heads"`
	NumKVHeads            int     `json:"num_kv_heads"`                 // auto: = heads
	HeadDim               int     `json:"head_dim"`                     // auto: hidden/heads
	FFNHiddenSize         int     `json:"ffn_hidden_size"`              // auto: 4h (gpt) or SwiGLU 8h/3 rounded (llama)
	VocabSize             int     `json:"vocab_size"`                   // before padding
	MakeVocabDivisibleBy  int     `json:"make_vocab_size_divisible_by"` // Megatron pads V to a multiple of this × tp
	TieWordEmbeddings     bool    `json:"tie_word_embeddings"`
	MaxPositionEmbeddings int     `json:"max_position_embeddings"`
	PositionEmbedding     string  `json:"position_embedding"` // rope | learned
	Norm                  string  `json:"norm"`               // rmsnorm | layernorm
	Activation            string  `json:"activation"`         // swiglu | geglu | gelu | gelu_new | squared-relu
	LinearBias            bool    `json:"linear_bias"`
	QKVBias               bool    `json:"qkv_bias"`
	NumExperts            int     `json:"num_experts"`
	MoETopK               int     `json:"moe_top_k"`
	MoEFFNHiddenSize      int     `json:"moe_ffn_hidden_size"` // auto: ffn_hidden_size
	SharedExperts         int     `json:"shared_experts"`
	MoECapacityFactor     float64 `json:"moe_capacity_factor"` // tokens per expert relative to balanced; auto 1.0
}

// TrainingConfig holds the per-step workload and numerics.
type TrainingConfig struct {
	MicroBatchSize   int     `json:"micro_batch_size"`
	SeqLength        int     `json:"seq_length"`
	GlobalBatchSize  int     `json:"global_batch_size"` // auto: micro × dp × microbatches
	Precision        string  `json:"precision"`         // fp32 | bf16 | fp16 | bf16-mixed | fp16-mixed | amp-bf16 | amp-fp16
	GradPrecision    string  `json:"grad_precision"`    // auto: fp32 for mixed, else the param dtype
	Optimizer        string  `json:"optimizer"`         // adamw | adamw-8bit | sgd | adafactor
	OptimizerImpl    string  `json:"optimizer_impl"`    // foreach | fused
	Attention        string  `json:"attention"`         // sdpa (PyTorch picks) | flash | efficient | cudnn | math | flex | standard
	AttentionDropout float64 `json:"attention_dropout"`
	HiddenDropout    float64 `json:"hidden_dropout"`
	Recompute        string  `json:"recompute"`        // none | selective | full | op_selective
	RecomputeLayers  int     `json:"recompute_layers"` // full recompute: layers per stage recomputed; auto: all
	Loss             string  `json:"loss"`             // standard | fused | fused_jit | chunked | chunked_output
	Kernels          string  `json:"kernels"`          // fused (Megatron/TE, compiled) | eager (HF transformers)
	// TransformerEngine says the layers are Transformer Engine modules, which allocate their own cuBLASLt
	// workspace through the PyTorch allocator (see teWorkspaceBytes).
	TransformerEngine bool `json:"transformer_engine"`
	LossChunkTokens   int  `json:"loss_chunk_tokens"`
	// LossChunks is torchtune's num_output_chunks for loss chunked_output (auto 8).
	LossChunks  int     `json:"loss_chunks"`
	TrainTokens float64 `json:"train_tokens"`
	TrainSteps  int     `json:"train_steps"`
	// SeqLengths are the sequence lengths of successive steps when they vary (unpacked batches of varying
	// length); seq_length defaults to their maximum, which sets the peak allocated, while the allocator replay
	// runs one step per entry because varying sizes fragment the cache.
	SeqLengths []int `json:"seq_lengths,omitempty"`
	// Compile says the model runs under torch.compile: Inductor fuses elementwise chains, so they keep only
	// what the fused kernel's backward needs (see eagerChains).
	Compile bool `json:"compile"`
	// Float8 trains the linear layers with torchao float8 (tensorwise scaling): the saved linear inputs are
	// float8 and FSDP all-gathers float8 weights. Needs a GPU with fp8 tensor cores.
	Float8 bool `json:"float8"`
	// Float8Recipe is torchao's scaling: tensorwise (auto; float8 FSDP all-gather) or rowwise (bf16 all-gather).
	Float8Recipe string `json:"float8_recipe,omitempty"`
	// CompiledLoss says the loss runs under torch.compile too (auto: with compile, as torchtitan since April
	// 2025, torchtune's compile_loss for its chunked loss and Hugging Face models, whose loss is inside the
	// compiled forward).
	CompiledLoss *bool `json:"compiled_loss,omitempty"`
	// PackedSequences packs several documents into each row (torchtune packed=True): attention gets a
	// block-causal mask, so SDPA cannot use flash attention (flex attention is used where available).
	PackedSequences bool `json:"packed_sequences"`
	// ActivationOffload moves saved activations to host memory during forward (torchtune
	// enable_activation_offloading): only the layer in flight and the one being prefetched stay on the GPU.
	ActivationOffload bool `json:"activation_offload"`
	// OptimizerInBackward steps each parameter as soon as its gradient is ready and frees the gradient
	// (torchtune optimizer_in_bwd): at most one parameter's gradient is alive.
	OptimizerInBackward bool `json:"optimizer_in_backward"`
	// LoRA trains low-rank adapters on a frozen base model (PEFT); nil = full training.
	LoRA *LoRAConfig `json:"lora,omitempty"`
}

// InferenceConfig is used when mode is "inference".
type InferenceConfig struct {
	BatchSize       int           `json:"batch_size"`
	PromptLength    int           `json:"prompt_length"`
	GenerateTokens  int           `json:"generate_tokens"`
	WeightDtype     string        `json:"weight_dtype"` // auto: bf16; fp32 | fp16 | bf16 | fp8 | int8 | int4
	KVCache         KVCacheConfig `json:"kv_cache"`
	LogitsAllTokens bool          `json:"logits_all_tokens"` // prefill computes logits for every prompt token
}

// KVCacheConfig sizes the key/value cache.
type KVCacheConfig struct {
	// Implementation is how the cache is allocated: dynamic (HF DynamicCache: grows by torch.cat, one layer's
	// old and new copy alive at once), static (prompt + generated tokens preallocated) or paged (blocks of
	// block_tokens). Auto: dynamic for the hf framework, static otherwise; paged when block_tokens is set.
	Implementation string `json:"implementation"`
	Dtype          string `json:"dtype"`        // auto: weight dtype (bf16 for int weights)
	BlockTokens    int    `json:"block_tokens"` // paged cache block (auto 16 when paged)
}

// ParallelConfig is the distributed layout.
type ParallelConfig struct {
	DP                   int    `json:"dp"` // auto: num_gpus / (tp·pp·cp)
	TP                   int    `json:"tp"`
	PP                   int    `json:"pp"`
	CP                   int    `json:"cp"`
	EP                   int    `json:"ep"`
	ETP                  int    `json:"etp"` // expert tensor parallel; auto: tp
	SequenceParallel     bool   `json:"sequence_parallel"`
	ZeroStage            int    `json:"zero_stage"` // 0-3; FSDP full shard = 3
	DistributedOptimizer bool   `json:"distributed_optimizer"`
	PPSchedule           string `json:"pp_schedule"` // 1f1b | interleaved | gpipe | zero_bubble (pipeline.go)
	VirtualStages        int    `json:"virtual_stages"`
	// PPLayers are the layers of each pipeline stage (pp·virtual_stages entries, in stage order); auto: the
	// framework's split (splitRule: torchtitan's uneven rule, an even split for Megatron-LM).
	PPLayers           []int  `json:"pp_layers,omitempty"`
	NumMicrobatches    int    `json:"num_microbatches"` // auto: global / (micro·dp)
	GradBuffer         string `json:"grad_buffer"`      // auto | persistent | on_demand
	FSDPPrefetchLayers int    `json:"fsdp_prefetch_layers"`
	// FSDPReshardAfterForward frees each layer's gathered parameters after its forward (FSDP2 default true;
	// false keeps every layer's unsharded parameters from forward to backward, ZeRO-2-like).
	FSDPReshardAfterForward *bool `json:"fsdp_reshard_after_forward,omitempty"`
	// FSDPOffload keeps the sharded parameters, gradients and optimizer states in host memory (FSDP
	// CPUOffload / fsdp_offload_params): the GPU holds only what a layer gathers to compute.
	FSDPOffload bool `json:"fsdp_offload,omitempty"`
	// AsyncTP runs tensor parallelism's all-gather and reduce-scatter fused into the matmuls (torchtitan
	// enable_async_tensor_parallel: Inductor's micro-pipelined TP on symmetric memory).
	AsyncTP bool `json:"async_tp,omitempty"`
}

// HardwareConfig picks the GPU and the cluster.
type HardwareConfig struct {
	GPU             string    `json:"gpu"`
	NumGPUs         int       `json:"num_gpus"`
	GPUsPerNode     int       `json:"gpus_per_node"`
	UsableFraction  float64   `json:"usable_fraction"`
	MFU             float64   `json:"mfu"`
	InterNodeGBps   float64   `json:"inter_node_gbps"` // per GPU, GB/s
	CommEfficiency  float64   `json:"comm_efficiency"`
	DPOverlap       float64   `json:"dp_overlap"` // fraction of DP communication hidden under compute
	PricePerGPUHour float64   `json:"price_per_gpu_hour"`
	Custom          *gpu.Spec `json:"custom,omitempty"`
}

// AllocatorConfig states the runtime assumptions behind the reserved and device-total predictions.
type AllocatorConfig struct {
	ExpandableSegments    bool    `json:"expandable_segments"`
	CUDAContextMiB        float64 `json:"cuda_context_mib"`
	NCCLMiB               float64 `json:"nccl_mib"`
	WorkspaceMiB          float64 `json:"workspace_mib"`
	FragmentationFraction float64 `json:"fragmentation_fraction"`
}

// Corrections are multiplicative factors per component, applied after the analytic model (1 = none). They are
// what a calibration against measurements produces.
type Corrections struct {
	Weights     float64 `json:"weights"`
	Grads       float64 `json:"grads"`
	Optimizer   float64 `json:"optimizer"`
	Activations float64 `json:"activations"`
	Temporaries float64 `json:"temporaries"`
	Other       float64 `json:"other"`
}

// OutputConfig shapes the operator list.
type OutputConfig struct {
	Unroll bool `json:"unroll"` // one record per layer instead of one per kind with an L multiplier
}

// DefaultConfig returns the defaults every config starts from.
func DefaultConfig() Config {
	return Config{
		Mode: "train",
		Training: TrainingConfig{
			MicroBatchSize: 1, SeqLength: 2048, Precision: "bf16-mixed", Optimizer: "adamw",
			OptimizerImpl: "foreach", Attention: "flash", Recompute: "none", Loss: "standard", Kernels: "fused",
			LossChunkTokens: 1024, LossChunks: 8,
		},
		Inference: InferenceConfig{BatchSize: 1, PromptLength: 2048},
		Parallel:  ParallelConfig{TP: 1, PP: 1, CP: 1, EP: 1, PPSchedule: "1f1b", VirtualStages: 1, GradBuffer: "auto", FSDPPrefetchLayers: 1},
		Hardware: HardwareConfig{
			GPU: "h100-sxm", NumGPUs: 1, GPUsPerNode: 8, UsableFraction: 0.95, MFU: 0.4,
			InterNodeGBps: 50, CommEfficiency: 0.7, DPOverlap: 0.8,
		},
		Allocator:   AllocatorConfig{CUDAContextMiB: -1, NCCLMiB: -1, WorkspaceMiB: -1, FragmentationFraction: -1},
		Corrections: Corrections{1, 1, 1, 1, 1, 1},
	}
}

// LoadConfig reads a JSON (or YAML, by extension or content) config file strictly: unknown keys, wrong types and
// impossible values are errors naming the key (and, for what the file wrote, its line). The result is resolved
// (presets applied, auto values filled).
func LoadConfig(path string) (*Config, error) { return LoadConfigFramework(path, "") }

// configLimits bound a config file as it is parsed (see LimitDoc).
var configLimits = configfile.Limits{MaxBytes: maxConfigBytes, MaxDepth: 16, MaxItems: maxConfigList, MaxValues: 1 << 18}

// LoadConfigFramework is LoadConfig with the framework given from outside (the --framework flag): it replaces
// the file's framework key, and the file's other keys still override that framework's defaults.
func LoadConfigFramework(path, framework string) (*Config, error) {
	doc, err := configfile.ReadFile(path, "a static config", configLimits)
	if err != nil {
		return nil, err
	}
	cfg, err := configFromDoc(doc, framework)
	if err != nil {
		var placed *configfile.Error
		if errors.As(err, &placed) {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

// ParseConfig decodes a config from JSON or YAML bytes, applies its framework and preset and resolves it.
func ParseConfig(data []byte, yamlInput bool) (*Config, error) {
	return ParseConfigFramework(data, yamlInput, "")
}

// ParseConfigFramework is ParseConfig with the framework set from outside ("" keeps the document's).
func ParseConfigFramework(data []byte, yamlInput bool, framework string) (*Config, error) {
	if len(data) > maxConfigBytes {
		return nil, fmt.Errorf("config is %d bytes; a static config is at most %d", len(data), maxConfigBytes)
	}
	doc, err := configfile.Parse("", data, yamlInput, configLimits)
	if err != nil {
		return nil, err
	}
	return configFromDoc(doc, framework)
}

// configFromDoc builds a config from a parsed document: the defaults, then the framework's, then the model
// preset or size, then every key the document sets; then resolves it.
func configFromDoc(doc *configfile.Doc, framework string) (*Config, error) {
	if doc.Root.Kind != configfile.Object {
		return nil, fmt.Errorf("config: expected an object such as {\"model\": {\"preset\": \"llama3-8b\"}}, got %s", doc.Root.Kind)
	}
	cfg := DefaultConfig()
	name := framework
	if fw := doc.Root.Get("framework"); fw != nil && name == "" {
		if err := doc.DecodeAt(fw, "framework", &name); err != nil {
			return nil, fmt.Errorf("%w (%s)", err, strings.Join(FrameworkNames(), " | "))
		}
	}
	if name != "" {
		if err := cfg.ApplyFramework(name); err != nil {
			return nil, doc.ErrorAt("framework", "%v", err)
		}
	}
	if err := applyModelBase(doc, &cfg.Model); err != nil {
		return nil, err
	}
	if err := doc.Decode(&cfg); err != nil {
		return nil, err
	}
	if framework != "" {
		cfg.Framework = framework
	}
	if err := cfg.Resolve(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// applyModelBase fills the model from model.preset or model.size_billions before explicit keys are applied.
func applyModelBase(doc *configfile.Doc, m *ModelConfig) error {
	model := doc.Root.Get("model")
	if model == nil || model.Kind != configfile.Object {
		return nil // Decode reports a model that is not an object
	}
	var preset string
	if p := model.Get("preset"); p != nil {
		if err := doc.DecodeAt(p, "model.preset", &preset); err != nil {
			return err
		}
	}
	if preset != "" {
		pm, err := Preset(preset)
		if err != nil {
			return doc.ErrorAt("model.preset", "%v", err)
		}
		*m = pm
		return nil
	}
	var size float64
	if p := model.Get("size_billions"); p != nil {
		if err := doc.DecodeAt(p, "model.size_billions", &size); err != nil {
			return err
		}
	}
	if size != 0 {
		pm, err := ModelForSize(size)
		if err != nil {
			return doc.ErrorAt("model.size_billions", "%v", err)
		}
		*m = pm
	}
	return nil
}
