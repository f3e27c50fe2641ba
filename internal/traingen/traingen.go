// Package traingen records synthetic training runs as PyTorch allocator snapshots: a setup, then iterations of
// forward, backward and AdamW with the allocations, stacks, annotations and lifetimes a real run has, and knobs for
// what goes wrong (a leak, changing shapes, a setup buffer never reused, an OOM). Tests and memscan-gen use it.
package traingen

import (
	"math"

	"github.com/memscan/memscan/internal/snapbuild"
	"github.com/memscan/memscan/snapshot"
)

// TrainingLoop describes a synthetic training run, recorded as a PyTorch snapshot with stacks="python" from before
// the first allocation: a setup that builds the weights, then iterations of forward (activations saved per layer,
// a transient per layer, the logits), backward (autograd's thread: no stack; an activation gradient per layer,
// freed at once; a parameter gradient per layer, kept until zero_grad; the saved activations freed), and AdamW
// (two states per layer created in the first step, a transient per layer), then zero_grad(set_to_none=True).
// Sizes are multiples of 2 MiB so every block fills its segment exactly.
type TrainingLoop struct {
	Iterations int
	Layers     int
	// WeightBytes is one layer's parameters; ActivationBytes what one layer saves for backward at scale 1.
	WeightBytes, ActivationBytes int64
	// Scale multiplies the activations of iteration i (varying sequence lengths); nil means 1 for all.
	Scale []float64
	// LogitsBytes is the logits of one forward at scale 1 (freed after backward unless Keep).
	LogitsBytes int64
	// Keep keeps every iteration's logits alive to the end (a list the program appends them to): a real leak.
	Keep bool
	// SetupScratchBytes is a buffer allocated and freed during the setup (loading a checkpoint), 0 for none.
	SetupScratchBytes int64
	// OOMAtLayer > 0 makes the first forward fail at that layer; the exception then frees the activations.
	OOMAtLayer int
	// Annotations records the optimizer's record_function marks; without them the optimizer is told by its frames.
	Annotations bool
	// LayerTensors is the parameter tensors of one layer (0 or 1: one of WeightBytes); the k-th of the others holds
	// WeightBytes/2^k. MovedToDevice allocates every parameter from one stack, module.py's _apply, as a model built
	// on the CPU and moved with .to(device) does.
	LayerTensors  int
	MovedToDevice bool
	// LossVocab > 0 ends each forward with a Hugging Face causal-LM cross-entropy over the logits, read as bf16
	// b·s·V with V = LossVocab: the int64 labels (8 bytes a token), the fp32 upcast and log-probabilities (twice
	// the logits each, the upcast freed once the log-probabilities exist); the backward then starts with
	// autograd's fp32 gradients of nll_loss and log_softmax and the bf16 gradient of the logits, without stacks.
	LossVocab int
}

// Stacks of the synthetic run, innermost first, as PyTorch records them with stacks="python".
var (
	TrainWeightStack = snapbuild.Stack("/venv/lib/python3.12/site-packages/torch/nn/modules/linear.py:106:__init__",
		"/home/user/proj/model.py:20:__init__", "/home/user/proj/train.py:30:build", "/home/user/proj/train.py:90:main")
	TrainScratchStack = snapbuild.Stack("/venv/lib/python3.12/site-packages/torch/serialization.py:1400:load",
		"/home/user/proj/train.py:40:load_checkpoint", "/home/user/proj/train.py:91:main")
	TrainInputStack = snapbuild.Stack("/home/user/proj/train.py:60:get_batch", "/home/user/proj/train.py:100:main")
	TrainActStack   = snapbuild.Stack("/home/user/proj/model.py:50:forward", "/venv/lib/python3.12/site-packages/torch/nn/modules/module.py:1750:_call_impl",
		"/home/user/proj/model.py:80:forward", "/venv/lib/python3.12/site-packages/torch/nn/modules/module.py:1750:_call_impl", "/home/user/proj/train.py:101:main")
	TrainTmpStack = snapbuild.Stack("/home/user/proj/model.py:52:forward", "/venv/lib/python3.12/site-packages/torch/nn/modules/module.py:1750:_call_impl",
		"/home/user/proj/model.py:80:forward", "/venv/lib/python3.12/site-packages/torch/nn/modules/module.py:1750:_call_impl", "/home/user/proj/train.py:101:main")
	TrainLogitsStack = snapbuild.Stack("/home/user/proj/model.py:85:forward", "/venv/lib/python3.12/site-packages/torch/nn/modules/module.py:1750:_call_impl",
		"/home/user/proj/train.py:101:main")
	TrainStateStack = snapbuild.Stack("/venv/lib/python3.12/site-packages/torch/optim/adamw.py:170:_init_group",
		"/venv/lib/python3.12/site-packages/torch/optim/adamw.py:210:step", "/home/user/proj/train.py:104:main")
	TrainOptTmpStack = snapbuild.Stack("/venv/lib/python3.12/site-packages/torch/optim/adamw.py:500:_multi_tensor_adamw",
		"/venv/lib/python3.12/site-packages/torch/optim/adamw.py:230:step", "/home/user/proj/train.py:104:main")
	TrainMovedStack = snapbuild.Stack("/venv/lib/python3.12/site-packages/torch/nn/modules/module.py:1340:convert",
		"/venv/lib/python3.12/site-packages/torch/nn/modules/module.py:915:_apply", "/venv/lib/python3.12/site-packages/torch/nn/modules/module.py:1355:to",
		"/home/user/proj/train.py:31:build", "/home/user/proj/train.py:90:main")
	TrainLabelsStack = snapbuild.Stack("/venv/lib/python3.12/site-packages/transformers/loss/loss_utils.py:64:ForCausalLMLoss",
		"/home/user/proj/model.py:88:forward", "/home/user/proj/train.py:101:main")
	TrainUpcastStack = snapbuild.Stack("/venv/lib/python3.12/site-packages/transformers/loss/loss_utils.py:59:ForCausalLMLoss",
		"/home/user/proj/model.py:88:forward", "/home/user/proj/train.py:101:main")
	TrainLogProbsStack = snapbuild.Stack("/venv/lib/python3.12/site-packages/torch/nn/functional.py:3504:cross_entropy",
		"/venv/lib/python3.12/site-packages/transformers/loss/loss_utils.py:40:fixed_cross_entropy",
		"/venv/lib/python3.12/site-packages/transformers/loss/loss_utils.py:70:ForCausalLMLoss",
		"/home/user/proj/model.py:88:forward", "/home/user/proj/train.py:101:main")
)

// trainAlloc is the fixture's allocator: one segment per block, a freed segment reused only by a request of
// exactly its size (so changing shapes leave cached segments behind, as fragmentation does).
type trainAlloc struct {
	b      *snapbuild.SnapBuilder
	next   uint64
	free   map[int64][]uint64
	sizeOf map[uint64]int64
	stack  map[uint64]*snapshot.Stack
	live   map[uint64]bool
	order  []uint64 // segment addresses in creation order
	marks  int      // annotations made since the event count was markAt
	markAt int
}

func (a *trainAlloc) alloc(size int64, st *snapshot.Stack) uint64 {
	var addr uint64
	if f := a.free[size]; len(f) > 0 {
		addr = f[len(f)-1]
		a.free[size] = f[:len(f)-1]
	} else {
		addr = a.next
		a.next += uint64(size) + 2<<20
		a.sizeOf[addr] = size
		a.order = append(a.order, addr)
		a.event(snapbuild.Ev(snapshot.ActionSegmentAlloc, addr, size, st))
	}
	a.stack[addr] = st
	a.live[addr] = true
	a.event(snapbuild.Ev(snapshot.ActionAlloc, addr, size, st))
	return addr
}

// event appends e at 10 µs after the previous event, so that annotations fall strictly between events.
func (a *trainAlloc) event(e snapbuild.Entry) {
	e.TimeUS, e.HasTime = int64(1000+10*len(a.b.S.DeviceTraces[0])), true
	a.b.Event(0, e)
}

func (a *trainAlloc) release(addr uint64) {
	size := a.sizeOf[addr]
	a.event(snapbuild.Ev(snapshot.ActionFreeRequested, addr, size, a.stack[addr]))
	a.event(snapbuild.Ev(snapshot.ActionFreeCompleted, addr, size, a.stack[addr]))
	a.free[size] = append(a.free[size], addr)
	delete(a.live, addr)
}

// mark records an annotation between the last event and the next; marks made back to back keep their order.
func (a *trainAlloc) mark(name, stage string) {
	n := len(a.b.S.DeviceTraces[0])
	if n != a.markAt {
		a.markAt, a.marks = n, 0
	}
	a.marks++ // at most four marks between two events
	a.b.S.ExternalAnnotations = append(a.b.S.ExternalAnnotations,
		snapshot.Annotation{Stage: stage, Name: name, Device: 0, TimeUS: int64(1000+10*n) - 10 + int64(a.marks)})
}

// mib2 rounds n up to a multiple of 2 MiB.
func mib2(n float64) int64 {
	const m = 2 << 20
	return int64(math.Ceil(n/m)) * m
}

// Build records the run.
func (c TrainingLoop) Build() *snapshot.Snapshot {
	b := snapbuild.NewSnap(1)
	b.S.TorchFormat = "2.10+"
	b.S.AllocatorSettings = &snapshot.AllocatorSettings{MaxSplitSize: -1}
	a := &trainAlloc{b: b, next: 0x7f0000000000, free: map[int64][]uint64{}, sizeOf: map[uint64]int64{}, stack: map[uint64]*snapshot.Stack{}, live: map[uint64]bool{}}
	weights := make([]uint64, c.Layers)
	wst := TrainWeightStack
	if c.MovedToDevice {
		wst = TrainMovedStack
	}
	for l := range weights {
		weights[l] = a.alloc(c.WeightBytes, wst)
		for k := 1; k < c.LayerTensors; k++ {
			a.alloc(c.WeightBytes>>k, wst)
		}
	}
	if c.SetupScratchBytes > 0 {
		a.release(a.alloc(c.SetupScratchBytes, TrainScratchStack))
	}
	var states []uint64
	var input uint64
	for it := 0; it < c.Iterations; it++ {
		scale := 1.0
		if it < len(c.Scale) {
			scale = c.Scale[it]
		}
		next := a.alloc(mib2(2<<20*scale), TrainInputStack)
		if input != 0 {
			a.release(input)
		}
		input = next
		acts := make([]uint64, c.Layers)
		for l := range acts {
			if it == 0 && l+1 == c.OOMAtLayer {
				a.event(snapbuild.Entry{TraceEntry: snapshot.TraceEntry{Action: snapshot.ActionOOM, Size: mib2(float64(c.ActivationBytes) * scale)},
					Extra: snapshot.TraceExtra{DeviceFree: 1 << 20}, Stack: TrainActStack})
				// The exception unwinds the forward: its activations are freed, then the handler dumps.
				for _, x := range acts[:l] {
					a.release(x)
				}
				c.finish(a)
				return b.S
			}
			acts[l] = a.alloc(mib2(float64(c.ActivationBytes)*scale), TrainActStack)
			a.release(a.alloc(mib2(float64(c.ActivationBytes)*scale/2), TrainTmpStack))
		}
		lb := mib2(float64(c.LogitsBytes) * scale)
		logits := a.alloc(lb, TrainLogitsStack)
		var labels, logProbs, dLogits uint64
		if c.LossVocab > 0 {
			labels = a.alloc(8*lb/2/int64(c.LossVocab), TrainLabelsStack)
			upcast := a.alloc(2*lb, TrainUpcastStack)
			logProbs = a.alloc(2*lb, TrainLogProbsStack)
			a.release(upcast)
			// The backward's first nodes: NllLossBackward0, LogSoftmaxBackward0, then ToCopyBackward0's bf16.
			nll := a.alloc(2*lb, nil)
			a.release(labels)
			ls := a.alloc(2*lb, nil)
			a.release(logProbs)
			a.release(nll)
			dLogits = a.alloc(lb, nil)
			a.release(ls)
		}
		grads := make([]uint64, c.Layers)
		for l := c.Layers - 1; l >= 0; l-- {
			g := a.alloc(mib2(float64(c.ActivationBytes)*scale), nil) // activation gradient
			grads[l] = a.alloc(c.WeightBytes, nil)
			a.release(acts[l])
			a.release(g)
			if dLogits != 0 {
				a.release(dLogits)
				dLogits = 0
			}
		}
		if !c.Keep {
			a.release(logits)
		}
		if c.Annotations {
			a.mark("Optimizer.step#AdamW.step", "START")
		}
		if it == 0 {
			for range 2 * c.Layers {
				states = append(states, a.alloc(c.WeightBytes, TrainStateStack))
			}
		}
		for range c.Layers {
			a.release(a.alloc(c.WeightBytes, TrainOptTmpStack))
		}
		if c.Annotations {
			a.mark("Optimizer.step#AdamW.step", "END")
			a.mark("Optimizer.zero_grad#AdamW.zero_grad", "START")
		}
		for _, g := range grads {
			a.release(g)
		}
		if c.Annotations {
			a.mark("Optimizer.zero_grad#AdamW.zero_grad", "END")
		}
	}
	c.finish(a)
	return b.S
}

// finish writes the final state: every segment still reserved, holding its one block, live or cached.
func (c TrainingLoop) finish(a *trainAlloc) {
	for _, addr := range a.order {
		size := a.sizeOf[addr]
		seg := snapshot.Segment{Address: addr, TotalSize: size, Type: snapshot.SegmentLarge,
			Blocks: []snapshot.Block{{Address: addr, Size: size, State: snapshot.BlockInactive}}}
		if a.live[addr] {
			seg.AllocatedSize, seg.ActiveSize, seg.RequestedSize = size, size, size
			seg.Blocks[0] = snapshot.Block{Address: addr, Size: size, RequestedSize: size, State: snapshot.BlockActiveAllocated, Stack: a.stack[addr]}
		}
		a.b.S.Segments = append(a.b.S.Segments, seg)
	}
}
