package static

import "strconv"

// FSDP2 (torch.distributed.fsdp.fully_shard) in the allocation sequence, as torchtitan applies it: one unit per
// decoder layer and the root unit (the embedding, the final norm and the output layer of the model chunk).
//
// From torch/distributed/fsdp/_fully_shard (_fsdp_collectives.py foreach_all_gather, foreach_all_gather_copy_out,
// foreach_reduce; _fsdp_param_group.py):
//   - a unit's all-gather allocates one flat buffer of the unit's unsharded size in the all-gather dtype on the
//     all-gather copy-in stream (all_gather_output; the rank's input is a view into it), copies out into one
//     unsharded tensor per parameter on the compute stream (alloc_all_gather_outputs) and drops the flat buffer;
//   - resharding frees the unsharded tensors (after forward, unless the unit is the root or
//     reshard_after_forward is off; always after backward, unless a pipeline stage defers it to the last
//     micro-batch); backward prefetches the next unit's all-gather, so its flat buffer is in flight while the
//     current unit computes;
//   - autograd leaves one unsharded gradient per parameter in the parameters' compute dtype; the unit's
//     post-backward reduce-scatter allocates its input (the unsharded size in reduce_dtype) and output (the
//     shard), frees the unsharded gradients, and keeps the output as the sharded .grad (added into it and freed
//     from the second micro-batch on); both are allocated on the compute stream since PyTorch 2.5 (pytorch
//     #129721, #132445: "to avoid fragmenting that memory across stream memory pools"); the input lives until
//     the next unit's reduce-scatter recycles it (one input buffer in flight);
//   - inside a pipeline stage (PipelineStage.backward_maybe_with_nosync) gradient sync and resharding are off
//     until the last micro-batch: the first micro-batch's unsharded gradients are upcast to reduce_dtype
//     (FSDPParam.to_accumulated_grad_if_needed), later ones are added into them and freed
//     (accumulate_unsharded_grad_if_needed), and the last micro-batch reduce-scatters the accumulated ones.

// fsdpRoot is the unit key of the root module (embedding, final norm, output layer).
const fsdpRoot = -1

// fsdpSeq is trainSeq's FSDP state.
type fsdpSeq struct {
	on         bool
	pipeline   bool // inside a pipeline stage: no resharding or reduction until the last micro-batch
	lastMB     bool // the micro-batch in backward is the step's last
	gathered   map[int][]uint64
	flat       map[int]uint64            // a prefetched unit's all-gather buffer, copied out when the unit is used
	unitGrads  map[int]map[string]uint64 // unsharded gradients autograd left for a unit's parameters in this backward
	accGrads   map[int][]uint64          // pipeline: accumulated unsharded gradients in reduce_dtype
	rsPending  uint64                    // the reduce-scatter input still alive
	reshardFwd func(unit int) bool
}

func (e *est) fsdpOn() bool { return !e.inference && e.c.Parallel.ZeroStage == 3 }

func (t *trainSeq) initFSDP() {
	e := t.e
	f := &t.fsdp
	f.on = e.fsdpOn()
	if !f.on {
		return
	}
	f.pipeline = e.c.Parallel.PP > 1
	f.gathered, f.flat, f.unitGrads, f.accGrads = map[int][]uint64{}, map[int]uint64{}, map[int]map[string]uint64{}, map[int][]uint64{}
	last := int(e.layersPerStage) - 1
	f.reshardFwd = func(unit int) bool {
		switch {
		case unit == fsdpRoot || f.pipeline:
			return false // FSDP2 keeps the root gathered for backward; torchtitan turns resharding off with PP
		case e.c.Parallel.FSDPReshardAfterForward != nil:
			return *e.c.Parallel.FSDPReshardAfterForward
		case e.c.Framework == "torchtitan" && unit == last:
			return false // torchtitan: FSDP would prefetch the last block again at once
		}
		return true
	}
}

// unitParams are a unit's parameters on this rank, with whether they sit in a decoder layer.
func (t *trainSeq) unitParams(unit int) ([]paramTensor, bool) {
	if unit == fsdpRoot {
		return append(append([]paramTensor(nil), t.embPs...), t.headPs...), false
	}
	return t.layerPs, true
}

// gatherBytes is one parameter's unsharded size as FSDP gathers it: the frozen base in its stored format
// (bitsandbytes' packed codes alone where its statistics stay whole, quantStatsWhole), float8 linears' weights
// in 1 byte (torchao's float8 all-gather with tensorwise scaling), the rest in param_dtype (bf16 for mixed
// precision with fp32 sharded masters).
func (e *est) gatherBytes(p paramTensor, inLayer bool) int64 {
	el := e.perGPU(p)
	switch {
	case e.lora != nil:
		b := e.frozenWeightBytes(p, inLayer)
		if e.quantStatsWhole() {
			b -= e.quantStatsBytes(p, inLayer)
		}
		return int64(b / float64(p.numel()) * el)
	case e.float8AllGather() && inLayer && p.matrix() && p.Class != replicated:
		return int64(el)
	}
	return int64(el * e.computeParamBytes())
}

// computeParamBytes is the dtype size of the parameters as layers compute with them (FSDP's param_dtype).
func (e *est) computeParamBytes() float64 {
	if e.fsdpMaster() {
		return dtypeBytes[e.c.actDtype()]
	}
	return e.pb
}

// float8AllGather reports torchao's float8 FSDP all-gather of Float8Linear weights (tensorwise scaling).
func (e *est) float8AllGather() bool {
	return e.c.Training.Float8 && e.c.Training.Float8Recipe != "rowwise" && e.c.Parallel.ZeroStage == 3
}

// gather all-gathers a unit (or copies out its prefetched buffer) unless it is gathered already.
func (t *trainSeq) gather(unit int) {
	f := &t.fsdp
	if !f.on || f.gathered[unit] != nil {
		return
	}
	t.s.at(t.step, t.phase, unit, "fsdp.all_gather")
	ps, inLayer := t.unitParams(unit)
	flat, ok := f.flat[unit]
	if !ok {
		flat = t.allGatherBuffer(unit)
	}
	delete(f.flat, unit)
	ids := []uint64{}
	for _, p := range ps {
		ids = append(ids, t.s.alloc(t.e.gatherBytes(p, inLayer)))
	}
	t.s.free(flat)
	f.gathered[unit] = ids
}

// allGatherBuffer allocates a unit's flat all-gather buffer on the copy-in stream.
func (t *trainSeq) allGatherBuffer(unit int) uint64 {
	ps, inLayer := t.unitParams(unit)
	var n int64
	for _, p := range ps {
		n += t.e.gatherBytes(p, inLayer)
	}
	return t.s.allocOn(streamAllGather, n)
}

// prefetch issues a unit's all-gather ahead of its use (backward prefetching of the next layer).
func (t *trainSeq) prefetch(unit int) {
	f := &t.fsdp
	if !f.on || f.gathered[unit] != nil || unit < 0 || unit >= int(t.e.layersPerStage) {
		return
	}
	if _, ok := f.flat[unit]; !ok {
		t.s.at(t.step, t.phase, unit, "fsdp.all_gather")
		f.flat[unit] = t.allGatherBuffer(unit)
	}
}

// reshard frees a unit's unsharded parameters.
func (t *trainSeq) reshard(unit int) {
	f := &t.fsdp
	t.s.free(f.gathered[unit]...)
	delete(f.gathered, unit)
}

// afterForward reshards a unit after its forward where FSDP does.
func (t *trainSeq) afterForward(unit int) {
	if t.fsdp.on && t.fsdp.reshardFwd(unit) {
		t.reshard(unit)
	}
}

// unitGrad allocates one unsharded gradient autograd leaves for a unit's parameter.
func (t *trainSeq) unitGrad(unit int, p paramTensor) {
	e := t.e
	b := int64(e.perGPU(p) * e.computeParamBytes())
	if e.c.Training.Float8 {
		b = int64(e.perGPU(p) * dtypeBytes[e.c.actDtype()]) // float8 linears return high-precision gradients
	}
	if t.fsdp.unitGrads[unit] == nil {
		t.fsdp.unitGrads[unit] = map[string]uint64{}
	}
	t.fsdp.unitGrads[unit][p.Name] = t.s.alloc(b)
}

// postBackward is a unit's post-backward: accumulation inside a pipeline stage, else the reduce-scatter into
// the sharded gradient, then resharding.
func (t *trainSeq) postBackward(unit int) {
	e, f, s := t.e, &t.fsdp, t.s
	if !f.on {
		return
	}
	grads := f.unitGrads[unit]
	delete(f.unitGrads, unit)
	clear(t.seen)
	ps, _ := t.unitParams(unit)
	if t.frozen {
		ps = nil
		if unit != fsdpRoot {
			ps = t.adapters
		}
	}
	reduceBytes := e.gb
	if t.frozen {
		reduceBytes = dtypeBytes[e.lora.AdapterDtype]
	}
	var ids []uint64 // the unit's gradients in parameter order
	for _, p := range ps {
		ids = append(ids, grads[p.Name])
	}
	if f.pipeline && !f.lastMB {
		if acc := f.accGrads[unit]; acc != nil {
			s.free(ids...) // added into the accumulated gradients
			return
		}
		s.at(t.step, t.phase, unit, "fsdp.accumulate_grad")
		acc := make([]uint64, 0, len(ps))
		for i, p := range ps {
			acc = append(acc, s.alloc(int64(e.perGPU(p)*reduceBytes))) // upcast one parameter at a time
			s.free(ids[i])
		}
		f.accGrads[unit] = acc
		return
	}
	if acc := f.accGrads[unit]; acc != nil {
		s.free(ids...) // the last micro-batch's gradients are added into the accumulated ones
		ids = acc
		delete(f.accGrads, unit)
	}
	var in, out float64
	for _, p := range ps {
		in += e.perGPU(p) * reduceBytes
		out += e.perGPU(p) * reduceBytes / e.shardGroup(p)
	}
	s.at(t.step, t.phase, unit, "fsdp.reduce_scatter")
	s.free(f.rsPending)
	f.rsPending = s.allocOn(streamDefault, int64(in))
	s.free(ids...)
	key := "fsdp." + strconv.Itoa(unit)
	if e.fsdpOffload() {
		s.free(s.alloc(int64(out))) // the sharded gradient is copied to host memory
	} else if _, had := t.grads[key]; had {
		s.free(s.allocOn(streamDefault, int64(out))) // added into the sharded gradient
	} else if id := s.allocOn(streamDefault, int64(out)); id != 0 {
		t.grads[key] = id
	}
	t.reshard(unit)
}

// endBackward is FSDP's final backward callback: the last reduce-scatter is waited on and its input dropped.
func (t *trainSeq) endBackward() {
	if t.fsdp.on {
		t.s.free(t.fsdp.rsPending)
		t.fsdp.rsPending = 0
	}
}
