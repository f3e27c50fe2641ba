package static

import (
	"fmt"
	"math"
	"strings"

	"github.com/memscan/memscan/gpu"
	"github.com/memscan/memscan/internal/units"
)

const (
	mib = 1 << 20
	gib = 1 << 30
)

// Estimate predicts per-GPU memory (every pipeline stage, the worst one in the summary), the allocated and
// reserved peaks, the fit verdict, training time and the roofline for cfg. cfg is resolved on a copy.
func Estimate(cfg Config) (*Report, error) {
	r, err := estimateWith(cfg, true)
	if err != nil {
		return nil, err
	}
	r.Time = estimateTime(r, &r.Config)
	r.Roofline = buildRoofline(r, &r.Config)
	r.Recommendations = recommend(r)
	return r, nil
}

// est carries the resolved quantities shared by the model builders.
type est struct {
	c   *Config
	x   dims
	gpu gpu.Spec
	// per-GPU workload
	b, s, sl, n     int64 // micro-batch, sequence, local sequence (s/cp), tokens per micro-batch on this GPU
	t, spDiv        int64
	aL, gL, fL, feL int64
	ab, pb, gb      float64 // activation, parameter, gradient bytes
	nDense, nExpert int64   // ZeRO sharding group sizes
	layersPerStage  int64   // layers on the rank being estimated (setRank)
	split           []int   // layers of each pipeline stage (ppSplit)
	inference       bool
	lora            *LoRAConfig         // training with adapters on a frozen base; nil otherwise
	kernel          attnKernel          // the attention kernel that runs
	seqs            map[int]*seqBuilder // each stage's allocation sequence, where it is replayed
}

func newEst(c *Config) *est {
	m := c.Model
	vp := int64(m.VocabSize)
	if m.MakeVocabDivisibleBy > 0 {
		mult := int64(m.MakeVocabDivisibleBy * c.Parallel.TP)
		vp = (vp + mult - 1) / mult * mult
	}
	e := &est{c: c, x: modelDims(m, vp), gpu: c.GPU(), inference: c.Mode == "inference"}
	p := c.Parallel
	e.t = int64(p.TP)
	e.spDiv = 1
	if p.SequenceParallel && p.TP > 1 {
		e.spDiv = e.t
	}
	if e.inference {
		e.b, e.s = int64(c.Inference.BatchSize), int64(c.Inference.PromptLength)
		e.ab = dtypeBytes[c.Inference.KVCache.Dtype]
		if e.ab < 2 {
			e.ab = 2
		}
		e.pb = dtypeBytes[c.Inference.WeightDtype]
	} else {
		e.b, e.s = int64(c.Training.MicroBatchSize), int64(c.Training.SeqLength)
		e.ab = dtypeBytes[c.actDtype()]
		e.pb = dtypeBytes[c.paramDtype()]
		e.gb = dtypeBytes[c.Training.GradPrecision]
	}
	e.sl = e.s / int64(p.CP)
	e.n = e.b * e.sl
	e.aL = e.x.a / e.t
	e.gL = max(e.x.g/e.t, 1)
	e.fL = e.x.f / e.t
	e.feL = e.x.fe / int64(p.ETP)
	e.nDense = int64(p.DP * p.CP)
	e.nExpert = max(1, int64(p.DP*p.CP*p.TP)/int64(p.EP*p.ETP))
	e.split = c.ppSplit()
	e.layersPerStage = e.rankLayers(0)
	if !e.inference {
		e.lora = c.Training.LoRA
	}
	e.kernel = e.selectAttention()
	e.seqs = map[int]*seqBuilder{}
	return e
}

// perGPU is the number of elements of p held by one GPU before ZeRO sharding.
func (e *est) perGPU(p paramTensor) float64 {
	n := float64(p.numel())
	switch p.Class {
	case tpSharded:
		return n / float64(e.t)
	case kvSharded:
		return n * float64(e.gL) / float64(e.x.g)
	case expertShard:
		return n / float64(e.c.Parallel.EP*e.c.Parallel.ETP)
	}
	return n
}

func (e *est) shardGroup(p paramTensor) float64 {
	if p.Class == expertShard {
		return float64(e.nExpert)
	}
	return float64(e.nDense)
}

// stateBytes is optimizer-state bytes (excluding the fp32 master copy) for elems elements of p.
func (e *est) stateBytes(p paramTensor, elems float64) float64 {
	sb := 4.0
	if e.c.lowPrecisionStates() {
		sb = 2 // pure low-precision training keeps optimizer states in the parameter dtype
	}
	switch e.c.Training.Optimizer {
	case "adamw":
		return 2 * sb * elems
	case "adamw-8bit":
		return 2*elems + elems/2048*4*2 // two uint8 states plus an fp32 absmax per 2048-element block each
	case "sgd":
		return sb * elems
	case "adafactor":
		if p.matrix() {
			frac := elems / float64(p.numel())
			return sb * float64(p.Shape[0]+p.Shape[1]) * frac
		}
		return sb * elems
	}
	return 0
}

// modelStates is weights/grads/optimizer bytes per GPU for a parameter list.
type modelStates struct {
	params                float64
	weights, grads, opt   float64
	largestWeightPerGPU   float64
	reservedRoundingExtra float64
	adapterParams         float64 // LoRA adapter parameters (trainable) among params
	wholeStats            float64 // bitsandbytes quantization statistics among weights, on the GPU whatever the sharding (quantStatsWhole)
}

func (e *est) states(ps []paramTensor, mult float64, inLayer bool) modelStates {
	ms := e.statesOnGPU(ps, mult, inLayer)
	if e.fsdpOffload() {
		// FSDP CPU offload keeps the shards of parameters, gradients and optimizer states in host memory; the
		// quantization statistics bitsandbytes holds outside the parameters stay on the GPU.
		ms.weights, ms.grads, ms.opt, ms.reservedRoundingExtra = ms.wholeStats, 0, 0, 0
	}
	return ms
}

// fsdpOffload reports FSDP with CPUOffload(offload_params=True) (parallel.fsdp_offload).
func (e *est) fsdpOffload() bool {
	return !e.inference && e.c.Parallel.ZeroStage == 3 && e.c.Parallel.FSDPOffload
}

// statesOnGPU is states before any offloading.
func (e *est) statesOnGPU(ps []paramTensor, mult float64, inLayer bool) modelStates {
	if e.lora != nil {
		return e.loraStates(ps, mult, inLayer)
	}
	var ms modelStates
	zero := e.c.Parallel.ZeroStage
	mixed := e.c.mixed()
	for _, p := range ps {
		el := e.perGPU(p) * mult
		N := e.shardGroup(p)
		ms.params += el
		if e.inference {
			ms.weights += el * e.pb
			ms.largestWeightPerGPU = math.Max(ms.largestWeightPerGPU, el/mult*e.pb)
			continue
		}
		w := el * e.pb
		fsdpMaster := e.fsdpMaster()
		if zero == 3 {
			w = el * e.pb / N
			if fsdpMaster {
				w = el * 4 / N // FSDP2 keeps the sharded fp32 parameter itself as the master copy
			}
		}
		g := el * e.gb
		if zero >= 2 {
			g /= N
		}
		o := e.stateBytes(p, el)
		if mixed && !fsdpMaster {
			o += 4 * el // fp32 master weights (DeepSpeed ZeRO-3 shards them with the states)
		}
		if zero >= 1 {
			o /= N
		}
		ms.weights += w
		ms.grads += g
		ms.opt += o
		ms.largestWeightPerGPU = math.Max(ms.largestWeightPerGPU, el/mult*e.pb)
		if zero == 0 && p.numel() > 0 {
			// One allocation per tensor (weights, grad, each state): large ones round up to 2 MiB.
			k := 2.0
			if e.c.Training.Optimizer != "sgd" {
				k = 4
			}
			ms.reservedRoundingExtra += k * float64(mult) * mib
		}
	}
	return ms
}

func roundUp(v, m int64) int64 {
	if m <= 0 {
		return v
	}
	return (v + m - 1) / m * m
}

// segmentBytes is what the caching allocator reserves for one request of size v (static_formulas.md §1.9).
func segmentBytes(v int64) int64 {
	v = roundUp(v, 512)
	switch {
	case v <= mib:
		return v // carved from shared 2 MiB small segments
	case v < 10*mib:
		return v // shares a 20 MiB large segment
	default:
		return roundUp(v, 2*mib)
	}
}

// inflight returns the layer-micro-batches whose activations rank i holds at the worst moment of its schedule
// and the micro-batch equivalents of the embedding-side tensors (pipeline.go).
func (e *est) inflight(i int) (layerMBs int64, mbs float64) {
	if e.c.Parallel.PP == 1 {
		return e.layersPerStage, 1
	}
	in := e.inflightOf(i)
	return in.layerMBs, float64(in.firstMBs)
}

// setRank makes rank i the one the per-GPU builders describe (its layer count).
func (e *est) setRank(i int) { e.layersPerStage = e.rankLayers(i) }

// stageLayers lists the model's layer indices rank i holds, chunk by chunk.
func (e *est) stageLayers(i int) []int {
	p := e.c.Parallel
	var out []int
	for k := 0; k < p.VirtualStages; k++ {
		stage := k*p.PP + i
		start := e.firstLayer(stage)
		for j := 0; j < e.split[stage]; j++ {
			out = append(out, start+j)
		}
	}
	if len(out) == 0 {
		out = append(out, e.firstLayer(i)) // a stage of only the embedding or the head
	}
	return out
}

// estimateCore is the memory prediction alone, as searches, strategy rows and recommendations need it (no
// failure point).
func estimateCore(cfg Config) (*Report, error) { return estimateWith(cfg, false) }

func estimateWith(cfg Config, withOOM bool) (*Report, error) {
	if err := cfg.Resolve(); err != nil {
		return nil, err
	}
	c := &cfg
	e := newEst(c)
	r := &Report{Version: ReportVersion, Config: cfg}
	r.Params = countParamsDims(e.x)
	pp := c.Parallel.PP

	layerPs := layerParams(e.x)
	embPs := embeddingParams(e.x)
	headPs := headParams(e.x, pp)
	layerOps := e.layerOps()
	embOps, headOps := e.embeddingOps(), e.headOps()

	var worst Stage
	var worstOps []Operator
	var layers modelStates // the worst rank's layer states, for the LoRA summary
	var opsByRank [][]Operator
	mostLayers := int64(0)
	for i := 0; i < pp; i++ {
		e.setRank(i)
		mostLayers = max(mostLayers, e.layersPerStage)
		rankStates := e.states(layerPs, float64(e.layersPerStage), true)
		ps := []paramTensor{}
		if i == 0 {
			ps = append(ps, embPs...)
		}
		if i == pp-1 {
			ps = append(ps, headPs...)
		}
		head := e.states(ps, 1, false)
		st, ops := e.stage(i, head, rankStates, layerPs, layerOps, embOps, headOps)
		opsByRank = append(opsByRank, ops)
		r.Stages = append(r.Stages, st)
		r.Summary.WholeModel.SumPeakAcrossGPUs += st.PeakAllocated * int64(c.Hardware.NumGPUs/pp)
		if i == 0 || st.DeviceTotal > worst.DeviceTotal {
			worst, worstOps, r.WorstStage, layers = st, ops, i, rankStates
		}
	}
	if pp > 1 && !e.inference && e.replayable(len(layerOps)) {
		worst, worstOps, r.WorstStage = e.replayPipeline(r, layerPs, layerOps, embOps, headOps, opsByRank)
		layers = e.states(layerPs, float64(e.rankLayers(r.WorstStage)), true)
	}
	// Timing and the roofline take the slowest stage: the one with the most layers.
	e.layersPerStage = mostLayers
	r.Operators = worstOps

	s := &r.Summary
	s.ParamCount = r.Params.Total
	s.WeightMemoryBytes = worst.Weights
	s.GradMemoryBytes = worst.Grads
	s.OptimizerMemoryBytes = worst.Optimizer
	s.ActivationMemoryBytes = worst.Activations
	s.TemporaryMemoryBytes = worst.Temporaries
	s.OtherMemoryBytes = worst.Other
	s.KVCacheMemoryBytes = worst.KVCache
	s.PersistentMemoryBytes = worst.Weights + worst.Grads + worst.Optimizer + worst.Other + worst.KVCache
	s.PeakMemoryBytes = worst.PeakAllocated
	s.PeakStage = worst.PeakStage
	s.PeakReservedBytes = worst.PeakReserved
	s.ReservedSource = worst.ReservedSource
	s.ReservedSegments = worst.ReservedSegments
	s.ReservedFreeAtPeakBytes = worst.ReservedFreeAtPeak
	s.DeviceTotalBytes = worst.DeviceTotal
	s.WorstPipelineStage = r.WorstStage
	s.ParamCountPerGPU = worst.Params
	s.NumGPUs = c.Hardware.NumGPUs
	e.wholeModel(r)
	if e.inference {
		ctx := int64(c.Inference.PromptLength + c.Inference.GenerateTokens)
		r.Inference = &InferenceMemory{Weights: worst.Weights, KVCache: worst.KVCache, Activations: worst.Activations, ContextTokens: ctx,
			KVBytesPerToken: e.kvBytesPerToken()}
	}

	g := e.gpu
	r.Fit = fitVerdict(g, c.Hardware.UsableFraction, worst.DeviceTotal)
	if limit := g.MemoryBytes() - (worst.DeviceTotal - worst.PeakReserved); withOOM && worst.PeakReserved > limit {
		r.OOM = e.replayOOM(r.WorstStage, limit)
		if r.OOM == nil && worst.PeakAllocated > limit {
			r.OOM = e.oomPoint(worst, r.WorstStage, layerOps, embOps, headOps, limit)
		}
	}
	r.Attention = &AttentionChoice{Requested: c.Training.Attention, Kernel: e.kernel.name, Why: e.kernel.why}
	if e.lora != nil {
		lm := &LoRAMemory{Rank: e.lora.Rank, Targets: e.lora.Targets, AdapterDtype: e.lora.AdapterDtype, BaseDtype: e.lora.BaseDtype,
			AdapterParams: int64(layers.adapterParams), DequantTempBytes: int64(e.dequantTemp(layerPs))}
		lm.AdapterBytes = int64(layers.adapterParams * dtypeBytes[e.lora.AdapterDtype])
		lm.FrozenBaseBytes = worst.Weights - lm.AdapterBytes
		r.LoRA = lm
	}
	r.Metadata = Metadata{
		Mode: c.Mode, Framework: c.Framework, ModelType: c.Model.Type, Model: modelName(c), Dtype: c.actDtype(), GPU: g.Name,
		Layout: layoutString(c), Tool: "memscan static",
		OperatorsFor: fmt.Sprintf("one GPU of pipeline stage %d (the worst)", r.WorstStage),
		Unrolled:     c.Output.Unroll,
	}
	if e.inference {
		r.Metadata.Dtype = c.Inference.WeightDtype
	}
	r.Assumptions = e.assumptions(worst.ReservedSource)
	return r, nil
}

func modelName(c *Config) string {
	if c.Name != "" {
		return c.Name
	}
	if c.Model.Preset != "" {
		return c.Model.Preset
	}
	if c.Model.SizeBillions > 0 {
		return fmt.Sprintf("%gB (standard dims)", c.Model.SizeBillions)
	}
	return fmt.Sprintf("%s L%d h%d", c.Model.Type, c.Model.NumLayers, c.Model.HiddenSize)
}

func layoutString(c *Config) string {
	p := c.Parallel
	return fmt.Sprintf("gpus=%d dp=%d tp=%d pp=%d cp=%d ep=%d sp=%t zero=%d dist_opt=%t schedule=%s v=%d microbatches=%d",
		c.Hardware.NumGPUs, p.DP, p.TP, p.PP, p.CP, p.EP, p.SequenceParallel, p.ZeroStage, p.DistributedOptimizer,
		p.PPSchedule, p.VirtualStages, p.NumMicrobatches)
}

func fitVerdict(g gpu.Spec, frac float64, need int64) Fit {
	f := Fit{GPU: g.Name, CapacityBytes: g.MemoryBytes(), UsableFraction: frac, NeededBytes: need}
	f.UsableBytes = int64(float64(f.CapacityBytes) * frac)
	f.HeadroomBytes = f.UsableBytes - need
	f.Fits = need <= f.UsableBytes
	if f.Fits {
		f.Verdict = fmt.Sprintf("FITS: %s needed of %s usable (%.0f%% of %s), headroom %s",
			units.Bytes(need), units.Bytes(f.UsableBytes), frac*100, units.Bytes(f.CapacityBytes), units.Bytes(f.HeadroomBytes))
	} else {
		f.Verdict = fmt.Sprintf("DOES NOT FIT: %s needed of %s usable (%.0f%% of %s), short by %s",
			units.Bytes(need), units.Bytes(f.UsableBytes), frac*100, units.Bytes(f.CapacityBytes), units.Bytes(-f.HeadroomBytes))
	}
	return f
}

// stage computes one pipeline stage's per-GPU prediction and its operator list.
func (e *est) stage(i int, head, layers modelStates, layerPs []paramTensor, layerOps, embOps, headOps []Operator) (Stage, []Operator) {
	c := e.c
	pp := c.Parallel.PP
	first, last := i == 0, i == pp-1
	corr := c.Corrections
	st := Stage{Index: i, Layers: int(e.layersPerStage), FirstLayer: e.stageLayers(i)[0]}
	st.Params = int64(math.Round(head.params + layers.params))
	W := (head.weights + layers.weights) * corr.Weights
	G := (head.grads + layers.grads) * corr.Grads
	O := (head.opt + layers.opt) * corr.Optimizer

	other := e.otherBytes(head, layers) + e.pipeRecvBytes(i)
	st.Other = int64(other * corr.Other)
	st.Weights, st.Grads, st.Optimizer = int64(W), int64(G), int64(O)

	if e.inference {
		return e.inferenceStage(st, i, layerOps, embOps, headOps)
	}

	layerMBs, embMBs := e.inflight(i)
	st.InflightLayerMBs = layerMBs
	l := e.layersPerStage

	// Per layer-microbatch saved bytes and transients.
	var aLayerFull, fwdTempLayer, maxOut float64
	for _, op := range layerOps {
		aLayerFull += float64(op.MemoryBytes)
		fwdTempLayer = math.Max(fwdTempLayer, float64(op.TempBytes))
		for _, t := range op.Outputs {
			maxOut = math.Max(maxOut, float64(t.Bytes))
		}
	}
	// ckpt is what a recomputed layer keeps: its input (full), or torchtitan's per-op selection.
	ckpt := e.checkpointBytes()
	aLayer := aLayerFull
	recomputed := int64(0)
	if r := c.Training.Recompute; r == "full" || r == "op_selective" {
		recomputed = l
		if c.Training.RecomputeLayers > 0 {
			recomputed = min(l, int64(c.Training.RecomputeLayers))
		}
		// A recomputed layer keeps only ckpt; the rest is rebuilt, one layer at a time, in backward.
		aLayer = (float64(recomputed)*ckpt + float64(l-recomputed)*aLayerFull) / float64(l)
	}
	layerBwdTemp := 2*float64(e.n*e.x.h)*e.ab + 2*maxOut
	for _, op := range layerOps {
		if rb, ok := op.Extra["ring_backward_temp_bytes"].(int64); ok {
			layerBwdTemp += float64(rb) // context parallelism's ring buffers in the attention's backward
		}
	}
	if e.gb != e.pb && e.lora == nil {
		layerBwdTemp += layers.largestWeightPerGPU // low-precision weight gradient before accumulation
	}
	if recomputed > 0 {
		layerBwdTemp += aLayerFull
	}
	dq := e.dequantTemp(layerPs)
	fwdTempLayer += dq
	layerBwdTemp += dq

	var aEmb, aHead, headFwdTemp, headBwdTemp, headSaved float64
	if first {
		for _, op := range embOps {
			aEmb += float64(op.MemoryBytes)
		}
		aEmb *= embMBs
	}
	if last {
		for _, op := range headOps {
			aHead += float64(op.MemoryBytes)
			headFwdTemp = math.Max(headFwdTemp, float64(op.TempBytes))
			if bt, ok := op.Extra["backward_temp_bytes"].(int64); ok {
				headBwdTemp = float64(bt)
				headSaved += float64(op.MemoryBytes)
			}
			if op.Name == "final_logit_softcap" {
				headSaved += float64(op.MemoryBytes) // released by its backward, before the output layer's
			}
		}
	}
	keptMBs := layerMBs * (l - recomputed) / l
	aLayers := float64(keptMBs)*aLayerFull + float64(layerMBs-keptMBs)*ckpt
	offloaded := 0.0
	if c.Training.ActivationOffload && layerMBs > 2 {
		// torchtune OffloadActivations: saved tensors go to pinned host memory as they are produced and come
		// back one layer ahead of the backward, so about two layers' worth stay on the GPU.
		offloaded = aLayers * float64(layerMBs-2) / float64(layerMBs)
		aLayers -= offloaded
	}
	A := (aLayers + aEmb + aHead) * corr.Activations

	// ZeRO / FSDP communication buffers.
	var gatherTemp, reduceTemp, unsharded, headUnit, headUnitBwd float64
	layerPerGPU := 0.0
	for _, p := range layerPs {
		layerPerGPU += e.perGPU(p)
	}
	// What backward reduces per layer: every parameter's gradient, or under LoRA the adapters' only (the frozen
	// base has none), in the adapters' dtype.
	gradElems, gradBytes := layerPerGPU, e.gb
	if e.lora != nil {
		gradElems, gradBytes = e.adaptersPerLayer(), dtypeBytes[e.lora.AdapterDtype]
	}
	var accGrads float64 // a pipeline stage's unsharded gradients accumulated over its micro-batches (FSDP)
	switch z := c.Parallel.ZeroStage; {
	case z == 3:
		// What FSDP gathers (gatherBytes: param_dtype, float8 linears in 1 B, a frozen base as stored) and the
		// unsharded gradients autograd leaves in the compute dtype.
		var layerGather, rootGather, rootParams float64
		for _, p := range layerPs {
			layerGather += float64(e.gatherBytes(p, true))
		}
		for _, p := range e.rootParams(i) {
			rootGather += float64(e.gatherBytes(p, false))
			rootParams += e.perGPU(p)
		}
		cb := e.computeParamBytes()
		gatherTemp = float64(c.Parallel.FSDPPrefetchLayers+1) * layerGather
		reduceTemp = gradElems * gradBytes
		if e.lora == nil && e.gb > cb {
			reduceTemp += layerPerGPU * cb // the unsharded gradients in param_dtype before their cast to reduce_dtype
		}
		// The root unit (embedding, final norm, output layer) is not resharded after forward: its gathered
		// weights stay through the backward, and its backward adds its unsharded gradients.
		headUnit = rootGather
		headUnitBwd = rootGather + rootParams*cb
		if e.lora != nil {
			headUnitBwd = headUnit // the frozen root gets no gradient
		}
		if r := c.Parallel.FSDPReshardAfterForward; r != nil && !*r {
			// Without resharding after forward every layer's gathered parameters stay until its backward.
			unsharded = float64(l-1) * layerGather
		}
		if c.Parallel.PP > 1 {
			// Inside a pipeline stage (torchtitan: reshard_after_forward=False with PP; PipelineStage's
			// backward_maybe_with_nosync: no resharding or gradient sync until the last micro-batch) every layer
			// stays gathered for the whole step and the unsharded gradients accumulate in reduce_dtype.
			unsharded, gatherTemp = float64(l)*layerGather, 0
			accGrads = (gradElems*float64(l) + rootParams) * gradBytes
			reduceTemp = layerPerGPU * cb // one layer's unsharded gradients before they are added in
			if e.lora != nil {
				accGrads = gradElems * float64(l) * gradBytes
			}
		}
	case z >= 1 && !c.Parallel.DistributedOptimizer && c.Parallel.DP > 1:
		reduceTemp = math.Min(5e8, gradElems*float64(l)) * gradBytes // DeepSpeed reduce bucket (5e8 elements)
	}

	persistentGrads := c.Parallel.GradBuffer == "persistent"
	tc := corr.Temporaries
	fwdTemp := math.Max(fwdTempLayer, headFwdTemp) + gatherTemp
	// Backward: at its start every in-flight activation is live plus the loss gradient; at its end the
	// micro-batch's activations are gone and (on-demand) gradients are all allocated.
	gOnDemand := 0.0
	if !persistentGrads {
		gOnDemand = G
	}
	headGrads := head.grads * corr.Grads
	if c.Parallel.ZeroStage >= 2 {
		headGrads = 0
	}
	inBwd := c.Training.OptimizerInBackward
	if inBwd {
		// optimizer_in_bwd steps each parameter in its gradient hook and frees the gradient: one is alive.
		g := math.Max(head.largestWeightPerGPU, layers.largestWeightPerGPU) / e.pb * e.gb
		gOnDemand, headGrads = math.Min(G, g), math.Min(headGrads, g)
	}
	gPersist := 0.0
	if persistentGrads {
		gPersist = G
	}
	aEnd := A - (math.Min(aLayer*float64(l), aLayers)+headSaved)*corr.Activations
	type moment struct {
		name              string
		grads, acts, temp float64
	}
	layersUnsharded := unsharded
	// Gathered (unsharded) parameters kept between forward and backward are FSDP buffers, like the all-gather
	// in flight: they count as temporaries, never as activations.
	unsharded += headUnit
	fwd := moment{"forward_end", gPersist, A, fwdTemp*tc + unsharded}
	// The loss backward runs before any gradient of the on-demand kind exists; the output layer's and the
	// last layer's backward follow once the loss has released what it saved.
	// (Megatron's persistent-buffer runs keep the fused loss's buffer as the logits gradient, so there the two
	// overlap.)
	bStart := moment{"backward", gPersist, A, (math.Max(headBwdTemp, layerBwdTemp)+gatherTemp+reduceTemp)*tc + unsharded}
	if !persistentGrads {
		bStart.temp = (headBwdTemp+gatherTemp+reduceTemp)*tc + unsharded
		firstLayer := moment{"backward", headGrads, A - headSaved*corr.Activations, (math.Max(layerBwdTemp, headUnitBwd)+gatherTemp+reduceTemp)*tc + unsharded}
		if firstLayer.grads+firstLayer.acts+firstLayer.temp > bStart.grads+bStart.acts+bStart.temp {
			bStart = firstLayer
		}
	}
	bEnd := moment{"backward", gPersist + gOnDemand, aEnd, (layerBwdTemp + gatherTemp + reduceTemp) * tc}
	if accGrads > 0 {
		// Steady pipeline state: every gradient accumulated unsharded, the in-flight micro-batches still held;
		// the sharded gradients appear only in the last micro-batch's reduce-scatter.
		bStart.grads += accGrads
		bEnd = moment{"backward", accGrads, aEnd, (layerBwdTemp + reduceTemp) * tc}
	}
	if outs := e.outputChunks(i); outs > 0 {
		// The last stage keeps every micro-batch's output (the logits) in PipelineStage.output_chunks until the
		// next step: the ones before the micro-batch in flight during backward.
		bStart.acts += outs * float64(max(1, c.Parallel.NumMicrobatches)-1) / float64(max(1, c.Parallel.NumMicrobatches))
		bEnd.acts += outs * float64(max(1, c.Parallel.NumMicrobatches)-1) / float64(max(1, c.Parallel.NumMicrobatches))
	}
	optTemp := 0.0
	if e.lora != nil && c.Training.OptimizerImpl == "foreach" {
		optTemp = layers.adapterParams * dtypeBytes[e.lora.AdapterDtype]
	} else if c.Training.OptimizerImpl == "foreach" && !inBwd {
		// torch._foreach_* AdamW materializes one intermediate list, in the state dtype, for the local parameters.
		sb := 4.0
		if c.lowPrecisionStates() {
			sb = 2
		}
		optTemp = (head.params + layers.params) * sb
		if c.Parallel.ZeroStage >= 1 {
			optTemp /= float64(e.nDense)
		}
	}
	// Mixed precision with 16-bit gradients: the optimizer steps on fp32 copies of them (Megatron's
	// Float16OptimizerWithFloat16Params and distributed optimizer: main_param.grad = main_grad.float(); DeepSpeed
	// likewise for its partition), 4 B per locally stepped parameter. Megatron drops them only in the next
	// iteration's zero_grad, so with its persistent grad buffer they are still allocated at the end of the step:
	// this is the 20 B/param (4 + 16/d distributed) of Megatron's fp16 table against 18 for bf16.
	mainGradCopy := 0.0
	if c.mixed() && e.gb < 4 && e.lora == nil {
		mainGradCopy = (head.params + layers.params) * 4 * corr.Grads
		if c.Parallel.ZeroStage >= 1 {
			mainGradCopy /= float64(e.nDense)
		}
	}
	opt := moment{"optimizer_step", G, 0, optTemp*tc + mainGradCopy}
	if outs := e.outputChunks(i); outs > 0 {
		// The schedule's step() returns the outputs merged (torch.cat of output_chunks) before the optimizer
		// runs; the chunks themselves stay until the next step clears them.
		opt.acts = outs
		opt.temp = math.Max(opt.temp, outs)
	}
	if inBwd {
		opt = moment{"optimizer_step", 0, 0, mainGradCopy} // the step already ran inside backward
	}
	base := W + O + float64(st.Other)
	total := func(m moment) float64 { return base + m.grads + m.acts + m.temp }
	bwd := bStart
	if total(bEnd) > total(bStart) {
		bwd = bEnd
	}
	st.Activations = int64(A)
	st.ForwardPeak, st.BackwardPeak, st.OptimizerPeak = int64(total(fwd)), int64(total(bwd)), int64(total(opt))
	peak := fwd
	for _, m := range []moment{bwd, opt} {
		if total(m) > total(peak) {
			peak = m
		}
	}
	st.PeakAllocated, st.PeakStage, st.Temporaries = int64(total(peak)), peak.name, int64(peak.temp)
	st.AtPeak = PeakBreakdown{Grads: int64(peak.grads), Activations: int64(peak.acts), Temporaries: int64(peak.temp)}
	st.EndOfStepAllocated = int64(W + gPersist + O + float64(st.Other)) // zero_grad(set_to_none) drops on-demand gradients
	if persistentGrads {
		st.EndOfStepAllocated += int64(mainGradCopy)
	}
	e.reserved(&st, head, layers, layerOps, layerMBs)
	if e.replayable(len(layerOps)) && c.Parallel.PP == 1 {
		e.replayStage(&st, i, layerPs, layerOps, embOps, headOps)
	}

	ops := e.operatorList(i, st, head, layers, layerOps, embOps, headOps, layerMBs, embMBs, recomputed,
		transients{layerBwd: layerBwdTemp, headBwd: headBwdTemp, gather: gatherTemp, reduce: reduceTemp, opt: optTemp,
			ckpt: ckpt, offloaded: offloaded * corr.Activations, unsharded: layersUnsharded, rootUnit: headUnit})
	return st, ops
}

// otherBytes are allocator-visible buffers that are neither parameters, gradients, states nor activations.
func (e *est) otherBytes(head, layers modelStates) float64 {
	c := e.c
	ws := c.Allocator.WorkspaceMiB
	if ws < 0 {
		// PyTorch allocates its GEMM workspaces through the caching allocator: one for cuBLAS (per handle and
		// stream) and one for cuBLASLt, each 32 MiB (CUBLAS_WORKSPACE_CONFIG=:4096:8; the Hopper default). Measured:
		// Megatron's functional tests keep ≈64 MiB beyond model states and Transformer Engine's workspace at the end
		// of the step, with and without Transformer Engine and on A100, H100 and GB200 alike.
		ws = 64
	}
	other := ws * mib
	if c.Training.TransformerEngine {
		other += float64(teWorkspaceBytes(e.gpu))
	}
	other += e.scoreBufferBytes()
	if !e.inference && c.Parallel.DP*c.Parallel.CP > 1 && c.Parallel.ZeroStage == 0 && c.Parallel.GradBuffer != "persistent" {
		// PyTorch DDP (gradient_as_bucket_view=False, the default) keeps bucket buffers the size of all gradients.
		other += head.grads + layers.grads
	}
	return other
}

// scoreBufferBytes is the attention-score buffer of Megatron's local (unfused) core attention: it takes the
// [b·a/t, s, s] input of its baddbmm from the global memory buffer, which keeps it for the rest of the run, so
// 2·b·a·s²/t bytes stay allocated besides the per-micro-batch scores and probabilities. Only standard attention
// with fused (Megatron) kernels and without Transformer Engine has it: flash attention never forms the scores, and
// TE's unfused attention and HF eager attention allocate the scores per call.
func (e *est) scoreBufferBytes() float64 {
	c := e.c
	if e.inference || c.Training.Attention != "standard" || c.Training.Kernels != "fused" || c.Training.TransformerEngine {
		return 0
	}
	return float64(e.b*e.aL*e.sl*e.s) * e.ab
}

// reserved predicts the caching allocator's reserved peak and the device total for the stage.
func (e *est) reserved(st *Stage, head, layers modelStates, layerOps []Operator, layerMBs int64) {
	c := e.c
	var extra float64
	if c.Parallel.ZeroStage == 0 && c.Parallel.GradBuffer != "persistent" {
		extra += head.reservedRoundingExtra + layers.reservedRoundingExtra/2 // on average half a 2 MiB granule
	}
	for _, op := range layerOps {
		if op.MemoryBytes > 0 {
			extra += float64(segmentBytes(op.MemoryBytes)-op.MemoryBytes) * float64(layerMBs)
		}
	}
	frag := c.Allocator.FragmentationFraction
	if frag < 0 {
		frag = 0.05
		if c.Allocator.ExpandableSegments {
			frag = 0.01
		}
	}
	churn := float64(st.Activations + st.Temporaries + st.KVCache)
	st.PeakReserved = roundUp(st.PeakAllocated+int64(extra+frag*churn), 2*mib)
	st.ReservedSource = ReservedByAllowance
	ctx := ctxOf(c)
	nccl := c.Allocator.NCCLMiB
	if nccl < 0 {
		nccl = 0
		p := c.Parallel
		for _, g := range []int{p.DP * p.CP, p.TP, p.PP, p.CP, p.EP} {
			if g > 1 {
				nccl += 160 // per communicator: channel buffers (NCCL_BUFFSIZE 4 MiB × channels) and proxies
			}
		}
	}
	st.DeviceTotal = st.PeakReserved + int64((ctx+nccl)*mib) + e.symmetricMemoryBytes()
}

func (e *est) wholeModel(r *Report) {
	c := e.c
	x := e.x
	w := &r.Summary.WholeModel
	total := float64(r.Params.Total)
	if e.inference {
		w.WeightMemoryBytes = int64(total * e.pb)
		w.BytesPerParam = e.pb
		return
	}
	one := *e
	one.t, one.spDiv, one.nDense, one.nExpert = 1, 1, 1, 1
	one.aL, one.gL, one.fL, one.feL = x.a, x.g, x.f, x.fe
	one.c = &Config{}
	*one.c = *c
	// The ZeRO stage stays: with every sharding group 1 it divides nothing, and it keeps the precision scheme
	// the per-GPU figures model (FSDP's fp32 sharded parameter is the master, so no separate copy).
	one.c.Parallel.EP, one.c.Parallel.ETP, one.c.Parallel.TP = 1, 1, 1
	ms := one.states(append(embeddingParams(x), headParams(x, 1)...), 1, false)
	ls := one.states(layerParams(x), float64(x.L), true)
	w.WeightMemoryBytes = int64(ms.weights + ls.weights)
	w.GradMemoryBytes = int64(ms.grads + ls.grads)
	w.OptimizerMemoryBytes = int64(ms.opt + ls.opt)
	w.BytesPerParam = float64(w.WeightMemoryBytes+w.GradMemoryBytes+w.OptimizerMemoryBytes) / total
	one.sl, one.n = one.s, one.b*one.s
	var a float64
	for _, op := range one.layerOps() {
		a += float64(op.MemoryBytes)
	}
	a *= float64(x.L)
	for _, op := range one.embeddingOps() {
		a += float64(op.MemoryBytes)
	}
	for _, op := range one.headOps() {
		a += float64(op.MemoryBytes)
	}
	w.ActivationMemoryBytes = int64(a)
}

// fsdpMaster reports FSDP2's mixed precision (MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)): the
// sharded parameter stays fp32 and is itself the optimizer's master weight; forward and backward all-gather it
// cast to the 16-bit param_dtype, and gradients are reduced and kept sharded in fp32.
func (e *est) fsdpMaster() bool {
	return e.c.Parallel.ZeroStage == 3 && e.c.mixed() && e.gb == 4 && e.lora == nil
}

// precisionAssumption says what the model keeps per parameter, as states() counts it.
func (e *est) precisionAssumption() string {
	c := e.c
	opt := fmt.Sprintf("optimizer %s (%s)", c.Training.Optimizer, c.Training.OptimizerImpl)
	if e.fsdpMaster() {
		return fmt.Sprintf("Precision %s under FSDP: sharded params fp32 (4 B, the master weights themselves; no separate copy), all-gathered and computed in %s (%g B); grads %s (%g B), reduce-scattered and sharded; %s.",
			c.Training.Precision, c.paramDtype(), e.pb, c.Training.GradPrecision, e.gb, opt)
	}
	return fmt.Sprintf("Precision %s: params %s (%g B), grads %s (%g B), master fp32 copy: %t; %s.",
		c.Training.Precision, c.paramDtype(), e.pb, c.Training.GradPrecision, e.gb, c.mixed() && e.lora == nil, opt)
}

func (e *est) assumptions(reservedSource string) []string {
	c := e.c
	frag := fmt.Sprintf("Fragmentation/cached-free allowance: %.0f%% of activations+temporaries (allocator.fragmentation_fraction).", fragOf(c)*100)
	if reservedSource == ReservedByReplay {
		frag = "Peak reserved: the predicted allocation sequence (build, two training steps or one generate call) replayed through the caching-allocator model (torch 2.11 rules: rounding, pools, best fit, splitting)."
	}
	a := []string{
		"Sizes in GiB (2^30 bytes). Peak allocated = torch.cuda.max_memory_allocated; reserved adds allocator rounding (512 B; ≥10 MiB requests rounded to 2 MiB; 1–10 MiB share 20 MiB segments; ≤1 MiB from 2 MiB small segments) and fragmentation.",
		frag,
		fmt.Sprintf("Device total = reserved + CUDA context (%g MiB) + NCCL buffers (%s); these do not go through the caching allocator.", ctxOf(c), ncclOf(c)),
		"Other (allocated) = cuBLAS + cuBLASLt workspaces (2 × 32 MiB unless allocator.workspace_mib), + Transformer Engine's workspace (32 MiB from Hopper on, 4 MiB before) when training.transformer_engine, + the attention-score buffer of Megatron's unfused attention, + DDP gradient buckets when plain DDP is used.",
	}
	if e.inference {
		return append(a, "Inference: weights + KV cache for prompt+generated tokens + the largest prefill working set of one layer; logits for the last token only unless inference.logits_all_tokens.")
	}
	a = append(a,
		e.precisionAssumption(),
		"Activations: per-layer saved tensors (Korthikanti et al. 2022 accounting, adapted for GQA, SwiGLU, RMSNorm, flash attention and MoE); 1F1B keeps min(pp−i, m) micro-batches on stage i, interleaved uses Megatron's warm-up count.",
		fmt.Sprintf("Gradients are %s: %s.", c.Parallel.GradBuffer, map[string]string{
			"persistent": "one contiguous buffer for the whole run (Megatron DDP / distributed optimizer)",
			"on_demand":  "allocated during backward and freed by zero_grad(set_to_none=True)"}[c.Parallel.GradBuffer]),
		fmt.Sprintf("Loss %s: %s.", c.Training.Loss, map[string]string{
			"standard":  "bf16 logits kept + fp32 log-probs saved (6 B/logit), ≈8 B/logit more in its backward (HF-style)",
			"fused":     "fp32 softmax saved (4 B/logit), gradient computed in place, bf16 gradient 2 B/logit (Megatron vocab-parallel CE)",
			"fused_jit": "as fused, but the jit-compiled steps write exp(logits − max) to a new fp32 tensor beside the fp32 copy: 10 B/logit at its forward peak instead of 6 (Megatron --cross-entropy-loss-fusion, native)",
			"chunked":   "logits materialized one chunk at a time, ≈10 B per logit of a chunk"}[c.Training.Loss]),
	)
	if c.Training.Attention == "standard" {
		a = append(a, "Standard attention saves bf16 softmax probabilities (Megatron fused softmax); HF eager with fp32 softmax keeps ≈3× more.")
	}
	return a
}

func fragOf(c *Config) float64 {
	if c.Allocator.FragmentationFraction >= 0 {
		return c.Allocator.FragmentationFraction
	}
	if c.Allocator.ExpandableSegments {
		return 0.01
	}
	return 0.05
}

// ctxOf is the memory outside the caching allocator: the CUDA context and the loaded kernels (lazy module
// loading). Measured on an H200 with torch 2.11 / CUDA 13: 604 MiB right after initialisation, 680 MiB once a
// training step's kernels are loaded; older parts and builds load less (300 MiB–1 GiB in practice).
func ctxOf(c *Config) float64 {
	if c.Allocator.CUDAContextMiB >= 0 {
		return c.Allocator.CUDAContextMiB
	}
	if c.GPU().HopperOrNewer() {
		return 680
	}
	return 500
}

func ncclOf(c *Config) string {
	if c.Allocator.NCCLMiB >= 0 {
		return fmt.Sprintf("%g MiB", c.Allocator.NCCLMiB)
	}
	var groups []string
	p := c.Parallel
	for _, g := range []struct {
		n string
		v int
	}{{"dp", p.DP * p.CP}, {"tp", p.TP}, {"pp", p.PP}, {"cp", p.CP}, {"ep", p.EP}} {
		if g.v > 1 {
			groups = append(groups, g.n)
		}
	}
	if len(groups) == 0 {
		return "none, single GPU"
	}
	return fmt.Sprintf("160 MiB per communicator: %s", strings.Join(groups, ", "))
}
