package static

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
