package static

import (
	"testing"
)

// tinyParams is the tiny model's parameter count (knobs_test.go): per layer 2·64 (norms) + 64·64 (q) + 2·32·64
// (k, v) + 64·64 (o) + 3·128·64 (gate, up, down) = 36,992, two layers; embedding 256·64 = 16,384, final norm
// 64, untied output layer 256·64 = 16,384: 73,984 + 32,832 = 106,816.
const tinyParams = 2*tinyLayerParams + tinyEmbedding + th + tv*th

// TestGradientAccumulation: with several micro-batches per optimizer step and no pipeline, the later
// micro-batches' forward and backward hold the gradients the earlier ones left, in the dtype and sharding each
// stack keeps them (accumulation.go). Against the same configuration with one micro-batch, the forward peak and
// the peak (the loss's backward, where the first micro-batch has no gradient yet) rise by exactly them, the
// breakdown names them, the optimizer step and the end of the step do not move. Held bytes, by hand from
// tinyParams = 106,816:
//   - hf on one GPU (HF Trainer / plain loop: .grad in bf16): 2 B · P = 213,632;
//   - hf DDP over 4 (Accelerate's no_sync keeps the full, unreduced .grad): 213,632;
//   - DeepSpeed ZeRO-1 over 4 (full bf16 .grad, reduced at the boundary only): 213,632;
//   - DeepSpeed ZeRO-2 over 4 (the bf16 gradient partition): 2 B · P / 4 = 53,408;
//   - torchtitan FSDP2 over 4 (sharded fp32 .grad, reduce_dtype fp32): 4 B · P / 4 = 106,816;
//   - torchtune FSDP2 over 4 (pure bf16: sharded bf16 .grad): 2 B · P / 4 = 53,408;
//   - hf FSDP over 4 (the Trainer's no_sync keeps every gradient unsharded, bf16): 2 B · P = 213,632, four
//     times the sharded 53,408.
//
// Where accumulation must not move the peak, it does not: Megatron's persistent buffer holds every gradient from
// the start (nothing is held in addition), and a run of micro-batches of 1 × 8 tokens keeps its optimizer-step
// peak while its forward still rises by the 213,632 B held: the step holds bf16 weights (2 B), gradients (2 B),
// both Adam states (4 B) and foreach AdamW's intermediate list in the state dtype (2 B), 10 B · P = 1,068,160
// besides the buffers, more than the forward's activations and temporaries with the held gradients.
func TestGradientAccumulation(t *testing.T) {
	small := func(c *Config) { c.Training.MicroBatchSize, c.Training.SeqLength = 1, 8 }
	for _, tc := range []struct {
		name  string
		mod   func(*Config)
		gpus  int
		steps int   // micro-batches per optimizer step
		held  int64 // bytes, by hand
		same  bool  // the peak does not move
	}{
		{"hf single GPU", nil, 1, 4, 2 * tinyParams, false},
		{"hf ddp over 4", nil, 4, 4, 2 * tinyParams, false},
		{"deepspeed zero-1 over 4", func(c *Config) { c.Framework, c.Parallel.ZeroStage = "deepspeed", 1 }, 4, 2, 2 * tinyParams, false},
		{"deepspeed zero-2 over 4", func(c *Config) { c.Framework, c.Parallel.ZeroStage = "deepspeed", 2 }, 4, 2, 2 * tinyParams / 4, false},
		{"torchtitan fsdp2 over 4", func(c *Config) { applyFramework(t, c, "torchtitan") }, 4, 4, 4 * tinyParams / 4, false},
		{"torchtune fsdp2 over 4", func(c *Config) { applyFramework(t, c, "torchtune"); c.Parallel.ZeroStage = 3 }, 4, 4, 2 * tinyParams / 4, false},
		{"hf fsdp over 4 (no_sync)", func(c *Config) { c.Parallel.ZeroStage = 3 }, 4, 4, 2 * tinyParams, false},
		{"megatron persistent buffer", func(c *Config) { applyFramework(t, c, "megatron") }, 1, 4, 0, true},
		{"optimizer step outweighs", small, 1, 8, 2 * tinyParams, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(steps int) *Report {
				return tiny(t, func(c *Config) {
					if tc.mod != nil {
						tc.mod(c)
					}
					c.Hardware.NumGPUs, c.Training.GlobalBatchSize = tc.gpus, c.Training.MicroBatchSize*tc.gpus*steps
				})
			}
			one, acc := run(1), run(tc.steps)
			a, o := acc.Stages[0], one.Stages[0]
			if acc.Config.Parallel.NumMicrobatches != tc.steps || one.Config.Parallel.NumMicrobatches != 1 {
				t.Fatalf("micro-batches %d and %d, want %d and 1", acc.Config.Parallel.NumMicrobatches, one.Config.Parallel.NumMicrobatches, tc.steps)
			}
			if o.PeakMicroBatch != 0 || o.AtPeak.AccumulatedGrads != 0 || one.Summary.PeakAccumulatedGradBytes != 0 {
				t.Errorf("one micro-batch: peak in micro-batch %d with %d B accumulated", o.PeakMicroBatch, o.AtPeak.AccumulatedGrads)
			}
			if d := a.ForwardPeak - o.ForwardPeak; d != tc.held {
				t.Errorf("forward peak %d − %d = %d, want the held gradients %d", a.ForwardPeak, o.ForwardPeak, d, tc.held)
			}
			wantPeak, wantHeld, wantMB := tc.held, tc.held, 2
			if tc.same {
				wantPeak, wantHeld, wantMB = 0, 0, 0
			}
			if d := a.PeakAllocated - o.PeakAllocated; d != wantPeak || a.PeakStage != o.PeakStage && tc.same {
				t.Errorf("peak %d (%s) − %d (%s) = %d, want %d", a.PeakAllocated, a.PeakStage, o.PeakAllocated, o.PeakStage, d, wantPeak)
			}
			if a.AtPeak.AccumulatedGrads != wantHeld || acc.Summary.PeakAccumulatedGradBytes != wantHeld || a.AtPeak.Grads < wantHeld {
				t.Errorf("at the peak %+v, summary %d accumulated; want %d accumulated", a.AtPeak, acc.Summary.PeakAccumulatedGradBytes, wantHeld)
			}
			if tc.name == "optimizer step outweighs" && (a.PeakStage != "optimizer_step" || a.PeakAllocated != 10*tinyParams+a.Other ||
				a.ForwardPeak >= a.PeakAllocated) {
				t.Errorf("peak %d at %s (forward %d), want the optimizer step's 10 B · %d + %d buffers = %d", a.PeakAllocated, a.PeakStage,
					a.ForwardPeak, tinyParams, a.Other, 10*tinyParams+a.Other)
			}
			if a.PeakMicroBatch != wantMB || acc.Summary.PeakMicroBatch != wantMB {
				t.Errorf("peak in micro-batch %d (summary %d), want %d", a.PeakMicroBatch, acc.Summary.PeakMicroBatch, wantMB)
			}
			if a.OptimizerPeak != o.OptimizerPeak || a.EndOfStepAllocated != o.EndOfStepAllocated || a.Grads != o.Grads {
				t.Errorf("optimizer peak %d, end of step %d, grads %d; one micro-batch: %d, %d, %d", a.OptimizerPeak,
					a.EndOfStepAllocated, a.Grads, o.OptimizerPeak, o.EndOfStepAllocated, o.Grads)
			}
			// The replayed sequence runs the accumulation: the pool holds at least the predicted peak. (Megatron's
			// persistent buffer is not replayed.)
			if !tc.same && (acc.Summary.ReservedSource != ReservedByReplay || a.PeakReserved < a.PeakAllocated) {
				t.Errorf("reserved %d from %s, allocated %d", a.PeakReserved, acc.Summary.ReservedSource, a.PeakAllocated)
			}
		})
	}
}

func applyFramework(t *testing.T, c *Config, name string) {
	t.Helper()
	if err := c.ApplyFramework(name); err != nil {
		t.Fatal(err)
	}
}

// TestAccumulationSequence: the allocation sequence replays two micro-batches per step however many the step
// runs (the second and every later one allocate alike from the same live set), so its length does not grow with
// the accumulation steps; in the later micro-batch each gradient autograd produces is new and added into the held
// .grad (a tensor of the parameter's size in bf16, freed at once), and under ZeRO-2 the micro-batch reduces into a
// new partition buffer of 2 B · P / 4 = 53,408 B that its epilogue adds into the held partition and releases.
func TestAccumulationSequence(t *testing.T) {
	backwards := func(seq *seqBuilder, step int) int {
		n := 0
		for _, ev := range seq.ev {
			if site := seq.sites[ev.site]; ev.size > 0 && site.step == step && site.op == "layer_input_grad" && site.layer == -1 {
				n++
			}
		}
		return n
	}
	two := tinySequence(t, func(c *Config) { c.Training.GlobalBatchSize = 2 * tb })
	sixteen := tinySequence(t, func(c *Config) { c.Training.GlobalBatchSize = 16 * tb })
	if len(two.ev) != len(sixteen.ev) || backwards(sixteen, 2) != 2 {
		t.Errorf("16 micro-batches: %d events, %d backwards in step 2; 2 micro-batches: %d events", len(sixteen.ev), backwards(sixteen, 2), len(two.ev))
	}
	// The output layer's weight gradient (256·64 bf16 = 32,768 B) is allocated as .grad in the first micro-batch
	// and as a new gradient, freed right after, in the second.
	var lmHead []uint64
	for _, ev := range two.ev {
		if site := two.sites[ev.site]; site.step == 2 && site.op == "lm_head" && site.phase == "backward" && ev.size == 2*tv*th {
			lmHead = append(lmHead, ev.id)
		}
	}
	if len(lmHead) != 2 || !freedRightAfter(two, lmHead[1]) || freedRightAfter(two, lmHead[0]) {
		t.Errorf("step 2's output-layer weight gradients %v: want the .grad kept and a second one freed at once", lmHead)
	}
	z2 := tinySequence(t, func(c *Config) {
		c.Framework, c.Hardware.NumGPUs, c.Parallel.ZeroStage, c.Training.GlobalBatchSize = "deepspeed", 4, 2, 8*tb
	})
	var partitions int
	for _, ev := range z2.ev {
		if site := z2.sites[ev.site]; ev.size == 2*tinyParams/4 && site.phase == "backward" {
			partitions++
		}
	}
	if partitions != 2 {
		t.Errorf("%d ZeRO-2 partition buffers of %d B, want one per step (the second micro-batch's) in 2 steps", partitions, 2*tinyParams/4)
	}
	// The Trainer's FSDP with 4 micro-batches (no_sync): the sequence runs the first, one in the middle and the
	// last. Only the last reduce-scatters, one input of a layer's unsharded bf16 gradients, 2 · 36,992 = 73,984 B,
	// per layer and step; the first keeps every gradient unsharded, 2 B · P = 213,632 B a step.
	ns := tinySequence(t, func(c *Config) { c.Hardware.NumGPUs, c.Parallel.ZeroStage, c.Training.GlobalBatchSize = 4, 3, 16*tb })
	var reduced, kept int64
	steps := 0
	for _, ev := range ns.ev {
		site := ns.sites[ev.site]
		steps = max(steps, site.step)
		switch {
		case ev.size == 2*tinyLayerParams && site.op == "fsdp.reduce_scatter":
			reduced++
		case ev.size > 0 && site.op == "fsdp.accumulate_grad":
			kept += ev.size
		}
	}
	if steps < 1 || reduced != int64(tl*steps) || kept != int64(steps)*2*tinyParams || len(ns.later) != steps {
		t.Errorf("no_sync over %d steps: %d layer reduce-scatters, %d B kept unsharded, %d repeatable micro-batches; want %d, %d, %d",
			steps, reduced, kept, len(ns.later), tl*steps, int64(steps)*2*tinyParams, steps)
	}
	// Llama 3 8B: the output layer alone (128,256 · 4,096 = 525 M elements) passes the 5e8-element bucket, so
	// the partition, 2 B · 8,030,261,248 / 8 = 2,007,565,312 B, is allocated in the output layer's backward, the
	// first of the backward, not at its end.
	big, err := DefaultConfigFor("deepspeed")
	if err != nil {
		t.Fatal(err)
	}
	big.Model = ModelConfig{Preset: "llama3-8b"}
	big.Training.MicroBatchSize, big.Training.SeqLength, big.Training.GlobalBatchSize = 1, 1024, 16
	big.Hardware.GPU, big.Hardware.NumGPUs = "h100-sxm", 8
	r, err := Estimate(big)
	if err != nil {
		t.Fatal(err)
	}
	c := r.Config
	e := newEst(&c)
	seq := e.trainingSequence(layerParams(e.x), embeddingParams(e.x), headParams(e.x, 1), e.stepsFor(e.layerOps(), e.embeddingOps(), e.headOps()), r.Stages[0].Other)
	var at []seqSite
	for _, ev := range seq.ev {
		if ev.size == 2*8_030_261_248/8 {
			at = append(at, seq.sites[ev.site])
		}
	}
	if len(at) != 2 || at[0].op != "lm_head" || at[1].op != "lm_head" || at[0].phase != "backward" {
		t.Errorf("llama3-8b ZeRO-2 partition buffers allocated at %+v, want the output layer's backward in both steps", at)
	}
}

// freedRightAfter reports whether the tensor id is freed by the event after its allocation.
func freedRightAfter(s *seqBuilder, id uint64) bool {
	for i, ev := range s.ev {
		if ev.id == id && ev.size > 0 {
			return i+1 < len(s.ev) && s.ev[i+1].id == id && s.ev[i+1].size < 0
		}
	}
	return false
}

// accumulationReplay builds r's training sequence with mbs micro-batches per step (0: as the estimator does)
// and replays it, the micro-batch standing for the left-out ones run at most laterRuns times (0: as built).
func accumulationReplay(t *testing.T, r *Report, mbs, laterRuns int) (replayResult, *seqBuilder) {
	t.Helper()
	c := r.Config
	e := newEst(&c)
	ts := e.newTrainSeq(layerParams(e.x), embeddingParams(e.x), headParams(e.x, 1))
	if mbs > 0 {
		ts.mbs = mbs
	}
	ts.build(e.stepsFor(e.layerOps(), e.embeddingOps(), e.headOps()), r.Stages[0].Other)
	if laterRuns > 0 {
		ts.s.laterRuns = laterRuns
	}
	res, err := ts.s.replay(e.allocatorConfig(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return res, ts.s
}

// TestBoundedReplayMatchesEveryMicroBatch: the sequence runs two micro-batches per step (three under no_sync,
// whose last one differs) and the replay runs the second again, up to the step's count, until the pool settles.
// That is exact, not an approximation: from the second micro-batch on each one starts from the same live tensors
// and allocates and frees alike (markLater checks it frees all it allocates and nothing else), so the allocated
// peak is the same in each; and a run that creates no segment leaves the pool as it found it, so every further
// run replays it exactly. Against a sequence that holds every micro-batch, the bounded replay reaches the same
// peak allocated and the same peak reserved, with fewer events.
func TestBoundedReplayMatchesEveryMicroBatch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mod   func(*Config)
		gpus  int
		steps int
	}{
		{"hf single GPU", nil, 1, 8},
		{"hf ddp over 4", nil, 4, 5},
		{"deepspeed zero-1 over 4", func(c *Config) { c.Framework, c.Parallel.ZeroStage = "deepspeed", 1 }, 4, 4},
		{"deepspeed zero-2 over 4", func(c *Config) { c.Framework, c.Parallel.ZeroStage = "deepspeed", 2 }, 4, 6},
		{"torchtitan fsdp2 over 2", func(c *Config) { applyFramework(t, c, "torchtitan") }, 2, 5},
		{"hf fsdp over 4, no_sync, 4 micro-batches", func(c *Config) { c.Parallel.ZeroStage = 3 }, 4, 4},
		{"hf fsdp over 4, no_sync, 7 micro-batches", func(c *Config) { c.Parallel.ZeroStage = 3 }, 4, 7},
		{"lora", func(c *Config) { c.Training.LoRA = &LoRAConfig{Rank: 4} }, 1, 6},
		{"eager attention, expandable segments", func(c *Config) {
			c.Training.Attention, c.Allocator.ExpandableSegments = "standard", true
		}, 1, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tiny(t, func(c *Config) {
				if tc.mod != nil {
					tc.mod(c)
				}
				c.Hardware.NumGPUs, c.Training.GlobalBatchSize = tc.gpus, tb*tc.gpus*tc.steps
			})
			bounded, bs := accumulationReplay(t, r, 0, 0)
			every, es := accumulationReplay(t, r, tc.steps, 0)
			if bounded.peakAlloc != every.peakAlloc || bounded.peakReserved != every.peakReserved {
				t.Errorf("bounded replay: %d allocated, %d reserved; every micro-batch: %d, %d",
					bounded.peakAlloc, bounded.peakReserved, every.peakAlloc, every.peakReserved)
			}
			if len(bs.ev) >= len(es.ev) || len(bs.later) == 0 {
				t.Errorf("bounded sequence: %d events, %d repeatable micro-batches; every micro-batch: %d events", len(bs.ev), len(bs.later), len(es.ev))
			}
			// The estimate replays the bounded sequence, and its peak allocated holds the accumulated gradients.
			if r.Summary.PeakReservedBytes != every.peakReserved || every.peakAlloc < r.Summary.PeakMemoryBytes*99/100 {
				t.Errorf("estimate: %d reserved, %d allocated; every micro-batch replayed: %d, %d", r.Summary.PeakReservedBytes,
					r.Summary.PeakMemoryBytes, every.peakReserved, every.peakAlloc)
			}
		})
	}
}

// TestAccumulationReplaySettles: Llama 3 8B under FSDP over 8 with 4 micro-batches of 1 × 8192 per step and a
// chunked loss grows its pool in its third micro-batch. The sequence holds two micro-batches per step and the
// replay runs the second again until the pool settles: it reserves what the sequence of all four reserves,
// where the two alone fall short.
func TestAccumulationReplaySettles(t *testing.T) {
	cfg, err := LoadConfig("../testdata/static/llama3-8b-fsdp8.json")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Training.Loss = "chunked"
	r, err := Estimate(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	all, _ := accumulationReplay(t, r, 4, 0)
	bounded, _ := accumulationReplay(t, r, 2, 0)
	alone, _ := accumulationReplay(t, r, 2, 1)
	if bounded.peakReserved != all.peakReserved || bounded.peakAlloc != all.peakAlloc || alone.peakReserved >= all.peakReserved ||
		r.Summary.PeakReservedBytes != all.peakReserved {
		t.Errorf("reserved: all four micro-batches %d, two with the second repeated %d, two alone %d, the estimate %d",
			all.peakReserved, bounded.peakReserved, alone.peakReserved, r.Summary.PeakReservedBytes)
	}
}
