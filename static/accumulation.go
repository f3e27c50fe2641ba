package static

// Gradient accumulation without a pipeline: several micro-batches per optimizer step (parallel.num_microbatches
// > 1, or a global batch larger than micro × dp), the gradients of the earlier ones kept until the step. What
// each stack keeps between micro-batches, in the dtype and sharding states() gives the gradients:
//   - PyTorch's autograd (Hugging Face Trainer, plain loops, torchtune's single-device recipes): .grad stays from
//     one backward to the next until optimizer.step() and zero_grad(); in a later micro-batch AccumulateGrad
//     adds each new gradient into it in place, so the new one (in the parameter's dtype) lives only until it is
//     added. DDP under no_sync (the Trainer's accumulation through Accelerate) keeps the same full .grad.
//   - DeepSpeed ZeRO-1: the full bf16 .grad accumulates the same way; it is reduced at the boundary only.
//   - DeepSpeed ZeRO-2 (stage_1_and_2.py, contiguous_gradients): each backward reduces into a flat partition
//     buffer (grads_in_partition, allocated whole at its first copy) whose views the epilogue keeps as the
//     accumulated partition gradients (averaged_gradients / all_grad_tensors) and then releases; a later
//     micro-batch allocates a new buffer and its epilogue adds it into the kept one: two partitions at the end
//     of its backward.
//   - FSDP2 (torchtitan, torchtune): reduce-scatter every micro-batch (neither calls
//     set_requires_gradient_sync(False)); foreach_reduce adds the new shard into the sharded .grad in
//     reduce_dtype and frees it.
//   - FSDP under the Hugging Face Trainer (framework hf, zero_stage 3): every micro-batch but the step's last
//     runs under accelerator.no_sync (FSDP1's no_sync, FSDP2's set_requires_gradient_sync(False)), which skips
//     the reduce-scatter and keeps each unit's gradient unsharded: the later micro-batches hold the whole
//     model's unsharded gradients, the shard group times the sharded ones, and only the last reduce-scatters
//     them. They are counted in the gradient dtype, as FSDP2 keeps them (to_accumulated_grad_if_needed);
//     FSDP1 keeps param_dtype, the same under hf's pure bf16.
//   - Megatron's persistent grad buffer exists from the start: accumulation adds nothing to it.
// A pipeline stage accumulates inside its schedule (pipeline.go, fsdp.go), and optimizer_in_backward cannot
// accumulate (resolveFramework refuses it).

// accumulation is what gradient accumulation adds to a stage's forward and backward moments.
type accumulation struct {
	held      float64 // gradients the earlier micro-batches left, live through every later forward and backward
	headNew   float64 // the output layer's new weight gradient before it is added into the held one
	layerNew  float64 // a layer's new weight gradient before it is added (0 where layerBwdTemp counts it already)
	partition float64 // ZeRO-2: the micro-batch's own reduced partition buffer until its epilogue adds it
	// partitionEarly: the head's gradients and one layer's (the first the backward produces) fill a reduce
	// bucket, so the partition buffer exists from the start of the backward, not only at its end.
	partitionEarly bool
	// unsharded: FSDP under no_sync holds the unsharded gradients, which every micro-batch but the last also
	// ends its backward with.
	unsharded bool
}

// zeroBucketElems is DeepSpeed ZeRO-1/2's reduce bucket (reduce_bucket_size, 5e8 elements).
const zeroBucketElems = 5e8

// accumulates reports whether the training step runs several micro-batches outside a pipeline with gradients
// that are not in a persistent buffer.
func (e *est) accumulates() bool {
	p := e.c.Parallel
	return !e.inference && p.PP == 1 && p.NumMicrobatches > 1 && p.GradBuffer != "persistent" && !e.c.Training.OptimizerInBackward
}

// fsdpNoSync reports accumulation under FSDP with the gradient sync off until the step's last micro-batch.
func (e *est) fsdpNoSync() bool {
	return e.accumulates() && e.c.Framework == "hf" && e.c.Parallel.ZeroStage == 3
}

// accumulation sizes what accumulation keeps for a stage whose gradients are G bytes (states(), corrected) and
// U bytes unsharded (FSDP: every trainable parameter's gradient on this GPU in the gradient dtype).
func (e *est) accumulation(G, U float64, head, layers modelStates) accumulation {
	if e.fsdpNoSync() && U > 0 {
		return accumulation{held: U, unsharded: true}
	}
	if !e.accumulates() || G <= 0 {
		return accumulation{}
	}
	a := accumulation{held: G}
	switch z := e.c.Parallel.ZeroStage; {
	case z == 2 && e.lora == nil: // (a LoRA adapter's partition is too small to matter)
		a.partition = G
		a.partitionEarly = head.params+layers.params/float64(max(1, e.layersPerStage)) >= zeroBucketElems
	case z < 2 && e.lora == nil:
		// AccumulateGrad's new gradient is in the parameter's dtype; a gradient dtype that differs has it in
		// layerBwdTemp already ("low-precision weight gradient before accumulation").
		a.headNew = head.largestWeightPerGPU
		if e.gb == e.pb {
			a.layerNew = layers.largestWeightPerGPU
		}
	}
	return a
}

// accumulationHeld says what the stack keeps between micro-batches, for the assumptions.
func (e *est) accumulationHeld() string {
	switch z := e.c.Parallel.ZeroStage; {
	case e.fsdpNoSync():
		return "the whole model's unsharded gradients, which accelerator.no_sync keeps on the GPU until the last micro-batch reduce-scatters them"
	case e.fsdpOffload():
		return "sharded, in host memory with the offloaded states"
	case z == 3:
		return "the sharded gradients, each micro-batch's reduce-scatter added into them"
	case z == 2:
		return "ZeRO-2's gradient partition; each later micro-batch reduces into a new partition buffer and adds it in at the end of its backward"
	}
	return "every .grad, each new gradient added into it in place (DDP under no_sync keeps them unreduced)"
}

// replayedMicrobatches is the number of micro-batches per step the allocation sequence runs outside a pipeline:
// the first, which creates the gradients, and one later one, which runs with them held; every further
// micro-batch repeats the second's allocations from the same live set. Under no_sync the last micro-batch
// differs from the ones before it (it reduce-scatters): first, one in the middle, last.
func (e *est) replayedMicrobatches() int {
	if e.fsdpNoSync() {
		return min(e.c.Parallel.NumMicrobatches, 3)
	}
	return min(max(1, e.c.Parallel.NumMicrobatches), 2)
}

// zero2Partition is the sequence's ZeRO-2 state in a later micro-batch: the elements whose gradients were
// reduced so far, and the partition buffer once the first bucket's reduction allocated it.
type zero2Partition struct {
	bytes, elems int64 // the whole partition buffer; the trainable elements on this GPU
	reduced      int64
	id           uint64
}

// initZero2 sizes ZeRO-2's partition buffer: every parameter's partition gradient, in one flat tensor.
func (t *trainSeq) initZero2() {
	e := t.e
	if e.c.Parallel.ZeroStage != 2 || t.frozen {
		return
	}
	add := func(ps []paramTensor, n int64) {
		for _, p := range ps {
			t.zero2.bytes += t.gBytes(p) * n
			t.zero2.elems += int64(e.perGPU(p)) * n
		}
	}
	add(t.embPs, 1)
	add(t.layerPs, e.layersPerStage)
	add(t.headPs, 1)
}

// reduceInto counts p's gradient into ZeRO-2's reduce bucket in a later micro-batch: once a bucket's worth (or
// everything) is reduced, the new partition buffer is allocated.
func (t *trainSeq) reduceInto(p paramTensor) {
	z := &t.zero2
	z.reduced += int64(t.e.perGPU(p))
	if z.id == 0 && float64(z.reduced) >= min(zeroBucketElems, float64(z.elems)) {
		z.id = t.s.alloc(z.bytes)
	}
}

// epilogue is ZeRO-2's end of a later micro-batch's backward: the last bucket is reduced (allocating the
// partition buffer if no bucket filled before), the buffer is added into the held gradients and released.
func (t *trainSeq) epilogue() {
	z := &t.zero2
	if !t.later || z.bytes == 0 {
		return
	}
	if z.id == 0 {
		z.id = t.s.alloc(z.bytes)
	}
	t.s.free(z.id)
	z.id, z.reduced = 0, 0
}
