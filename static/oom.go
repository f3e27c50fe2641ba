package static

// replayOOM replays stage i's allocation sequence through the allocator model with the GPU's capacity (less
// the CUDA context and NCCL) and returns the allocation that fails, with what is allocated then; nil when the
// stage has no sequence or the replay fits. The allocator's cached free blocks count here: a request fails when
// no cached block fits it and a new segment would pass the capacity even after the cache is released.
func (e *est) replayOOM(i int, limit int64) *OOMPoint {
	seq, ok := e.seqs[i]
	if !ok {
		return nil
	}
	res, err := seq.replay(e.allocatorConfig(), limit)
	if err != nil || !res.failed {
		return nil
	}
	return &OOMPoint{Step: max(1, res.site.step), Phase: res.site.phase, Layer: res.site.layer, Operator: res.site.op,
		AllocatedBytes: res.allocated, RequestBytes: res.request, LimitBytes: limit}
}

// oomPoint replays the first training step of stage i in execution order (embeddings, each layer's operators,
// the head, then the backward and optimizer peaks) and returns the first allocation that does not fit below
// limit, or nil when the whole step fits. The first step has no optimizer states yet (torch optimizers create
// them lazily in their first step), so a run can fail in step 1 or only in step 2.
func (e *est) oomPoint(st Stage, i int, layerOps, embOps, headOps []Operator, limit int64) *OOMPoint {
	if e.inference {
		if st.PeakAllocated <= limit {
			return nil
		}
		return &OOMPoint{Step: 1, Phase: st.PeakStage, Layer: -1, Operator: st.PeakStage, AllocatedBytes: limit, LimitBytes: limit}
	}
	c := e.c
	running := float64(st.Weights + st.Other)
	if c.Parallel.GradBuffer == "persistent" {
		running += float64(st.Grads)
	}
	// fail allocates the operator's tensors in order (as the allocation sequence does) and reports the first
	// that does not fit; the operator's temporaries are dropped when it ends.
	fail := func(layer int, op Operator) *OOMPoint {
		var temp float64
		for _, t := range opTensors(op) {
			if running+float64(t.bytes) > float64(limit) {
				return &OOMPoint{Step: 1, Phase: "forward", Layer: layer, Operator: op.Name, AllocatedBytes: int64(running),
					RequestBytes: t.bytes, LimitBytes: limit}
			}
			running += float64(t.bytes)
			if t.life != lifeSaved {
				temp += float64(t.bytes)
			}
		}
		running -= temp
		return nil
	}
	if i == 0 {
		for _, op := range embOps {
			if p := fail(-1, op); p != nil {
				return p
			}
		}
	}
	ckpt := e.checkpointBytes()
	recompute := c.Training.Recompute == "full" || c.Training.Recompute == "op_selective"
	for _, layer := range e.stageLayers(i) {
		start := running
		for _, op := range layerOps {
			if p := fail(layer, op); p != nil {
				return p
			}
		}
		if recompute {
			running = start + ckpt // the checkpointed layer frees all but what it keeps
		}
	}
	if i == c.Parallel.PP-1 {
		for _, op := range headOps {
			if p := fail(-1, op); p != nil {
				return p
			}
		}
	}
	// The forward of step 1 fits; the backward of step 1 or, with the optimizer states, step 2 may not.
	if st.PeakAllocated <= limit {
		return nil
	}
	step := 2
	if st.PeakAllocated-st.Optimizer > limit {
		step = 1
	}
	return &OOMPoint{Step: step, Phase: st.PeakStage, Layer: -1, Operator: st.PeakStage, AllocatedBytes: min(int64(running), limit), LimitBytes: limit}
}
