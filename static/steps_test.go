package static

import (
	"fmt"
	"slices"
	"testing"

	"github.com/memscan/memscan/allocator"
)

// The allocation sequence is the same model as the peak prediction: its highest allocated total is the predicted
// peak allocated, for every kind of run it describes — exactly where the loss's backward sets the peak (every
// H200 run), within 0.5 % where the peak falls elsewhere (the sequence orders a layer's backward temporaries
// one by one, the moment model takes their sum), 1 % with FSDP's collective buffers among them.
func TestSequenceReachesPredictedPeak(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"hf bf16", nil},
		{"full recompute", func(c *Config) { c.Training.Recompute = "full" }},
		{"op-selective", func(c *Config) { c.Framework, c.Training.Recompute = "torchtitan", "op_selective" }},
		{"eager attention", func(c *Config) { c.Training.Attention = "standard" }},
		{"amp", func(c *Config) { c.Training.Precision = "amp-bf16" }},
		{"fp32 math attention", func(c *Config) { c.Training.Precision = "fp32" }},
		{"lora", func(c *Config) { c.Training.LoRA = &LoRAConfig{Rank: 4} }},
		{"chunked-output loss", func(c *Config) { c.Training.Loss = "chunked_output" }},
		{"mixed + fused adam", func(c *Config) { c.Training.Precision, c.Training.OptimizerImpl = "bf16-mixed", "fused" }},
		{"8-bit adam", func(c *Config) { c.Training.Optimizer = "adamw-8bit" }},
		{"adafactor", func(c *Config) { c.Training.Optimizer = "adafactor" }},
		{"lora 8-bit adam", func(c *Config) { c.Training.Optimizer, c.Training.LoRA = "adamw-8bit", &LoRAConfig{Rank: 4} }},
		{"ddp over 4", func(c *Config) { c.Hardware.NumGPUs = 4 }},
		{"deepspeed zero-2 over 4", func(c *Config) { c.Framework, c.Hardware.NumGPUs, c.Parallel.ZeroStage = "deepspeed", 4, 2 }},
		{"fsdp2 over 2", func(c *Config) {
			c.Hardware.NumGPUs, c.Parallel.ZeroStage, c.Training.Precision, c.Training.GradPrecision = 2, 3, "bf16-mixed", "fp32"
		}},
		{"torchtitan fsdp2 op-selective compiled", func(c *Config) {
			c.Framework, c.Hardware.NumGPUs, c.Parallel.ZeroStage = "torchtitan", 2, 3
			c.Training.Precision, c.Training.GradPrecision, c.Training.Recompute, c.Training.Compile = "bf16-mixed", "fp32", "op_selective", true
			c.Training.OptimizerImpl, c.Training.Kernels = "fused", "eager"
		}},
		{"gpt2 dropout", func(c *Config) {
			c.Model = ModelConfig{Family: "gpt2", NumLayers: tl, HiddenSize: th, NumAttentionHeads: ta, VocabSize: tv, MaxPositionEmbeddings: ts, TieWordEmbeddings: true}
			c.Training.HiddenDropout, c.Training.AttentionDropout = 0.1, 0.1
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tiny(t, tc.mod)
			c := r.Config
			e := newEst(&c)
			seq := e.trainingSequence(layerParams(e.x), embeddingParams(e.x), headParams(e.x, 1), e.stepsFor(e.layerOps(), e.embeddingOps(), e.headOps()), r.Stages[0].Other)
			tol := 0.005
			if c.Parallel.ZeroStage == 3 {
				// The moment model adds FSDP's gathered layers and reduce-scatter buffers to the layer's backward
				// temporaries; the sequence allocates and frees them one after another.
				tol = 0.01
			}
			if d := float64(seq.peak)/float64(r.Summary.PeakMemoryBytes) - 1; d < -tol || d > tol || tc.mod == nil && d != 0 {
				t.Errorf("sequence peak %d, predicted peak allocated %d (%+d)", seq.peak, r.Summary.PeakMemoryBytes, seq.peak-r.Summary.PeakMemoryBytes)
			}
			if r.Summary.ReservedSource != "allocator replay" || r.Summary.PeakReservedBytes < r.Summary.PeakMemoryBytes {
				t.Errorf("reserved %d from %s, allocated %d", r.Summary.PeakReservedBytes, r.Summary.ReservedSource, r.Summary.PeakMemoryBytes)
			}
			// After the last optimizer step and zero_grad only weights, optimizer states and buffers stay: the
			// sequence must end on the moment model's end-of-step figure, up to the under-a-byte the sequence
			// truncates from each tensor's size (8-bit states' absmax blocks are fractional).
			if end := r.Stages[0].EndOfStepAllocated; seq.allocated > end || seq.allocated < end-int64(len(seq.live)) {
				t.Errorf("sequence ends with %d B allocated in %d tensors, predicted end of step %d B", seq.allocated, len(seq.live), end)
			}
		})
	}
}

// Replay rules seen from the sequence: two tensors of 30 MiB freed and a 50 MiB request after them cannot share
// their 30 MiB segments (each ≥ 10 MiB request gets its own segment rounded to 2 MiB), so reserved peaks at
// 110 MiB; a 20 MiB request reuses a freed 30 MiB segment (the remainder, > 1 MiB, is split off).
func TestSequenceReplay(t *testing.T) {
	s := newSeq()
	a, b := s.alloc(30*mib), s.alloc(30*mib)
	s.free(a, b)
	s.alloc(50 * mib)
	got, err := s.replay(allocator.Config{}, 0)
	if err != nil || got.peakReserved != 110*mib {
		t.Errorf("reserved %d MiB (%v), want 110", got.peakReserved/mib, err)
	}
	// With 100 MiB of capacity the 50 MiB request first fails (60 + 50 > 100), the allocator releases the two
	// cached segments and retries: it succeeds, and reserved never passed 60 MiB. With 40 MiB the second 30 MiB
	// request fails outright, with 30 MiB allocated.
	if got, _ := s.replay(allocator.Config{}, 100*mib); got.failed || got.peakReserved != 60*mib {
		t.Errorf("capacity 100 MiB: %+v, want success after releasing the cache (peak 60 MiB)", got)
	}
	if got, _ := s.replay(allocator.Config{}, 40*mib); !got.failed || got.allocated != 30*mib || got.request != 30*mib {
		t.Errorf("capacity 40 MiB: %+v, want the second 30 MiB request to fail with 30 MiB allocated", got)
	}
	s = newSeq()
	a = s.alloc(30 * mib)
	s.free(a)
	s.alloc(20 * mib)
	if got, _ := s.replay(allocator.Config{}, 0); got.peakReserved != 30*mib {
		t.Errorf("reserved %d MiB, want 30 (the cached segment reused)", got.peakReserved/mib)
	}
}

// An operator's replayed tensors save what its record says it saves: the saved part of opTensors adds up to
// MemoryBytes, and its temporaries (brief ones too) cover TempBytes, also where a builder changes the record after making it
// (the all-gathered input under sequence parallelism, the attention output a frozen LoRA o_proj leaves to a fused
// kernel).
func TestOpTensorsMatchRecord(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
	}{
		{"hf bf16", nil},
		{"lora flash", func(c *Config) { c.Training.LoRA, c.Training.Attention = &LoRAConfig{Rank: 4}, "flash" }},
		{"tp2 sp", func(c *Config) { c.Hardware.NumGPUs, c.Parallel.TP, c.Parallel.SequenceParallel = 2, 2, true }},
		{"eager attention", func(c *Config) { c.Training.Attention = "standard" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tiny(t, tc.mod)
			c := r.Config
			e := newEst(&c)
			for _, op := range e.layerOps() {
				var saved, temp int64
				for _, ts := range opTensors(op) {
					switch ts.life {
					case lifeSaved:
						saved += ts.bytes
					case lifeOp, lifeBrief:
						temp += ts.bytes
					}
				}
				if saved != op.MemoryBytes || temp < op.TempBytes {
					t.Errorf("%s: replayed saved %d, temporaries %d; record saves %d, temporaries %d", op.Name, saved, temp, op.MemoryBytes, op.TempBytes)
				}
			}
		})
	}
}

// HF eager attention replays PyTorch's order (hand-derived from eager_attention_forward, aten softmax and the
// autograd engine; see eagerAttentionSeq): + allocates, − frees, in units of the score matrix S = b·a·s²·2,
// q = b·a·s·d·2 and one expanded K or V (the same size, K and V repeated to every query head).
func TestEagerAttentionOrder(t *testing.T) {
	const S, q, kv = tb * ta * ts * ts * 2, tb * ta * ts * td * 2, tb * ta * ts * td * 2
	for _, tc := range []struct {
		precision     string
		forward, back []int64
	}{
		{"bf16",
			[]int64{q, kv, kv, S, S, -S, S, -S, 2 * S, 2 * S, -2 * S, S, -S},
			[]int64{S, kv, -S, -kv, 2 * S, -S, 2 * S, -2 * S, -2 * S, S, -2 * S, S, -S, q, kv, -S, -q, -kv, -kv, -q, -kv}},
		// fp16: the upcast is fused into the softmax, whose backward writes fp16.
		{"fp16",
			[]int64{q, kv, kv, S, S, -S, S, -S, 2 * S, S, -S},
			[]int64{S, kv, -S, -kv, 2 * S, -S, S, -2 * S, -2 * S, S, -S, q, kv, -S, -q, -kv, -kv, -q, -kv}},
	} {
		t.Run(tc.precision, func(t *testing.T) {
			s := tinySequence(t, func(c *Config) { c.Training.Attention, c.Training.Precision = "standard", tc.precision })
			for _, phase := range []struct {
				name string
				want []int64
			}{{"forward", tc.forward}, {"backward", tc.back}} {
				if got := opEvents(s, seqSite{1, phase.name, 0, "attention"}); !slices.Equal(got, phase.want) {
					t.Errorf("%s: %v\nwant %v", phase.name, got, phase.want)
				}
			}
			// HF builds the eager mask, (b, 1, s, s) in the model's dtype, before the first layer; it and the
			// embeddings die when the model's forward returns after the final norm.
			const mask, emb = tb * ts * ts * 2, tn * th * 2
			if got := opEvents(s, seqSite{1, "forward", -1, "embedding"}); got[len(got)-1] != mask {
				t.Errorf("embedding forward %v, want the mask (%d B) last", got, mask)
			}
			if got := opEvents(s, seqSite{1, "forward", -1, "final_norm"}); !slices.Equal(got[len(got)-2:], []int64{-emb, -mask}) {
				t.Errorf("final norm forward %v, want the embeddings and the mask freed last", got)
			}
		})
	}
}

// opEvents lists the sizes an operator allocates (+) and frees (−) at a site, each run of it (one per
// micro-batch) from its first allocation to the next allocation elsewhere.
func opEvents(s *seqBuilder, at seqSite) []int64 {
	size := map[uint64]int64{}
	var out []int64
	in := false
	for _, ev := range s.ev {
		if ev.size > 0 {
			size[ev.id] = ev.size
			in = s.sites[ev.site] == at
		}
		if !in {
			continue
		}
		if ev.size > 0 {
			out = append(out, ev.size)
		} else {
			out = append(out, -size[ev.id])
		}
	}
	return out
}

// What the training loop and autograd keep past the loss (seen in the SDPA snapshot trace of the H200 runs):
// the loop holds the model's output, so the 16-bit logits die only when backward returns; the loss's backward
// frees nll_loss's gradient and the log-probabilities before the logits' 16-bit gradient exists, which lives
// until the output layer's backward has its own gradients; a tied output
// layer's weight gradient is allocated in its backward and waits in the autograd engine until the
// embedding's backward adds its own out of place (three V·h tensors, the sum kept as .grad).
func TestSequenceLogitsAndTiedGradient(t *testing.T) {
	const seq = ts / 2 // so that the logits (b·s·V·2) differ from V·h·2 in size
	const logits, vh, nh = tb * seq * tv * 2, tv * th * 2, tb * seq * th * 2
	for _, tc := range []struct {
		tied         bool
		microbatches int
		// The V·h tensors of the embedding's backward: untied, its own .grad; tied, its contribution and the sum,
		// then the output layer's contribution and its own die; a second micro-batch's sum is added into .grad
		// and dies too.
		embGrads []int64
	}{
		{false, 1, []int64{vh}},
		{true, 1, []int64{vh, vh, -vh, -vh}},
		{true, 2, []int64{vh, vh, -vh, -vh, vh, vh, -vh, -vh, -vh}},
	} {
		s := tinySequence(t, func(c *Config) {
			c.Model.TieWordEmbeddings, c.Training.SeqLength, c.Parallel.NumMicrobatches = tc.tied, seq, tc.microbatches
		})
		name := fmt.Sprintf("tied %v, %d micro-batches", tc.tied, tc.microbatches)
		if got := opEvents(s, seqSite{1, "forward", -1, "cross_entropy"})[0]; got != logits {
			t.Fatalf("%s: the loss's first tensor is %d B, want the logits (%d)", name, got, logits)
		}
		// + nll_loss's gradient, + log_softmax's, − the first, − the saved log-probabilities, + the logits'
		// gradient, − log_softmax's.
		want := []int64{2 * logits, 2 * logits, -2 * logits, -2 * logits, logits, -2 * logits}
		// The input's gradient, then the weight's (tied: the contribution that waits); then the logits' gradient
		// the loss handed on, the saved input and the input's gradient die.
		wantLM := []int64{nh, vh, -logits, -nh, -nh}
		if got := opEvents(s, seqSite{1, "backward", -1, "cross_entropy"}); !slices.Equal(got[:len(want)], want) {
			t.Errorf("%s: loss backward %v, want %v", name, got, want)
		}
		if got := opEvents(s, seqSite{1, "backward", -1, "lm_head"}); !slices.Equal(got[:len(wantLM)], wantLM) {
			t.Errorf("%s: lm_head backward %v, want %v", name, got, wantLM)
		}
		emb := opEvents(s, seqSite{1, "backward", -1, "embedding"})
		if emb[len(emb)-1] != -logits {
			t.Errorf("%s: the embedding's backward ends with %d, want the logits freed (%d)", name, emb[len(emb)-1], -logits)
		}
		var got []int64
		for _, n := range emb {
			if n == vh || n == -vh {
				got = append(got, n)
			}
		}
		if !slices.Equal(got, tc.embGrads) {
			t.Errorf("%s: the embedding's backward allocates and frees V·h tensors %v, want %v", name, got, tc.embGrads)
		}
	}
}

// The steady step runs again until a run creates no segment. Built by hand: an 80 MiB segment A is cached
// before the step, which allocates 50, 60 and 30 MiB, then frees them. First run: 50 splits A (30 left), 60
// needs a new segment B, 30 takes A's rest: 140 MiB. Second run: best fit puts 50 in B (60 < 80, 10 left),
// 60 in A (20 left), and 30 fits nowhere: a new 30 MiB segment, 170 MiB. Third run: 50 in B, 60 in A, 30 in
// the new one — nothing new, the pool has settled at 170. A step that leaves a tensor alive is not a step that
// can run again, and replays once.
func TestSequenceSteadyStepRepeats(t *testing.T) {
	for _, tc := range []struct {
		name string
		leak bool
		want int64
	}{{"settles at the second run", false, 170 * mib}, {"leaking step runs once", true, 140 * mib}} {
		s := newSeq()
		s.free(s.alloc(80 * mib))
		s.steady = len(s.ev)
		a, b, c := s.alloc(50*mib), s.alloc(60*mib), s.alloc(30*mib)
		s.free(a, b)
		if !tc.leak {
			s.free(c)
		}
		got, err := s.replay(allocator.Config{}, 0)
		if err != nil || got.peakReserved != tc.want {
			t.Errorf("%s: reserved %d MiB (%v), want %d", tc.name, got.peakReserved/mib, err, tc.want/mib)
		}
	}
}

// tinySequence is the allocation sequence of the tiny model's training steps.
func tinySequence(t *testing.T, mod func(*Config)) *seqBuilder {
	r := tiny(t, mod)
	c := r.Config
	e := newEst(&c)
	return e.trainingSequence(layerParams(e.x), embeddingParams(e.x), headParams(e.x, 1), e.stepsFor(e.layerOps(), e.embeddingOps(), e.headOps()), r.Stages[0].Other)
}
