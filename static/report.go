package static

// ReportVersion is bumped whenever a field of Report changes meaning or is removed.
const ReportVersion = 1

// Report is the estimator's single model; console, Markdown, JSON and PNG are renderers of it. The JSON keeps
// MemScope's shape (summary, operators, metadata) and adds the per-GPU, allocator, fit, time and roofline keys.
type Report struct {
	Version   int        `json:"version"`
	Summary   Summary    `json:"summary"`
	Operators []Operator `json:"operators"`
	Metadata  Metadata   `json:"metadata"`

	Params          ParamCount       `json:"params"`
	Stages          []Stage          `json:"stages"` // one per pipeline stage (per-GPU figures)
	WorstStage      int              `json:"worst_stage"`
	Inference       *InferenceMemory `json:"inference,omitempty"`
	OOM             *OOMPoint        `json:"oom,omitempty"`  // where a run that cannot fit the GPU fails
	LoRA            *LoRAMemory      `json:"lora,omitempty"` // adapter and frozen-base figures of LoRA training
	Attention       *AttentionChoice `json:"attention,omitempty"`
	Fit             Fit              `json:"fit"`
	Time            *TimeEstimate    `json:"time,omitempty"`
	Roofline        *Roofline        `json:"roofline,omitempty"`
	Strategies      []StrategyRow    `json:"strategies,omitempty"`
	MaxBatch        *SearchResult    `json:"max_batch,omitempty"`
	MaxSeq          *SearchResult    `json:"max_seq_length,omitempty"`
	Recommendations []Recommendation `json:"recommendations"`
	Assumptions     []string         `json:"assumptions"`
	Config          Config           `json:"config"` // resolved
}

// Summary holds MemScope's keys, per GPU for the worst pipeline stage, plus the new keys.
type Summary struct {
	ParamCount            int64  `json:"param_count"` // whole model
	WeightMemoryBytes     int64  `json:"weight_memory_bytes"`
	GradMemoryBytes       int64  `json:"grad_memory_bytes"`
	OptimizerMemoryBytes  int64  `json:"optimizer_memory_bytes"`
	ActivationMemoryBytes int64  `json:"activation_memory_bytes"`
	TemporaryMemoryBytes  int64  `json:"temporary_memory_bytes"`
	PersistentMemoryBytes int64  `json:"persistent_memory_bytes"`
	PeakMemoryBytes       int64  `json:"peak_memory_bytes"` // peak allocated on the worst GPU
	PeakStage             string `json:"peak_stage"`
	// PeakMicroBatch and PeakAccumulatedGradBytes are the worst stage's Stage.PeakMicroBatch and
	// AtPeak.AccumulatedGrads: where gradient accumulation moves the peak into a later micro-batch.
	PeakMicroBatch           int   `json:"peak_micro_batch,omitempty"`
	PeakAccumulatedGradBytes int64 `json:"peak_accumulated_grad_bytes,omitempty"`

	OtherMemoryBytes   int64  `json:"other_memory_bytes"` // allocator-visible workspaces and buffers
	KVCacheMemoryBytes int64  `json:"kv_cache_memory_bytes,omitempty"`
	ParamCountPerGPU   int64  `json:"param_count_per_gpu"`
	PeakReservedBytes  int64  `json:"peak_reserved_bytes"` // predicted torch.cuda.max_memory_reserved
	ReservedSource     string `json:"reserved_source"`     // ReservedByReplay or ReservedByAllowance
	// ReservedSegments is the replayed pool's segment count at its peak, ReservedFreeAtPeakBytes its cached
	// bytes no live block used then (reserved − allocated); both 0 when no replay ran.
	ReservedSegments        int        `json:"reserved_segments,omitempty"`
	ReservedFreeAtPeakBytes int64      `json:"reserved_free_at_peak_bytes,omitempty"`
	DeviceTotalBytes        int64      `json:"device_total_bytes"`   // + CUDA context and NCCL, what nvidia-smi shows
	WorstPipelineStage      int        `json:"worst_pipeline_stage"` // index of the stage these figures are for
	NumGPUs                 int        `json:"num_gpus"`
	WholeModel              WholeModel `json:"whole_model"`
}

// WholeModel are unsharded figures for the entire model (one replica, no parallelism).
type WholeModel struct {
	WeightMemoryBytes    int64 `json:"weight_memory_bytes"`
	GradMemoryBytes      int64 `json:"grad_memory_bytes"`
	OptimizerMemoryBytes int64 `json:"optimizer_memory_bytes"`
	// ActivationMemoryBytes is one micro-batch through all layers on one device (no TP/SP/CP split).
	ActivationMemoryBytes int64   `json:"activation_memory_bytes"`
	BytesPerParam         float64 `json:"model_state_bytes_per_param"`
	// SumPeakAcrossGPUs adds every GPU's predicted peak allocated.
	SumPeakAcrossGPUs int64 `json:"sum_peak_allocated_across_gpus"`
}

// Tensor is one input or output of an operator.
type Tensor struct {
	Name  string  `json:"name"`
	Shape []int64 `json:"shape"`
	Dtype string  `json:"dtype"`
	Bytes int64   `json:"bytes"`
}

// Operator is one operator/module record (MemScope's shape). For aggregated records Multiplier > 1 and
// MemoryBytes already includes it.
type Operator struct {
	Name        string         `json:"name"`
	Category    string         `json:"category"` // embedding, norm, attention, mlp, moe, loss, weights, grads, optimizer, communication
	Phase       string         `json:"phase"`    // persistent, forward, backward, optimizer_step, prefill
	Inputs      []Tensor       `json:"inputs"`
	Outputs     []Tensor       `json:"outputs"`
	MemoryBytes int64          `json:"memory_bytes"` // saved-for-backward (or persistent) bytes on this GPU
	Persistent  bool           `json:"persistent"`
	Formula     string         `json:"formula"`
	Notes       string         `json:"notes"`
	Extra       map[string]any `json:"extra"`

	Layer      int     `json:"layer"` // -1 outside the layer stack; first layer of an aggregated record
	Multiplier int64   `json:"multiplier"`
	TempBytes  int64   `json:"temp_bytes"` // transient workspace while the op runs
	FLOPs      float64 `json:"flops"`      // per call, this GPU
	BytesMoved float64 `json:"bytes_moved"`

	seq []seqTensor // the tensors the operator allocates, for the allocation sequence (steps.go)
	bwd []bwdStep   // its backward's allocations and frees in order, where the sequence follows them one by one
}

// Metadata describes the run.
type Metadata struct {
	Mode         string `json:"mode"`
	Framework    string `json:"framework,omitempty"` // whose defaults filled the config (framework.go)
	ModelType    string `json:"model_type"`
	Model        string `json:"model"`
	Dtype        string `json:"dtype"`
	GPU          string `json:"gpu"`
	Layout       string `json:"layout"` // e.g. "dp=2 tp=4 pp=1 cp=1 ep=1 sp=false zero=1"
	Tool         string `json:"tool"`
	OperatorsFor string `json:"operators_for"` // which GPU/stage the operator list describes
	Unrolled     bool   `json:"unrolled"`
}

// Stage holds per-GPU predictions for one pipeline stage (all GPUs of a stage are alike).
type Stage struct {
	Index            int    `json:"index"`
	Layers           int    `json:"layers"`
	FirstLayer       int    `json:"first_layer"`
	Params           int64  `json:"params"` // on one GPU of the stage, before ZeRO sharding
	InflightLayerMBs int64  `json:"inflight_layer_microbatches"`
	Weights          int64  `json:"weight_memory_bytes"`
	Grads            int64  `json:"grad_memory_bytes"`
	Optimizer        int64  `json:"optimizer_memory_bytes"`
	Activations      int64  `json:"activation_memory_bytes"`
	Temporaries      int64  `json:"temporary_memory_bytes"` // transient at the peak
	Other            int64  `json:"other_memory_bytes"`
	KVCache          int64  `json:"kv_cache_memory_bytes,omitempty"`
	ForwardPeak      int64  `json:"forward_peak_bytes"`
	BackwardPeak     int64  `json:"backward_peak_bytes"`
	OptimizerPeak    int64  `json:"optimizer_step_peak_bytes"`
	PeakAllocated    int64  `json:"peak_allocated_bytes"`
	PeakStage        string `json:"peak_stage"`
	// PeakMicroBatch is, under gradient accumulation, the micro-batch of the optimizer step in which the peak is
	// first reached: 2 when it is the forward or backward of a micro-batch that runs with the gradients of the
	// earlier ones (AtPeak.AccumulatedGrads), every later one reaching it again; 0 when the first micro-batch
	// (or the optimizer step) already holds the peak.
	PeakMicroBatch int   `json:"peak_micro_batch,omitempty"`
	PeakReserved   int64 `json:"peak_reserved_bytes"`
	// ReservedSource says how PeakReserved was predicted: ReservedByReplay or ReservedByAllowance.
	ReservedSource string `json:"reserved_source"`
	// ReservedSegments and ReservedFreeAtPeak describe the replayed pool when it reached PeakReserved: its
	// segments, and the cached bytes no live block used (reserved − allocated then); 0 without a replay.
	ReservedSegments   int   `json:"reserved_segments,omitempty"`
	ReservedFreeAtPeak int64 `json:"reserved_free_at_peak_bytes,omitempty"`
	DeviceTotal        int64 `json:"device_total_bytes"`
	EndOfStepAllocated int64 `json:"end_of_step_allocated_bytes"` // what stays allocated between steps
	// AtPeak is what is live at the peak besides weights, optimizer states and other buffers.
	AtPeak PeakBreakdown `json:"at_peak"`
}

// PeakBreakdown splits the non-persistent part of the peak, in package components' sense: Grads are parameter
// gradients, Activations what forward keeps for backward, Temporaries what is transient (activation gradients,
// logits, the loss and its gradient, inference's working set), KVCache the inference cache as it is at the peak.
type PeakBreakdown struct {
	Grads       int64 `json:"grad_bytes"`
	Activations int64 `json:"activation_bytes"`
	Temporaries int64 `json:"temporary_bytes"`
	KVCache     int64 `json:"kv_cache_bytes,omitempty"`
	// AccumulatedGrads is the part of Grads that gradient accumulation keeps from the step's earlier
	// micro-batches at a peak of a later one (Stage.PeakMicroBatch); 0 otherwise.
	AccumulatedGrads int64 `json:"accumulated_grad_bytes,omitempty"`
}

// InferenceMemory breaks down the inference prediction (MemWall's weights / KV cache / activations).
type InferenceMemory struct {
	Weights         int64 `json:"weight_memory_bytes"`
	KVCache         int64 `json:"kv_cache_memory_bytes"`
	KVBytesPerToken int64 `json:"kv_cache_bytes_per_token"`
	Activations     int64 `json:"activation_memory_bytes"` // prefill working set
	ContextTokens   int64 `json:"context_tokens"`
}

// OOMPoint is the first allocation of the first training step that the GPU cannot hold: PyTorch raises
// OutOfMemoryError there, and torch.cuda.max_memory_allocated is AllocatedBytes.
type OOMPoint struct {
	Step           int    `json:"step"`  // 1 = the first step (no optimizer states yet), 2 = once they exist
	Phase          string `json:"phase"` // forward | backward | optimizer_step
	Layer          int    `json:"layer"` // -1 outside the layer stack
	Operator       string `json:"operator"`
	AllocatedBytes int64  `json:"allocated_bytes"` // allocated when the request fails
	RequestBytes   int64  `json:"request_bytes"`
	LimitBytes     int64  `json:"limit_bytes"` // GPU capacity − CUDA context − NCCL buffers
}

// LoRAMemory breaks down LoRA / QLoRA training on the worst GPU.
type LoRAMemory struct {
	Rank             int      `json:"rank"`
	Targets          []string `json:"targets"`
	AdapterParams    int64    `json:"adapter_params"` // trainable
	AdapterDtype     string   `json:"adapter_dtype"`
	BaseDtype        string   `json:"base_dtype"`
	FrozenBaseBytes  int64    `json:"frozen_base_bytes"`  // quantized or 16-bit base weights
	AdapterBytes     int64    `json:"adapter_bytes"`      // adapter weights
	DequantTempBytes int64    `json:"dequant_temp_bytes"` // one weight dequantized (nf4/int8), forward and backward
}

// AttentionChoice is the attention kernel that runs and why (PyTorch's SDPA dispatch for "sdpa").
type AttentionChoice struct {
	Requested string `json:"requested"`
	Kernel    string `json:"kernel"` // flash | efficient | cudnn | math | flex | standard
	Why       string `json:"why"`
}

// Fit is the verdict against the GPU.
type Fit struct {
	GPU            string  `json:"gpu"`
	CapacityBytes  int64   `json:"capacity_bytes"`
	UsableFraction float64 `json:"usable_fraction"`
	UsableBytes    int64   `json:"usable_bytes"`
	NeededBytes    int64   `json:"needed_bytes"` // device total of the worst GPU
	HeadroomBytes  int64   `json:"headroom_bytes"`
	Fits           bool    `json:"fits"`
	Verdict        string  `json:"verdict"`
}

// TimeEstimate is the training-time and cost estimate.
type TimeEstimate struct {
	FLOPsPerToken         float64 `json:"flops_per_token"`          // model FLOPs (6N + attention)
	HardwareFLOPsPerToken float64 `json:"hardware_flops_per_token"` // with recomputation
	TokensPerStep         int64   `json:"tokens_per_step"`
	ComputeSeconds        float64 `json:"compute_seconds_per_step"`
	BubbleFraction        float64 `json:"pipeline_bubble_fraction"`
	TPCommSeconds         float64 `json:"tp_comm_seconds_per_step"`
	CPCommSeconds         float64 `json:"cp_comm_seconds_per_step"`
	PPCommSeconds         float64 `json:"pp_comm_seconds_per_step"`
	EPCommSeconds         float64 `json:"ep_comm_seconds_per_step"`
	DPCommSeconds         float64 `json:"dp_comm_seconds_per_step"`
	DPExposedSeconds      float64 `json:"dp_exposed_seconds_per_step"`
	StepSeconds           float64 `json:"step_seconds"`
	TokensPerSecond       float64 `json:"tokens_per_second"`
	MFU                   float64 `json:"mfu"` // model FLOPs / (time · peak) after communication and bubbles
	CommFraction          float64 `json:"comm_fraction"`
	Steps                 int64   `json:"steps,omitempty"`
	TotalHours            float64 `json:"total_hours,omitempty"`
	GPUHours              float64 `json:"gpu_hours,omitempty"`
	Cost                  float64 `json:"cost,omitempty"`
}

// Roofline places the operators of one layer (and the head) on the GPU's roof.
type Roofline struct {
	GPU           string          `json:"gpu"`
	Dtype         string          `json:"dtype"`
	PeakTFLOPS    float64         `json:"peak_tflops"`
	BandwidthTBs  float64         `json:"bandwidth_tbs"`
	RidgePoint    float64         `json:"ridge_point_flops_per_byte"`
	Points        []RooflinePoint `json:"points"`
	PredictedUtil float64         `json:"predicted_utilization"` // FLOP-weighted over the points
}

// RooflinePoint is one operator on the roofline.
type RooflinePoint struct {
	Name        string  `json:"name"`
	Phase       string  `json:"phase"`
	FLOPs       float64 `json:"flops"`
	Bytes       float64 `json:"bytes"`
	Intensity   float64 `json:"arithmetic_intensity"`
	Bound       string  `json:"bound"` // memory | compute
	Attainable  float64 `json:"attainable_tflops"`
	Utilization float64 `json:"predicted_utilization"`
	Seconds     float64 `json:"predicted_seconds"`
	// CallsPerStep weights the point in predicted_utilization: layers × micro-batches × 3 (forward and the
	// twice-as-costly backward) for layer operators, once for the optimizer step.
	CallsPerStep float64 `json:"calls_per_step"`
}

// StrategyRow is one line of the strategy comparison.
type StrategyRow struct {
	Name         string  `json:"name"`
	DP           int     `json:"dp"`
	TP           int     `json:"tp"`
	PP           int     `json:"pp"`
	ZeroStage    int     `json:"zero_stage"`
	SP           bool    `json:"sequence_parallel"`
	PeakBytes    int64   `json:"peak_allocated_bytes"`
	DeviceBytes  int64   `json:"device_total_bytes"`
	Fits         bool    `json:"fits"`
	StepSeconds  float64 `json:"step_seconds"`
	TokensPerSec float64 `json:"tokens_per_second"`
	CommFraction float64 `json:"comm_fraction"`
	Note         string  `json:"note,omitempty"`
}

// SearchResult is the outcome of a max-batch or max-sequence search.
type SearchResult struct {
	Parameter   string `json:"parameter"`
	Max         int    `json:"max"` // 0 = even the smallest value does not fit
	PeakBytes   int64  `json:"peak_allocated_bytes"`
	DeviceBytes int64  `json:"device_total_bytes"`
	Note        string `json:"note,omitempty"`
}

// Recommendation is advice with the numbers behind it.
type Recommendation struct {
	Severity     string `json:"severity"` // critical | high | medium | info
	Title        string `json:"title"`
	Detail       string `json:"detail"`
	SavesBytes   int64  `json:"saves_bytes,omitempty"`
	NewPeakBytes int64  `json:"new_device_total_bytes,omitempty"`
}

// The values of Stage.ReservedSource (and Summary.ReservedSource).
const (
	// ReservedByReplay: the allocation sequence replayed through the caching-allocator model.
	ReservedByReplay = "allocator replay"
	// ReservedByAllowance: allocated + rounding + allocator.fragmentation_fraction.
	ReservedByAllowance = "flat allowance"
)
