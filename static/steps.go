package static

import (
	"errors"
	"strconv"
	"strings"

	"github.com/memscan/memscan/allocator"
)

// The allocation sequence: one run of the model as the caching allocator sees it — the parameters as the
// model is built, then two training steps (the first creates the optimizer states, the second is the steady
// step, replayed again until the pool settles) or one generate call, each tensor allocated when its operator
// creates it and freed when PyTorch drops the last reference. Replaying it through the allocator model gives
// peak reserved memory from the allocator's own rules (rounding, pools, best fit, splitting) instead of a flat
// fragmentation allowance.

// tensorLife says when a tensor an operator creates is freed.
type tensorLife uint8

const (
	lifeSaved   tensorLife = iota // kept for backward: freed in the operator's backward
	lifeOp                        // a temporary: freed when the operator ends
	lifeLayer                     // a residual-stream tensor: freed when the layer's forward ends
	lifeBrief                     // consumed at once: freed right after the operator's next tensor is allocated
	lifeForward                   // referenced by the model's forward until it returns
	lifeOutput                    // the model's output (logits): the training loop holds it until backward returns
)

// seqTensor is one tensor an operator allocates, in creation order.
type seqTensor struct {
	bytes int64
	life  tensorLife
}

func keepSeq(bytes ...int64) []seqTensor  { return tensorsOf(lifeSaved, bytes) }
func briefSeq(bytes ...int64) []seqTensor { return tensorsOf(lifeBrief, bytes) }
func tempSeq(bytes ...int64) []seqTensor  { return tensorsOf(lifeOp, bytes) }

func tensorsOf(life tensorLife, bytes []int64) []seqTensor {
	out := make([]seqTensor, 0, len(bytes))
	for _, b := range bytes {
		if b > 0 {
			out = append(out, seqTensor{b, life})
		}
	}
	return out
}

// bwdStep is one allocation of an operator's backward and what dies right after it. free indexes the operator's
// tensors: first its forward tensors (opTensors order; only saved ones are still alive), then its backward
// allocations in order. Whatever a script leaves alive dies when the operator's backward ends.
type bwdStep struct {
	bytes int64
	free  []int
	// carry: the gradient of the operator's input, which the operator before it consumes; it dies once that
	// operator's backward has allocated its own gradients.
	carry bool
}

// opTensors is what an operator allocates: its own list when the builder gave one (whose saved part adds up to
// MemoryBytes), else one saved tensor of MemoryBytes and one temporary of TempBytes.
func opTensors(op Operator) []seqTensor {
	if op.seq != nil {
		return op.seq
	}
	return append(keepSeq(op.MemoryBytes), tempSeq(op.TempBytes)...)
}

// allocEvent allocates size bytes as id on stream, or frees id (of −size bytes) when size is negative; site
// indexes seqBuilder.sites.
type allocEvent struct {
	id     uint64
	size   int64
	site   int32
	stream uint8
}

// CUDA streams the sequence allocates on: the caching allocator keeps each stream's freed blocks for that
// stream, so tensors of communication streams never reuse the compute stream's blocks.
const (
	streamDefault   uint8 = iota
	streamAllGather       // FSDP2's all-gather copy-in stream: the gathered flat buffers
)

// seqSite is where in the run an allocation happens.
type seqSite struct {
	step  int
	phase string // build | forward | backward | optimizer_step | prefill | decode
	layer int    // -1 outside the layer stack
	op    string
}

// seqBuilder records a sequence and tracks its allocated bytes.
type seqBuilder struct {
	ev        []allocEvent
	sites     []seqSite
	next      uint64
	live      map[uint64]int64
	allocated int64
	peak      int64
	// steady is where the steady training step's events start (0: none); the replay repeats that step
	// until the pool settles.
	steady int
}

func newSeq() *seqBuilder {
	return &seqBuilder{live: map[uint64]int64{}, sites: []seqSite{{phase: "build", layer: -1, op: "parameters"}}}
}

// at sets the site of the allocations that follow.
func (s *seqBuilder) at(step int, phase string, layer int, op string) {
	if c := s.sites[len(s.sites)-1]; c != (seqSite{step, phase, layer, op}) {
		s.sites = append(s.sites, seqSite{step, phase, layer, op})
	}
}

func (s *seqBuilder) alloc(n int64) uint64 { return s.allocOn(streamDefault, n) }

// allocOn allocates n bytes on a stream.
func (s *seqBuilder) allocOn(stream uint8, n int64) uint64 {
	if n <= 0 {
		return 0
	}
	s.next++
	s.ev = append(s.ev, allocEvent{s.next, n, int32(len(s.sites) - 1), stream})
	s.live[s.next] = n
	s.allocated += n
	s.peak = max(s.peak, s.allocated)
	return s.next
}

func (s *seqBuilder) free(ids ...uint64) {
	for _, id := range ids {
		if n, ok := s.live[id]; ok {
			delete(s.live, id)
			s.allocated -= n
			s.ev = append(s.ev, allocEvent{id: id, size: -n})
		}
	}
}

// replayResult is what replaying a sequence gives: the peak reserved bytes and, with a capacity, the first
// allocation the allocator could not satisfy (where the run raises OutOfMemoryError).
type replayResult struct {
	peakReserved int64
	peakFrag     allocator.Fragmentation // the pool right after the request that reached peakReserved
	failed       bool
	allocated    int64 // allocated (requested bytes) when the failing request came
	request      int64
	site         seqSite
}

// allocatorConfig is the allocator setting the replays run under: PyTorch's default, with expandable segments
// where the config turns them on.
func (e *est) allocatorConfig() allocator.Config {
	return allocator.Config{ExpandableSegments: e.c.Allocator.ExpandableSegments}
}

// replay drives the allocator model with the sequence; with a capacity, an allocation that cannot fit even
// after the allocator released its cache ends the replay there.
//
// The steady step then runs again as long as its last run changed the pool's segments: a later step can
// still grow the pool when the first steady one left its free blocks cut differently from the step before
// (llama1b with eager attention grows by one fp32 logits block in its third step, measured and replayed). A
// run that creates no segment ends where it started — the same segments, the same live tensors at the same
// addresses, and so the same free blocks, which adjacent frees always merge — so every further step would
// replay it exactly: the pool has settled.
func (s *seqBuilder) replay(cfg allocator.Config, capacity int64) (replayResult, error) {
	a, err := allocator.New(cfg, allocator.Options{Capacity: capacity})
	if err != nil {
		return replayResult{}, err
	}
	r := sequenceReplay{a: a}
	steady := s.steadyStep()
	mark := 0 // the allocator's segment events before the steady step's last run
	for i, ev := range s.ev {
		if i == s.steady && steady != nil {
			mark = len(a.Events())
		}
		if res, done, err := r.apply(ev, 0, s.sites[ev.site]); done {
			return res, err
		}
	}
	for k := 1; steady != nil && len(a.Events()) > mark && k <= maxSteadyRepeats; k++ {
		mark = len(a.Events())
		for _, ev := range steady {
			site := s.sites[ev.site]
			site.step += k
			if res, done, err := r.apply(ev, uint64(k)*s.next, site); done {
				return res, err
			}
		}
	}
	return replayResult{peakReserved: a.PeakReserved(), peakFrag: a.PeakFragmentation()}, nil
}

// maxSteadyRepeats bounds the extra runs of the steady step (measured runs settle by their third step).
const maxSteadyRepeats = 8

// steadyStep returns the steady step's events when they can run again as the next step: the step frees
// every tensor it allocates and nothing else.
func (s *seqBuilder) steadyStep() []allocEvent {
	if s.steady <= 0 {
		return nil
	}
	evs := s.ev[s.steady:]
	open := map[uint64]bool{}
	for _, ev := range evs {
		switch {
		case ev.size > 0:
			open[ev.id] = true
		case !open[ev.id]:
			return nil
		default:
			delete(open, ev.id)
		}
	}
	if len(open) > 0 {
		return nil
	}
	return evs
}

// sequenceReplay applies a sequence's events to an allocator, tracking the bytes allocated.
type sequenceReplay struct {
	a         *allocator.Allocator
	allocated int64
}

// apply replays one event with its id shifted by offset (a repeated step's tensors are new tensors); done
// reports the end of the replay: an allocation failed (the result says where) or the allocator refused.
func (r *sequenceReplay) apply(ev allocEvent, offset uint64, site seqSite) (res replayResult, done bool, err error) {
	id := ev.id + offset
	if ev.size < 0 {
		if err := r.a.Free(id); err != nil {
			return replayResult{}, true, err
		}
		r.allocated += ev.size
		return replayResult{}, false, nil
	}
	if err := r.a.Malloc(id, ev.size, uint64(ev.stream)); err != nil {
		var oom *allocator.OOMError
		if errors.As(err, &oom) {
			return replayResult{peakReserved: r.a.PeakReserved(), failed: true, allocated: r.allocated, request: ev.size,
				site: site}, true, nil
		}
		return replayResult{}, true, err
	}
	r.allocated += ev.size
	return replayResult{}, false, nil
}

// opParamPrefixes name the parameters each operator owns, by the prefix of their names.
var opParamPrefixes = map[string][]string{
	"input_norm": {"input_norm."}, "post_attn_norm": {"post_attn_norm."},
	"attn_out_norm": {"attn_out_norm."}, "mlp_out_norm": {"mlp_out_norm."},
	"qkv_proj": {"attn.q_proj.", "attn.k_proj.", "attn.v_proj."}, "o_proj": {"attn.o_proj."},
	"mlp.gate_up_proj": {"mlp.gate_proj.", "mlp.up_proj."}, "mlp.down_proj": {"mlp.down_proj."},
	"mlp.fc1": {"mlp.fc1."}, "mlp.fc2": {"mlp.fc2."}, "moe.router": {"moe.router."},
	"moe.experts.gate_up_proj": {"moe.experts."}, "embedding": {"embed_tokens.", "embed_positions."},
	"final_norm": {"final_norm."}, "lm_head": {"lm_head."},
}

// opParams is the parameters one operator owns, for allocating their gradients in its backward. The backward
// replay asks for every operator of every layer, so the table is built once.
func opParams(opName string, ps []paramTensor) []paramTensor {
	prefixes := opParamPrefixes[opName]
	var out []paramTensor
	for _, p := range ps {
		for _, pre := range prefixes {
			if strings.HasPrefix(p.Name, pre) {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// stepOps are the operator lists of one training step (they differ when the sequence length varies).
type stepOps struct{ layer, emb, head []Operator }

// buildWeights allocates the model as it is built: every parameter in module order (a frozen LoRA base at its
// stored size); a tied output layer is created and then replaced by the embedding.
func (e *est) buildWeights(s *seqBuilder, embPs, layerPs, headPs []paramTensor) {
	whole := e.quantStatsWhole()
	wBytes := func(p paramTensor, inLayer bool) int64 {
		b := e.perGPU(p) * e.pb
		switch {
		case e.lora != nil:
			if whole {
				// The statistics were left on the GPU where the weight was quantized (quantStatsAlloc).
				e.quantStatsAlloc(s, p, inLayer)
				b = (e.frozenWeightBytes(p, inLayer) - e.quantStatsBytes(p, inLayer)) / float64(p.numel()) * e.perGPU(p)
				break
			}
			b = e.frozenWeightBytes(p, inLayer) / float64(p.numel()) * e.perGPU(p)
		case e.fsdpMaster():
			b = e.perGPU(p) * 4 // FSDP2's sharded fp32 parameter, the master itself
		}
		if e.c.Parallel.ZeroStage == 3 {
			b /= e.shardGroup(p) // FSDP and ZeRO-3 keep only this rank's shard
		}
		if e.fsdpOffload() {
			return 0 // in host memory
		}
		return int64(b)
	}
	for _, p := range embPs {
		s.alloc(wBytes(p, false))
	}
	for range e.layersPerStage {
		for _, p := range layerPs {
			s.alloc(wBytes(p, true))
		}
	}
	for _, p := range headPs {
		s.alloc(wBytes(p, false))
	}
	if e.x.tied && e.c.Framework == "hf" {
		s.free(s.alloc(int64(float64(e.x.V*e.x.h/e.t) * e.pb)))
	}
}

// stepsFor lists the steps the sequence replays: two of the configured shape (the first creates the optimizer
// states), or one per entry of training.seq_lengths.
func (e *est) stepsFor(layerOps, embOps, headOps []Operator) []stepOps {
	lens := e.c.Training.SeqLengths
	if len(lens) == 0 {
		one := stepOps{layerOps, embOps, headOps}
		return []stepOps{one, one}
	}
	out := make([]stepOps, 0, len(lens))
	for _, n := range lens {
		c := *e.c
		c.Training.SeqLength = n
		v := newEst(&c)
		out = append(out, stepOps{v.layerOps(), v.embeddingOps(), v.headOps()})
	}
	return out
}

// optimizerStates are the state tensors the optimizer creates for elems elements of p in its first step, each
// of sb bytes an element unless the optimizer fixes its own dtype; they add up to stateBytes (loraStates for a
// frozen base's adapters).
func optimizerStates(optimizer string, p paramTensor, elems, sb float64, adapter bool) []float64 {
	switch optimizer {
	case "adamw":
		return []float64{elems * sb, elems * sb}
	case "sgd":
		return []float64{elems * sb}
	case "adamw-8bit":
		// bitsandbytes: two uint8 states and an fp32 absmax per 2048-element block for each.
		return []float64{elems, elems, elems / 2048 * 4, elems / 2048 * 4}
	case "adafactor":
		if p.matrix() && !adapter {
			// Factored second moment: one row and one column vector of the (sharded) matrix.
			frac := elems / float64(p.numel())
			return []float64{sb * float64(p.Shape[0]) * frac, sb * float64(p.Shape[1]) * frac}
		}
		return []float64{elems * sb}
	}
	return nil
}

func layerKey(layer int, name string) string {
	return "layer" + strconv.Itoa(layer) + "." + name
}

// splitEven splits total saved bytes into tensors of at most each bytes (the last takes the rest).
func splitEven(total, each int64) []seqTensor {
	if each <= 0 {
		return keepSeq(total)
	}
	var out []seqTensor
	for total > 0 {
		n := min(total, each)
		out = append(out, seqTensor{n, lifeSaved})
		total -= n
	}
	return out
}

// replayable reports whether the allocation sequence describes the config, as checked against measured runs:
// one GPU's model without tensor, context or expert splits, pipeline stages or FSDP (whose side streams and
// buffers the sequence does not follow), PyTorch-managed gradients, saved activations kept on the GPU, no
// correction factors and no explicit fragmentation allowance. Inference replays with any split. opsPerLayer is
// the number of a layer's operator records, which bounds the sequence's length.
func (e *est) replayable(opsPerLayer int) bool {
	c := e.c
	k := c.Corrections
	if c.Allocator.FragmentationFraction >= 0 || k.Weights != 1 || k.Grads != 1 || k.Optimizer != 1 || k.Activations != 1 ||
		k.Temporaries != 1 || k.Other != 1 {
		return false
	}
	if e.inference {
		return e.layersPerStage*maxDecodeSteps <= maxReplayEvents/4
	}
	p := c.Parallel
	events := e.layersPerStage * int64(opsPerLayer) * 16 * int64(max(2, len(c.Training.SeqLengths))) * int64(max(1, p.NumMicrobatches))
	return (p.PP == 1 || e.torchPipelining()) && p.GradBuffer != "persistent" &&
		!c.Training.TransformerEngine && !c.Training.ActivationOffload && c.Training.RecomputeLayers == 0 &&
		events <= maxReplayEvents
}

// maxReplayEvents bounds the allocation sequence replayed per estimate (searches estimate many times).
const maxReplayEvents = 400_000

// replayReserved replaces the stage's flat-allowance reserved prediction with the allocator model's replay of
// seq; the device total moves with it.
func (e *est) replayReserved(st *Stage, seq *seqBuilder) {
	// No capacity: the prediction is what the run needs, also where it does not fit (the oom section says
	// where it would fail).
	overhead := st.DeviceTotal - st.PeakReserved
	res, err := seq.replay(e.allocatorConfig(), 0)
	if err != nil || res.peakReserved <= 0 {
		return
	}
	st.PeakReserved = max(res.peakReserved, roundUp(st.PeakAllocated, 2*mib))
	st.DeviceTotal = st.PeakReserved + overhead
	st.ReservedSource = ReservedByReplay
	st.ReservedSegments = res.peakFrag.Segments
	st.ReservedFreeAtPeak = res.peakFrag.Free
}

// maxDecodeSteps bounds the decode steps the inference sequence replays: the cache's growth pattern repeats,
// and searches re-estimate many times.
const maxDecodeSteps = 256

// inferenceSequence builds the allocation sequence of one generate call on one GPU of stage i: the weights, the
// cache (preallocated, or per layer in the prefill for the dynamic cache), the prefill operator by operator
// with residuals residual-stream tensors alive, then the decode steps, each concatenating every layer's K and
// V into new tensors (dynamic cache) and sampling from the last position's logits.
func (e *est) inferenceSequence(layerOps, embOps, headOps []Operator, residuals, other int64, last bool) *seqBuilder {
	c, x := e.c, e.x
	in := c.Inference
	s := newSeq()
	l := e.layersPerStage
	e.buildWeights(s, embeddingParams(x), layerParams(x), headParams(x, c.Parallel.PP))
	s.buffers(other)
	perTokLayer := e.kvBytesPerToken() / l / 2 // one of K or V, one layer, one token and sequence
	ctx := int64(in.PromptLength + in.GenerateTokens)
	if bt := int64(in.KVCache.BlockTokens); bt > 0 {
		ctx = roundUp(ctx, bt)
	}
	kv := make([][2]uint64, l)
	if in.KVCache.Implementation != "dynamic" {
		for li := range l {
			kv[li] = [2]uint64{s.alloc(perTokLayer * e.b * ctx), s.alloc(perTokLayer * e.b * ctx)}
		}
	}
	hr := e.n * x.h * int64(e.ab)
	var stream []uint64 // residual-stream tensors alive beside the operators
	for range residuals - 1 {
		stream = append(stream, s.alloc(hr))
	}
	run := func(ops []Operator, li int64) {
		var prev []uint64
		for _, op := range ops {
			s.at(1, "prefill", int(li), op.Name)
			var out []uint64
			for _, t := range op.Outputs {
				out = append(out, s.alloc(t.Bytes))
			}
			if op.Category == "attention" && op.Name == "attention" && li >= 0 && in.KVCache.Implementation == "dynamic" {
				kv[li] = [2]uint64{s.alloc(perTokLayer * e.b * int64(in.PromptLength)), s.alloc(perTokLayer * e.b * int64(in.PromptLength))}
			}
			// Without autograd an eager norm's fp32 intermediates die as soon as the next one exists: each is
			// allocated, then the one before it is freed.
			if op.seq != nil && op.Category == "norm" {
				var prevT uint64
				for _, t := range op.seq {
					if t.life != lifeLayer {
						id := s.alloc(t.bytes)
						s.free(prevT)
						prevT = id
					}
				}
				s.free(prevT)
			}
			s.free(s.alloc(op.TempBytes))
			s.free(prev...)
			prev = out
		}
		s.free(prev...)
	}
	run(embOps, -1)
	layerOut := s.alloc(hr)
	for li := range l {
		run(layerOps, li)
		next := s.alloc(hr)
		s.free(layerOut)
		layerOut = next
	}
	if last {
		run(headOps, -1)
	}
	s.free(layerOut)
	s.free(stream...)
	if in.KVCache.Implementation != "dynamic" {
		return s
	}
	s.at(1, "decode", -1, "kv_cache")
	for step := range min(int64(in.GenerateTokens), maxDecodeSteps) {
		n := int64(in.PromptLength) + step + 1
		for li := range l {
			for j := range 2 {
				id := s.alloc(perTokLayer * e.b * n)
				s.free(kv[li][j])
				kv[li][j] = id
			}
		}
		if last {
			v := e.b * x.V / e.t
			s.free(s.alloc(v*int64(e.ab)), s.alloc(4*v), s.alloc(4*v))
		}
	}
	return s
}

// opTokens is the number of tokens of a step, read from its embedding operator's ids.
func opTokens(embOps []Operator) int64 {
	for _, op := range embOps {
		for _, t := range op.Inputs {
			if t.Name == "input_ids" {
				return t.Bytes / 8
			}
		}
	}
	return 0
}

// buffers allocates the stage's other buffers (st.Other): the GEMM workspaces as two 32 MiB tensors (cuBLAS and
// cuBLASLt), the rest (Transformer Engine workspace, score buffer, DDP buckets) as one.
func (s *seqBuilder) buffers(other int64) {
	for range 2 {
		if other >= 32*mib {
			s.alloc(32 * mib)
			other -= 32 * mib
		}
	}
	s.alloc(other)
}
