package static

import (
	"cmp"
	"fmt"
	"slices"
)

// Pipeline layouts as torch.distributed.pipelining (torchtitan) and Megatron-LM run them.
//
// The model's layers are split into pp·v stages (v = parallel.virtual_stages model chunks per rank); rank r
// holds stages r, r+pp, r+2·pp, … ("loop" placement, torchtitan's stage_ids_this_rank and Megatron's
// virtual pipeline). The first stage also holds the embedding, the last the final norm, output layer and loss.
// Each rank runs its schedule's order of forwards (F), backwards (B, or input-gradient I) and, for zero-bubble
// schedules, deferred weight-gradient computations (W); a micro-batch's activations of a chunk live from its
// F to its B (W when the schedule defers it), so the in-flight count per rank follows from that order.

// pipeOp is one action of a rank's schedule: kind 'F', 'B' or 'W' on local chunk chunk for micro-batch mb.
type pipeOp struct {
	kind      byte
	chunk, mb int
}

// ppSplit returns the layers of each of the pp·v pipeline stages: parallel.pp_layers when given, else the
// framework's rule (splitRule).
func (c *Config) ppSplit() []int {
	p := c.Parallel
	if len(p.PPLayers) > 0 {
		return p.PPLayers
	}
	return splitRule(c.Model.NumLayers, p.PP*p.VirtualStages)
}

// splitRule is torchtitan's generate_split_points (torchtitan/parallelisms/pipelining_utils.py, Dec 2024):
// base = L / stages layers each; the L mod stages extra layers go one each to the middle stages from the second
// on, and the last stage takes what remains, so the first and last stages (which also hold the embedding and the
// output layer) are the lighter ones. An even split when stages divides L. Llama 3.1 405B (126 layers) on 8
// stages: 15, 16 × 6, 15; on 16 (interleaved, 2 per rank): 7, 8 × 14, 7.
func splitRule(layers, stages int) []int {
	out := make([]int, stages)
	if stages <= 0 {
		return out
	}
	base, extra := layers/stages, layers%stages
	used := 0
	for i := 0; i < stages-1; i++ {
		out[i] = base
		if i > 0 && extra > 0 {
			out[i]++
			extra--
		}
		used += out[i]
	}
	out[stages-1] = layers - used
	return out
}

// validatePipeline checks the split (explicit or by rule) and the schedule against the layout.
func (c *Config) validatePipeline() error {
	p := &c.Parallel
	stages := p.PP * p.VirtualStages
	if len(p.PPLayers) > 0 {
		if len(p.PPLayers) != stages {
			return fmt.Errorf("parallel.pp_layers: %d entries; pp·virtual_stages = %d stages need one each", len(p.PPLayers), stages)
		}
		sum := 0
		for i, n := range p.PPLayers {
			if n < 0 || n > c.Model.NumLayers {
				return fmt.Errorf("parallel.pp_layers[%d]: %d (must be in [0, model.num_layers = %d])", i, n, c.Model.NumLayers)
			}
			sum += n
		}
		if sum != c.Model.NumLayers {
			return fmt.Errorf("parallel.pp_layers: the stages hold %d layers; model.num_layers is %d", sum, c.Model.NumLayers)
		}
	} else if c.Framework == "megatron" && c.Model.NumLayers%stages != 0 {
		// Megatron-LM asserts an even split unless the first and last stages are given their own counts.
		return fmt.Errorf("parallel.pp: pp·virtual_stages = %d does not divide model.num_layers (%d); Megatron-LM splits evenly (give parallel.pp_layers for an uneven split)", stages, c.Model.NumLayers)
	} else if stages > c.Model.NumLayers {
		return fmt.Errorf("parallel.pp: pp·virtual_stages = %d stages exceed model.num_layers (%d)", stages, c.Model.NumLayers)
	}
	switch p.PPSchedule {
	case "1f1b", "gpipe":
		if p.VirtualStages > 1 {
			return fmt.Errorf("parallel.pp_schedule: %s runs one stage per rank; virtual_stages %d needs interleaved or zero_bubble", p.PPSchedule, p.VirtualStages)
		}
	case "interleaved", "zero_bubble":
		if p.PP == 1 {
			return fmt.Errorf("parallel.pp_schedule: %s needs parallel.pp > 1", p.PPSchedule)
		}
		if p.NumMicrobatches > 0 {
			if rounds := max(1, p.NumMicrobatches/p.PP); p.NumMicrobatches%rounds != 0 {
				return fmt.Errorf("parallel.num_microbatches: %d is not a multiple of the schedule's %d rounds (num_microbatches / pp)", p.NumMicrobatches, rounds)
			}
		}
	}
	return nil
}

// rankChunks returns the layers of each model chunk rank r holds, in local order (stage r + k·pp).
func (e *est) rankChunks(r int) []int {
	p := e.c.Parallel
	split := e.split
	out := make([]int, 0, p.VirtualStages)
	for k := 0; k < p.VirtualStages; k++ {
		out = append(out, split[k*p.PP+r])
	}
	return out
}

// rankLayers is the number of layers rank r holds over all its chunks.
func (e *est) rankLayers(r int) int64 {
	var n int64
	for _, l := range e.rankChunks(r) {
		n += int64(l)
	}
	return n
}

// firstLayer is the index of the first layer rank r holds.
func (e *est) firstLayer(r int) int {
	n := 0
	for s := 0; s < r; s++ {
		n += e.split[s]
	}
	return n
}

// scheduleOps is rank r's order of actions for m micro-batches on pp ranks with v chunks each, as PyTorch's
// schedules build it (torch/distributed/pipelining/schedules.py):
//   - gpipe: every forward, then every backward (ScheduleGPipe);
//   - 1f1b: min(m, pp − r) warm-up forwards, then one backward and one forward alternately (Schedule1F1B);
//   - interleaved: ScheduleInterleaved1F1B's _get_1f1b_rank_ops with rounds = max(1, m/pp), mpr = m/rounds
//     micro-batches per round and min((v−1)·mpr + 2·(pp−1−r), m·v) warm-up forwards (Megatron-LM's interleaved
//     warm-up, (pp−r−1)·2 + (v−1)·pp, is the same count when pp divides m); forwards walk the local chunks
//     forward a round at a time, backwards walk them in reverse;
//   - zero_bubble: ScheduleInterleavedZeroBubble (ZB1P): warm-up (v−1)·mpr + (pp−1−r), backwards split into
//     input gradients and weight gradients, the latter deferred by r micro-batches.
func scheduleOps(schedule string, pp, v, m, r int) []pipeOp {
	var ops []pipeOp
	switch schedule {
	case "gpipe":
		for mb := 0; mb < m; mb++ {
			ops = append(ops, pipeOp{'F', 0, mb})
		}
		for mb := 0; mb < m; mb++ {
			ops = append(ops, pipeOp{'B', 0, mb})
		}
		return ops
	case "1f1b":
		warm := min(m, pp-r)
		f, b := 0, 0
		for ; f < warm; f++ {
			ops = append(ops, pipeOp{'F', 0, f})
		}
		for b < m {
			ops = append(ops, pipeOp{'B', 0, b})
			b++
			if f < m {
				ops = append(ops, pipeOp{'F', 0, f})
				f++
			}
		}
		return ops
	}
	rounds := max(1, m/pp)
	mpr := m / rounds
	factor := 2
	zb := schedule == "zero_bubble"
	if zb {
		factor = 1
	}
	warm := min((v-1)*mpr+factor*(pp-1-r), m*v)
	total := m * v
	fwdBwd := total - warm
	fwdChunk := func(step int) int { return (step / mpr) % v }
	bwdChunk := func(step int) int { return v - 1 - ((step-warm)/mpr)%v }
	fmb, bmb, wmb := map[int]int{}, map[int]int{}, map[int]int{}
	var bwdSteps []int
	weights := 0
	nextF := func(step int) {
		c := fwdChunk(step)
		ops = append(ops, pipeOp{'F', c, fmb[c]})
		fmb[c]++
	}
	nextB := func(step int) {
		c := bwdChunk(step)
		ops = append(ops, pipeOp{'B', c, bmb[c]})
		bmb[c]++
		bwdSteps = append(bwdSteps, step)
	}
	nextW := func() {
		c := bwdChunk(bwdSteps[weights])
		ops = append(ops, pipeOp{'W', c, wmb[c]})
		wmb[c]++
		weights++
	}
	for step := 0; step < warm+fwdBwd+warm; step++ {
		switch {
		case step < warm:
			nextF(step)
			continue
		case step < warm+fwdBwd:
			nextF(step)
			nextB(step)
		default:
			nextB(step)
		}
		if zb && step-warm >= r {
			nextW()
		}
	}
	for zb && weights < len(bwdSteps) {
		nextW()
	}
	return ops
}

// pipeInflight is what a rank holds at the worst moment of its schedule: layer-micro-batches of saved
// activations (Σ over in-flight chunk micro-batches of the chunk's layers) and the micro-batches in flight on
// the first stage (embedding-side tensors) and on the last (the loss's).
type pipeInflight struct {
	layerMBs       int64
	firstMBs       int64 // micro-batches in flight on the model's first stage, if this rank holds it
	lastMBs        int64 // on the model's last stage, if this rank holds it
	maxChunkMBs    int64 // the most micro-batches in flight on one chunk at any time
	microbatches   int64
	scheduleLength int
}

// inflightOf simulates rank r's schedule: a chunk's micro-batch holds its activations from its forward to its
// backward (to its weight-gradient step on zero-bubble schedules, which need the layer inputs until then).
func (e *est) inflightOf(r int) pipeInflight {
	p := e.c.Parallel
	chunks := e.rankChunks(r)
	m := max(1, p.NumMicrobatches)
	if p.PPSchedule == "gpipe" {
		// Every forward before any backward: the whole step is in flight.
		var layers int64
		for _, l := range chunks {
			layers += int64(l)
		}
		first, last := int64(0), int64(0)
		if r == 0 {
			first = int64(m)
		}
		if r == p.PP-1 {
			last = int64(m)
		}
		return pipeInflight{layerMBs: layers * int64(m), firstMBs: first, lastMBs: last, maxChunkMBs: int64(m), microbatches: int64(m)}
	}
	if p.PPSchedule == "1f1b" {
		// Schedule1F1B: the warm-up forwards stay in flight through the steady phase.
		k := int64(min(m, p.PP-r))
		return pipeInflight{layerMBs: k * int64(chunks[0]), firstMBs: k * int64(boolInt(r == 0)), lastMBs: k * int64(boolInt(r == p.PP-1)),
			maxChunkMBs: k, microbatches: int64(m)}
	}
	// The steady phase repeats one round's pattern, so a few rounds show the worst moment: simulating at most four
	// rounds (micro-batches per round unchanged) bounds the work for any micro-batch count; beyond
	// maxScheduleOps actions per rank, the warm-up count times the largest chunk stands in for the simulation.
	sim := m
	if rounds := max(1, m/p.PP); rounds > 4 {
		sim = m / rounds * 4
	}
	if sim*p.VirtualStages > maxScheduleOps {
		rounds := max(1, m/p.PP)
		mpr := m / rounds
		factor := 2
		if p.PPSchedule == "zero_bubble" {
			factor = 1
		}
		k := int64(min((p.VirtualStages-1)*mpr+factor*(p.PP-1-r)+1, m*p.VirtualStages))
		return pipeInflight{layerMBs: k * int64(slices.Max(chunks)), firstMBs: int64(m) * int64(boolInt(r == 0)),
			lastMBs: int64(boolInt(r == p.PP-1)), maxChunkMBs: int64(m), microbatches: int64(m)}
	}
	ops := scheduleOps(p.PPSchedule, p.PP, p.VirtualStages, sim, r)
	live := make([]int64, len(chunks))
	release := byte('B')
	if p.PPSchedule == "zero_bubble" {
		release = 'W'
	}
	firstChunk, lastChunk := -1, -1
	if r == 0 {
		firstChunk = 0
	}
	if r == p.PP-1 {
		lastChunk = len(chunks) - 1
	}
	var best pipeInflight
	var cur int64
	for _, op := range ops {
		switch op.kind {
		case 'F':
			live[op.chunk]++
			cur += int64(chunks[op.chunk])
		case release:
			live[op.chunk]--
			cur -= int64(chunks[op.chunk])
			continue
		default:
			continue
		}
		best.maxChunkMBs = max(best.maxChunkMBs, live[op.chunk])
		if cur >= best.layerMBs {
			best.layerMBs = cur
			if firstChunk >= 0 {
				best.firstMBs = live[firstChunk]
			}
			if lastChunk >= 0 {
				best.lastMBs = live[lastChunk]
			}
		}
	}
	best.microbatches = int64(m)
	best.scheduleLength = len(ops)
	return best
}

// rootParams are the parameters of rank i's root FSDP unit: the embedding on the first stage, the final norm
// and output layer on the last (each model chunk is its own fully_shard root in torchtitan).
func (e *est) rootParams(i int) []paramTensor {
	var ps []paramTensor
	if i == 0 {
		ps = append(ps, embeddingParams(e.x)...)
	}
	if i == e.c.Parallel.PP-1 {
		ps = append(ps, headParams(e.x, e.c.Parallel.PP)...)
	}
	return ps
}

// outputChunks is what the last pipeline stage keeps of its outputs over a step: PipelineStage.forward_one_chunk
// appends every micro-batch's output (the 16-bit logits, the output layer's local vocabulary share) to
// output_chunks, which the schedule merges after the last backward and clears at the next step.
func (e *est) outputChunks(i int) float64 {
	p := e.c.Parallel
	if p.PP == 1 || i != p.PP-1 || e.inference || !e.torchPipelining() {
		return 0
	}
	return float64(max(1, p.NumMicrobatches)) * float64(e.n*(e.x.V/e.t)) * e.ab
}

// pipeRecvBytes are rank i's pipeline receive buffers, allocated once for every micro-batch
// (PipelineStage._prepare_forward_infra and _prepare_backward_infra): each chunk that is not the model's first
// stage receives its input, each that is not the last receives the gradient of its output, both the hidden
// state as it crosses stages ([b, s/cp/sp, h] in the activation dtype).
func (e *est) pipeRecvBytes(i int) float64 {
	p := e.c.Parallel
	if p.PP == 1 || e.inference || !e.torchPipelining() {
		return 0
	}
	hidden := float64(e.n*e.x.h/e.spDiv) * e.ab
	stages := p.PP * p.VirtualStages
	var n float64
	for k := 0; k < p.VirtualStages; k++ {
		st := k*p.PP + i
		if st > 0 {
			n++
		}
		if st < stages-1 {
			n++
		}
	}
	return n * float64(max(1, p.NumMicrobatches)) * hidden
}

// torchPipelining reports pipeline parallelism through torch.distributed.pipelining (torchtitan), whose
// PipelineStage keeps per-micro-batch receive buffers and the last stage's outputs; Megatron-LM's schedules
// receive into fresh tensors and hand outputs to the loss at once.
func (e *est) torchPipelining() bool { return e.c.Framework == "torchtitan" }

// runSchedule runs one step of rank r's pipeline schedule in the allocation sequence: each forward runs a
// chunk's layers for a micro-batch (the model's first stage from its embedding, the last to its loss) and keeps
// what the chunk's backward needs, each backward runs them in reverse; FSDP units inside the stage stay gathered
// and accumulate their gradients until the chunk's last micro-batch (fsdp.go). A chunk that is not the model's
// last keeps its output tensor for its backward (PipelineStage.fwd_cache); the last stage's outputs (the
// logits) stay in output_chunks and are merged into one tensor after the last backward.
func (t *trainSeq) runSchedule(so stepOps) {
	e, s := t.e, t.s
	p := e.c.Parallel
	r := t.rank
	chunks := e.rankChunks(r)
	offsets := make([]int, len(chunks))
	for k := 1; k < len(chunks); k++ {
		offsets[k] = offsets[k-1] + chunks[k-1]
	}
	m := max(1, p.NumMicrobatches)
	stages := p.PP * p.VirtualStages
	hr := int64(float64(int64(opTokens(so.emb))*e.x.h) * e.ab / float64(e.spDiv))
	logits := int64(float64(e.n*(e.x.V/e.t)) * e.ab)
	type key struct{ chunk, mb int }
	states := map[key]*mbState{}
	outs := map[key]uint64{}
	runBackward := byte('B')
	if p.PPSchedule == "zero_bubble" {
		runBackward = 'W' // activations stay until the deferred weight-gradient step
	}
	for _, op := range scheduleOps(p.PPSchedule, p.PP, p.VirtualStages, m, r) {
		stage := op.chunk*p.PP + r
		first, last := stage == 0, stage == stages-1
		layers := make([]int, chunks[op.chunk])
		for j := range layers {
			layers[j] = offsets[op.chunk] + j
		}
		switch op.kind {
		case 'F':
			st := t.forwardChunk(so, layers, first, last)
			states[key{op.chunk, op.mb}] = st
			if last {
				t.outChunks = append(t.outChunks, s.alloc(logits))
			} else {
				outs[key{op.chunk, op.mb}] = s.alloc(hr) // the stage output, kept for its backward
			}
		case runBackward:
			t.fsdp.lastMB = op.mb == m-1
			k := key{op.chunk, op.mb}
			t.backwardChunk(so, states[k], layers, first, last, hr)
			s.free(outs[k])
			delete(states, k)
			delete(outs, k)
		}
	}
	t.fsdp.lastMB = false
	if len(t.outChunks) > 0 {
		s.at(t.step, "backward", -1, "pipeline.merge_outputs")
		s.free(s.alloc(int64(len(t.outChunks)) * logits)) // step() returns them concatenated; torchtitan drops it
	}
}

// replayStage replays rank i's allocation sequence and takes its reserved memory from the allocator model.
func (e *est) replayStage(st *Stage, i int, layerPs []paramTensor, layerOps, embOps, headOps []Operator) {
	var embPs, headPs []paramTensor
	if i == 0 {
		embPs = embeddingParams(e.x)
	}
	if i == e.c.Parallel.PP-1 {
		headPs = headParams(e.x, e.c.Parallel.PP)
	}
	seq := e.trainingSequenceOf(i, layerPs, embPs, headPs, e.stepsFor(layerOps, embOps, headOps), st.Other)
	e.replayReserved(st, seq)
	e.seqs[i] = seq
}

// replayPipeline replays the pipeline ranks that can hold the worst device total, highest predicted first: a
// rank whose flat-allowance total, plus twice the largest fragmentation a replay has shown so far, stays below
// the worst replayed total cannot overtake it, and keeps its flat allowance. It returns the worst stage, its
// operators and index.
func (e *est) replayPipeline(r *Report, layerPs []paramTensor, layerOps, embOps, headOps []Operator, opsByRank [][]Operator) (Stage, []Operator, int) {
	order := make([]int, len(r.Stages))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(r.Stages[b].DeviceTotal, r.Stages[a].DeviceTotal) })
	var best int64
	var frag int64
	worstIdx := r.WorstStage
	for _, i := range order {
		st := &r.Stages[i]
		allowance := st.PeakReserved - st.PeakAllocated
		if best > 0 && st.DeviceTotal-allowance+2*frag < best {
			break
		}
		e.setRank(i)
		e.replayStage(st, i, layerPs, layerOps, embOps, headOps)
		frag = max(frag, st.PeakReserved-st.PeakAllocated)
		if st.DeviceTotal > best {
			best, worstIdx = st.DeviceTotal, i
		}
	}
	return r.Stages[worstIdx], opsByRank[worstIdx], worstIdx
}

// maxScheduleOps bounds the micro-batch-chunk actions simulated per rank (searches estimate many times).
const maxScheduleOps = 4096

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
