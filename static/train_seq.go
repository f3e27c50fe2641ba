package static

import (
	"slices"
)

// trainSeq builds the allocation sequence of training steps on one GPU (steps.go describes the sequence): the
// model as built, then per step every micro-batch the rank's schedule runs — forwards and backwards of its
// model chunks — and the optimizer step. The layer-level hooks (fsdp.go, pipeline.go) add what data, tensor and
// pipeline parallelism allocate around the operators.
type trainSeq struct {
	e                      *est
	s                      *seqBuilder
	layerPs, embPs, headPs []paramTensor
	adapters               []paramTensor
	frozen, persistent     bool
	recompute              bool
	ckpt                   int64
	bucket                 int64 // DeepSpeed ZeRO-1/2 reduce bucket, alive through each backward
	grads                  map[string]uint64
	step, layer            int
	phase                  string   // forward or backward, for the sites of the FSDP collectives' buffers
	outputs                []uint64 // the model's outputs the loop holds, freed when the micro-batch's backward returns
	forwardLive            []uint64 // freed when the model's forward returns
	carried                []uint64 // what the operator after the one in backward handed on (bwdStep.carry)
	rank                   int      // the pipeline rank whose GPU the sequence describes
	tiedPart               uint64
	unit                   int      // the FSDP unit whose operators run (a layer index or fsdpRoot)
	outChunks              []uint64 // pipeline: the last stage's outputs kept over the step (output_chunks)
	fsdp                   fsdpSeq
	seen                   map[string]bool // FSDP: parameters given a gradient in the unit's backward
}

// mbState is what one micro-batch's forward through a model chunk keeps for its backward.
type mbState struct {
	embKeep, headKeep [][]uint64
	layerKeep         [][][]uint64
	ckptIDs           []uint64
}

const tiedKey = "emb.embed_tokens.weight"

func (e *est) newTrainSeq(layerPs, embPs, headPs []paramTensor) *trainSeq {
	c := e.c
	t := &trainSeq{e: e, s: newSeq(), layerPs: layerPs, embPs: embPs, headPs: headPs, frozen: e.lora != nil,
		persistent: c.Parallel.GradBuffer == "persistent", grads: map[string]uint64{}, layer: -1,
		ckpt:      int64(e.checkpointBytes()),
		recompute: c.Training.Recompute == "full" || c.Training.Recompute == "op_selective"}
	if t.frozen {
		t.adapters = e.loraLayerParams()
	}
	t.initFSDP()
	t.seen = map[string]bool{}
	// DeepSpeed ZeRO-1/2 reduces gradients through a bucket of up to 5e8 elements during backward.
	if z := c.Parallel.ZeroStage; z >= 1 && z < 3 && !c.Parallel.DistributedOptimizer && c.Parallel.DP > 1 {
		var layer float64
		for _, p := range layerPs {
			layer += e.perGPU(p)
		}
		t.bucket = int64(min(5e8, layer*float64(e.layersPerStage)) * e.gb)
	}
	return t
}

// trainingSequence builds the allocation sequence of the training steps on one GPU (replayable says which
// layouts it describes).
func (e *est) trainingSequence(layerPs, embPs, headPs []paramTensor, steps []stepOps, other int64) *seqBuilder {
	return e.trainingSequenceOf(0, layerPs, embPs, headPs, steps, other)
}

// trainingSequenceOf is trainingSequence for pipeline rank r (its chunks' layers, the embedding only on the
// first stage and the head only on the last).
func (e *est) trainingSequenceOf(r int, layerPs, embPs, headPs []paramTensor, steps []stepOps, other int64) *seqBuilder {
	t := e.newTrainSeq(layerPs, embPs, headPs)
	t.rank = r
	t.build(steps, other)
	return t.s
}

func (t *trainSeq) build(steps []stepOps, other int64) {
	e, s := t.e, t.s
	l := int(e.layersPerStage)
	e.buildWeights(s, t.embPs, t.layerPs, t.headPs)
	if t.frozen {
		for range l {
			for _, p := range t.adapters {
				s.alloc(int64(float64(p.numel()) * dtypeBytes[e.lora.AdapterDtype]))
			}
		}
	}
	s.buffers(other)
	if t.persistent && !t.frozen && !t.fsdp.on {
		t.allGrads()
	}
	for si, so := range steps {
		t.step = si + 1
		if si == len(steps)-1 && si > 0 && len(e.c.Training.SeqLengths) == 0 {
			s.steady = len(s.ev)
		}
		if e.c.Parallel.PP > 1 {
			t.runSchedule(so)
		} else {
			for range max(1, e.c.Parallel.NumMicrobatches) {
				st := t.forward(so)
				t.backward(so, st)
			}
		}
		t.optimizerStep()
		t.s.free(t.outChunks...) // the pipeline's kept outputs, cleared when the next step starts
		t.outChunks = t.outChunks[:0]
	}
}

// gBytes is one parameter's gradient on this GPU.
func (t *trainSeq) gBytes(p paramTensor) int64 {
	e := t.e
	g := e.perGPU(p) * e.gb
	if e.c.Parallel.ZeroStage >= 2 {
		g /= e.shardGroup(p)
	}
	return int64(g)
}

func (t *trainSeq) gradOf(key string, bytes int64) {
	if _, ok := t.grads[key]; !ok && bytes > 0 {
		t.grads[key] = t.s.alloc(bytes)
	}
}

func (t *trainSeq) allGrads() {
	for _, p := range t.embPs {
		t.gradOf("emb."+p.Name, t.gBytes(p))
	}
	for li := range int(t.e.layersPerStage) {
		for _, p := range t.layerPs {
			t.gradOf(layerKey(li, p.Name), t.gBytes(p))
		}
	}
	for _, p := range t.headPs {
		t.gradOf("head."+p.Name, t.gBytes(p))
	}
}

// runOp allocates an operator's tensors and frees its temporaries; it returns the saved ones (by position in the
// operator's tensor list, 0 for the others) and the residual-stream ones.
func (t *trainSeq) runOp(op Operator) (own, resid []uint64) {
	s := t.s
	s.at(t.step, "forward", t.layer, op.Name)
	var tmp []uint64
	var brief uint64
	ts := opTensors(op)
	own = make([]uint64, len(ts)) // by position, so that a backward script can name them
	for i, tn := range ts {
		id := s.alloc(tn.bytes)
		s.free(brief)
		brief = 0
		switch tn.life {
		case lifeSaved:
			own[i] = id
		case lifeLayer, lifeForward:
			resid = append(resid, id)
		case lifeBrief:
			brief = id
		case lifeOutput:
			t.outputs = append(t.outputs, id)
		default:
			tmp = append(tmp, id)
		}
	}
	s.free(brief)
	s.free(tmp...)
	return own, resid
}

// runOps runs the embedding's or the head's operators: the embedding's residual tensors live until the model's
// forward returns, which it does with its last norm (the output layer and the loss run outside it).
func (t *trainSeq) runOps(ops []Operator, keep *[][]uint64) {
	for _, op := range ops {
		own, resid := t.runOp(op)
		if op.Category == "embedding" {
			t.forwardLive = append(t.forwardLive, resid...)
		} else {
			t.s.free(resid...)
		}
		if op.Name == "final_norm" {
			t.s.free(t.forwardLive...)
			t.forwardLive = t.forwardLive[:0]
		}
		*keep = append(*keep, own)
	}
}

// forwardLayer runs layer li's operators; a recomputed layer then keeps only its checkpoint.
func (t *trainSeq) forwardLayer(li int, ops []Operator, st *mbState) {
	t.layer = li
	t.gather(li)
	var resid []uint64
	for _, op := range ops {
		own, r := t.runOp(op)
		resid = append(resid, r...)
		st.layerKeep[li] = append(st.layerKeep[li], own)
	}
	t.s.free(resid...)
	if t.recompute {
		for _, ids := range st.layerKeep[li] {
			t.s.free(ids...)
		}
		st.ckptIDs[li] = t.s.alloc(t.ckpt)
	}
	t.afterForward(li)
}

// forward runs one micro-batch through the embedding, the layers and the head.
func (t *trainSeq) forward(so stepOps) *mbState {
	return t.forwardChunk(so, t.allLayers(), true, true)
}

// allLayers are the local indices of every layer on this GPU.
func (t *trainSeq) allLayers() []int {
	out := make([]int, t.e.layersPerStage)
	for i := range out {
		out[i] = i
	}
	return out
}

// forwardChunk runs one micro-batch through a model chunk's layers (local indices), from the embedding on the
// model's first stage and to the loss on its last.
func (t *trainSeq) forwardChunk(so stepOps, layers []int, first, last bool) *mbState {
	l := int(t.e.layersPerStage)
	st := &mbState{layerKeep: make([][][]uint64, l), ckptIDs: make([]uint64, l)}
	t.layer, t.phase = -1, "forward"
	if first || last {
		t.gather(fsdpRoot)
	}
	if first {
		t.runOps(so.emb, &st.embKeep)
	}
	for _, li := range layers {
		t.forwardLayer(li, so.layer, st)
	}
	t.layer = -1
	if last {
		t.runOps(so.head, &st.headKeep)
	}
	t.s.free(t.forwardLive...)
	t.forwardLive = t.forwardLive[:0]
	return st
}

// backward runs the micro-batch's backward: the loss first, then the output layer, the layers in reverse and
// the embeddings.
func (t *trainSeq) backward(so stepOps, st *mbState) {
	hr := int64(float64(int64(opTokens(so.emb))*t.e.x.h) * t.e.ab / float64(t.e.spDiv))
	t.backwardChunk(so, st, t.allLayers(), true, true, hr)
}

// backwardChunk runs a chunk's backward for the micro-batch whose forward kept st; hr is the hidden state's
// size, the gradient passed between layers.
func (t *trainSeq) backwardChunk(so stepOps, st *mbState, layers []int, first, last bool, hr int64) {
	e, s := t.e, t.s
	t.unit, t.phase = fsdpRoot, "backward"
	if last {
		t.backOps(so.head, st.headKeep, t.headPs, func(n string) string { return "head." + n })
	}
	s.at(t.step, "backward", -1, "layer_input_grad")
	bid := s.alloc(t.bucket)
	dx := s.alloc(hr)
	for j := len(layers) - 1; j >= 0; j-- {
		li := layers[j]
		t.layer, t.unit = li, li
		t.gather(li)
		if j > 0 {
			t.prefetch(layers[j-1])
		}
		if t.recompute {
			st.layerKeep[li] = nil
			t.runOps(so.layer, &st.layerKeep[li])
			s.free(st.ckptIDs[li])
		}
		t.backOps(so.layer, st.layerKeep[li], t.layerPs, func(n string) string { return layerKey(li, n) })
		t.postBackward(li)
		s.at(t.step, "backward", li, "layer_input_grad")
		ndx := s.alloc(hr)
		s.free(dx)
		dx = ndx
	}
	t.layer, t.unit = -1, fsdpRoot
	if first {
		t.backOps(so.emb, st.embKeep, t.embPs, func(n string) string { return "emb." + n })
	}
	if first || last {
		t.postBackward(fsdpRoot)
	}
	t.endBackward()
	s.free(dx, bid)
	s.free(t.outputs...)
	t.outputs = t.outputs[:0]
	if t.frozen {
		for _, li := range layers {
			for _, p := range t.adapters {
				t.gradOf(layerKey(li, p.Name), int64(float64(p.numel())*dtypeBytes[e.lora.AdapterDtype]))
			}
		}
	}
}

// backOps runs the backward of ops (in reverse) whose forward kept keep, allocating the gradients of the
// parameters ps they own.
func (t *trainSeq) backOps(ops []Operator, keep [][]uint64, ps []paramTensor, key func(string) string) {
	e, s := t.e, t.s
	for j := len(ops) - 1; j >= 0; j-- {
		op := ops[j]
		s.at(t.step, "backward", t.layer, op.Name)
		// Gradients of what the operator saved (its inputs' gradients are as large), or of its output.
		var gs, next []uint64
		own := op.bwd != nil
		if own {
			ids := slices.Clone(keep[j])
			for _, st := range op.bwd {
				id := s.alloc(st.bytes)
				ids = append(ids, id)
				for _, k := range st.free {
					s.free(ids[k])
				}
				if st.carry {
					next = append(next, id)
				}
			}
			for _, id := range ids[len(keep[j]):] {
				if !slices.Contains(next, id) {
					s.free(id)
				}
			}
		}
		if !own {
			for _, tn := range opTensors(op) {
				if tn.life == lifeSaved {
					gs = append(gs, s.alloc(tn.bytes))
				}
			}
			if len(gs) == 0 {
				var out int64
				for _, tn := range op.Outputs {
					out = max(out, tn.Bytes)
				}
				gs = append(gs, s.alloc(out))
			}
		}
		if !t.frozen {
			for _, p := range opParams(op.Name, ps) {
				k := key(p.Name)
				if t.fsdp.on {
					t.grad(k, p)
					continue
				}
				if k == tiedKey && t.tiedPart != 0 {
					// The embedding's own gradient joins the output layer's out of place. The sum becomes .grad,
					// or, where a micro-batch before left one, is added into it and dies.
					b := int64(e.perGPU(p) * e.pb)
					part := s.alloc(b)
					_, had := t.grads[k]
					t.gradOf(k, t.gBytes(p))
					var sum uint64
					if had {
						sum = s.alloc(b)
					}
					s.free(t.tiedPart, part, sum)
					t.tiedPart = 0
					continue
				}
				t.gradOf(k, t.gBytes(p))
			}
			if op.Name == "lm_head" && e.x.tied && !t.fsdp.on && len(t.embPs) > 0 {
				// A tied output layer's weight gradient waits in the autograd engine's input buffer of the shared
				// parameter until the embedding's backward adds its own.
				t.tiedPart = s.alloc(int64(e.perGPU(t.embPs[0]) * e.pb))
			}
		}
		s.free(t.carried...)
		t.carried = next
		s.free(keep[j]...)
		s.free(gs...)
	}
	if !t.frozen {
		for _, p := range ps {
			t.grad(key(p.Name), p)
		}
	}
}

// grad gives parameter p (key k) its gradient: the unsharded one of its FSDP unit, or its .grad.
func (t *trainSeq) grad(k string, p paramTensor) {
	if !t.fsdp.on {
		t.gradOf(k, t.gBytes(p))
		return
	}
	if !t.seen[k] {
		t.seen[k] = true
		t.unitGrad(t.unit, p)
	}
}

// optimizerStep creates the optimizer states on the first step (torch creates them lazily), then the foreach
// intermediates, and drops the gradients (zero_grad(set_to_none=True)) unless they live in a persistent buffer.
func (t *trainSeq) optimizerStep() {
	e, s := t.e, t.s
	c := e.c
	l := int(e.layersPerStage)
	s.at(t.step, "optimizer_step", -1, c.Training.Optimizer)
	type trained struct {
		p     paramTensor
		elems float64
	}
	var ts []trained
	if t.frozen {
		for range l {
			for _, p := range t.adapters {
				ts = append(ts, trained{p, float64(p.numel())})
			}
		}
	} else {
		for _, p := range t.embPs {
			ts = append(ts, trained{p, e.perGPU(p)})
		}
		for range l {
			for _, p := range t.layerPs {
				ts = append(ts, trained{p, e.perGPU(p)})
			}
		}
		for _, p := range t.headPs {
			ts = append(ts, trained{p, e.perGPU(p)})
		}
	}
	sb := 4.0
	if c.lowPrecisionStates() {
		sb = 2
	}
	if t.frozen {
		sb = dtypeBytes[e.lora.AdapterDtype]
	}
	div := 1.0
	if c.Parallel.ZeroStage >= 1 {
		div = float64(e.nDense)
	}
	if e.fsdpOffload() {
		return // the optimizer steps the host-memory shards
	}
	if t.step == 1 && !c.Training.OptimizerInBackward {
		for _, tr := range ts {
			if c.mixed() && c.Parallel.ZeroStage < 3 && !t.frozen {
				s.alloc(int64(tr.elems * 4 / div)) // fp32 master copy
			}
			for _, b := range optimizerStates(c.Training.Optimizer, tr.p, tr.elems, sb, t.frozen) {
				s.alloc(int64(b / div))
			}
		}
	}
	if c.Training.OptimizerImpl == "foreach" && !c.Training.OptimizerInBackward {
		var tmp []uint64
		for _, tr := range ts {
			tmp = append(tmp, s.alloc(int64(tr.elems*sb/div)))
		}
		s.free(tmp...)
	}
	if !t.persistent || t.frozen {
		keys := make([]string, 0, len(t.grads))
		for k := range t.grads {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			s.free(t.grads[k])
			delete(t.grads, k)
		}
	}
}
