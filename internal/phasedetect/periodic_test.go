package phasedetect_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/memscan/memscan/internal/gen"
	"github.com/memscan/memscan/internal/phasedetect"
	"github.com/memscan/memscan/internal/realsnap"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/internal/traingen"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/phases"
	"github.com/memscan/memscan/snapshot"
)

// The periodic split is checked against boundaries found independently: those of the same trace read with its
// stacks and annotations, and those a synthetic loop records as it builds its trace. The tolerances:
//
//   - an iteration may start on either side of the next batch's input: the loop allocates it between the end of
//     zero_grad (where an annotated iteration ends) and its first module call (where the first one starts), so at
//     most one allocation lies between the found start and the reference;
//   - the backward is found at the peak of transient memory, which the backward's first gradients raise (the
//     loss's and the logits' in a language model): at or after the reference, by at most a few allocations
//     (bwdLag, per case);
//   - the optimizer step starts after the lowest memory that follows the backward, at most one allocation from
//     the reference (the H200 runs and the synthetic loops agree exactly).
const (
	startLag = 1
	optLag   = 1
)

// strip returns a copy of trace with no stacks and no snapshot markers: what the periodic split gets to read.
func strip(trace []snapshot.TraceEntry) []snapshot.TraceEntry {
	out := make([]snapshot.TraceEntry, len(trace))
	copy(out, trace)
	for j := range out {
		out[j].Stack = 0
		if out[j].Action == snapshot.ActionSnapshot {
			out[j].Action = snapshot.ActionUserDefined
		}
	}
	return out
}

// allocsBetween counts the allocations among events [min(a, b), max(a, b)).
func allocsBetween(tr []snapshot.TraceEntry, a, b int) int {
	n := 0
	for j := min(a, b); j < max(a, b); j++ {
		if tr[j].Action == snapshot.ActionAlloc {
			n++
		}
	}
	return n
}

// trainingIterations counts the iterations of tl that have a backward.
func trainingIterations(tl *phases.Timeline) int {
	n := 0
	for _, it := range tl.Iterations {
		if !it.Backward.Empty() {
			n++
		}
	}
	return n
}

// checkPattern compares the periodic split of trace (stripped) with the reference timeline want.
func checkPattern(t *testing.T, tr []snapshot.TraceEntry, want *phases.Timeline, bwdLag int) *phases.Timeline {
	t.Helper()
	got := phasedetect.Detect(strip(tr), nil, nil, want.Device)
	if got.Source != "alloc/free pattern" || len(got.Iterations) != len(want.Iterations) {
		t.Fatalf("%s: %d iterations, want %d", got.Source, len(got.Iterations), len(want.Iterations))
	}
	for k, g := range got.Iterations {
		w := want.Iterations[k]
		if n := allocsBetween(tr, g.Span.Start, w.Span.Start); n > startLag {
			t.Errorf("iteration %d starts at %d, the reference at %d: %d allocations apart", k+1, g.Span.Start, w.Span.Start, n)
		}
		if g.Backward.Empty() != w.Backward.Empty() || !w.Backward.Empty() &&
			(g.Backward.Start < w.Backward.Start || allocsBetween(tr, g.Backward.Start, w.Backward.Start) > bwdLag) {
			t.Errorf("iteration %d: backward %+v, the reference %+v", k+1, g.Backward, w.Backward)
		}
		if g.Optimizer.Empty() != w.Optimizer.Empty() || !w.Optimizer.Empty() && allocsBetween(tr, g.Optimizer.Start, w.Optimizer.Start) > optLag {
			t.Errorf("iteration %d: optimizer %+v, the reference %+v", k+1, g.Optimizer, w.Optimizer)
		}
		if g.Complete != w.Complete {
			t.Errorf("iteration %d: complete %v, the reference %v", k+1, g.Complete, w.Complete)
		}
		// The phases seen tile the iteration in order.
		at := g.Span.Start
		for _, sp := range []phases.Span{g.Forward, g.Backward, g.Optimizer} {
			if sp.Empty() {
				continue
			}
			if sp.Start != at {
				t.Errorf("iteration %d: phases do not tile it: %+v", k+1, g)
			}
			at = sp.End
		}
		if at != g.Span.End {
			t.Errorf("iteration %d: phases end at %d, the iteration at %d", k+1, at, g.Span.End)
		}
		if k > 0 && got.Iterations[k-1].Span.End != g.Span.Start {
			t.Errorf("iteration %d starts at %d, its predecessor ends at %d", k+1, g.Span.Start, got.Iterations[k-1].Span.End)
		}
	}
	return got
}

// checkSilent asserts that the periodic split of trace finds no iterations.
func checkSilent(t *testing.T, tr []snapshot.TraceEntry, dev int) {
	t.Helper()
	if got := phasedetect.Detect(strip(tr), nil, nil, dev); len(got.Iterations) != 0 {
		t.Errorf("%s: %d iterations invented, the first %+v", got.Source, len(got.Iterations), got.Iterations[0])
	}
}

// TestPeriodicRealSnapshots: with stacks and markers removed, the public snapshots and the H200 inference and OOM
// runs show no training loop, except where their stacks show one (a counterfactual search that back-propagates
// ten times, JasperSolt/EoR_NN): there the split finds the same iterations. Its backward starts with scalar
// bookkeeping and grows gradients before it releases anything, so the peak lags the first autograd allocation by
// 21 allocations, about a ninth of the iteration's.
func TestPeriodicRealSnapshots(t *testing.T) {
	dir, manifest := realsnap.Load(t)
	paths := []string{}
	for _, e := range manifest {
		paths = append(paths, filepath.Join(dir, e.File))
	}
	runs := realsnap.SharedDir(t, "gpu_runs")
	paths = append(paths, filepath.Join(runs, "llama1b-infer-b32-p2048-g128-snap.pickle.gz"),
		filepath.Join(runs, "llama8b-oom-b8-s8192-snap.pickle.gz"))
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			in, err := load.DecodeFile(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			if in.Snapshot == nil {
				t.Skip("no snapshot")
			}
			for dev, tr := range in.Snapshot.DeviceTraces {
				want := phasedetect.Detect(tr, in.Snapshot.TraceStacks, in.Snapshot.ExternalAnnotations, dev)
				if trainingIterations(want) < 2 {
					checkSilent(t, tr, dev)
					continue
				}
				allocs := allocsBetween(tr, want.Iterations[1].Span.Start, want.Iterations[1].Span.End)
				checkPattern(t, tr, want, allocs/8)
			}
		})
	}
}

// TestPeriodicGenerated: what a fresh clone can build. Training loops of internal/traingen (what memscan-gen
// --training writes), stripped, split as their stacks and annotations do; the single-step random snapshots of
// memscan-gen get no iterations.
func TestPeriodicGenerated(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  traingen.TrainingLoop
	}{
		{"plain", traingen.TrainingLoop{Iterations: 3, Layers: 4, WeightBytes: 8 << 20, ActivationBytes: 32 << 20, LogitsBytes: 64 << 20}},
		{"leak", traingen.TrainingLoop{Iterations: 5, Layers: 4, WeightBytes: 64 << 20, ActivationBytes: 256 << 20, LogitsBytes: 512 << 20, Keep: true}},
		{"varlen", traingen.TrainingLoop{Iterations: 8, Layers: 4, WeightBytes: 64 << 20, ActivationBytes: 256 << 20, LogitsBytes: 512 << 20,
			Scale: []float64{1, 3, 2, 4, 1, 3, 2, 4}}},
		{"setup scratch", traingen.TrainingLoop{Iterations: 2, Layers: 6, WeightBytes: 8 << 20, ActivationBytes: 16 << 20, LogitsBytes: 32 << 20,
			SetupScratchBytes: 512 << 20}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.run.Annotations = true
			s := tc.run.Build()
			tr := s.DeviceTraces[0]
			checkPattern(t, tr, phasedetect.Detect(tr, s.TraceStacks, s.ExternalAnnotations, 0), 1)
		})
	}
	t.Run("one iteration", func(t *testing.T) {
		// A single step repeats nothing.
		s := traingen.TrainingLoop{Iterations: 1, Layers: 4, WeightBytes: 8 << 20, ActivationBytes: 32 << 20, LogitsBytes: 64 << 20}.Build()
		checkSilent(t, s.DeviceTraces[0], 0)
	})
	for _, cfg := range []gen.Config{
		{Seed: 1, Entries: 40_000, Stacks: gen.StacksNone},
		{Seed: 2, Entries: 40_000, Stacks: gen.StacksPython},
		{Seed: 3, Entries: 40_000, Stacks: gen.StacksNone, OOM: true},
		{Seed: 4, Entries: 40_000, Stacks: gen.StacksNone, Expandable: true},
		{Seed: 5, Entries: 40_000, Stacks: gen.StacksNone, Generation: gen.Gen21},
	} {
		t.Run("random seed "+strconv.FormatInt(cfg.Seed, 10), func(t *testing.T) {
			in := testutil.Generated(t, cfg)
			for dev, tr := range in.Snapshot.DeviceTraces {
				checkSilent(t, tr, dev)
			}
		})
	}
}

// loop records a training loop (or a loop of forwards alone) as a stackless trace, with the boundaries it made as
// the reference. Sizes in MiB: weights 8 per layer; activations 32 per layer and logits 64, times the iteration's
// scale. The backward allocates per layer the gradient of the layer's output (transient), of its input and of its
// weight; the optimizer step, foreach style, allocates a temporary per layer before it frees them all.
type loop struct {
	iters, layers int
	scale         []int64 // per iteration (varying sequence lengths); 1 where missing
	// keepGrads is zero_grad(set_to_none=False): the first backward's weight gradients stay, later ones are
	// computed into temporaries and added to them.
	keepGrads bool
	// keepOutput is a loop whose `outputs` variable holds the logits until the next forward replaces them.
	keepOutput bool
	// lazy makes the first forward create a persistent workspace.
	lazy bool
	// cut > 0 ends the trace that many events into the last iteration, as a dump in the middle of a step does.
	cut int
	// forward selects a loop without backward: "eval" holds the activations until the output is dropped,
	// "layers" runs one layer after the other and keeps only a per-layer cache until the end of each pass.
	forward string
}

func (l loop) build() ([]snapshot.TraceEntry, *phases.Timeline) {
	const mib = 1 << 20
	var tr []snapshot.TraceEntry
	sizes := map[uint64]int64{}
	next := uint64(1 << 40)
	alloc := func(size int64) uint64 {
		next += uint64(size) + 1<<20
		sizes[next] = size
		tr = append(tr, snapshot.TraceEntry{Action: snapshot.ActionAlloc, Addr: next, Size: size})
		return next
	}
	free := func(addrs ...uint64) {
		for _, a := range addrs {
			tr = append(tr, snapshot.TraceEntry{Action: snapshot.ActionFreeRequested, Addr: a, Size: sizes[a]},
				snapshot.TraceEntry{Action: snapshot.ActionFreeCompleted, Addr: a, Size: sizes[a]})
		}
	}
	want := &phases.Timeline{}
	for range l.layers {
		alloc(8 * mib) // weights
	}
	var input, kept uint64
	grads := make([]uint64, l.layers)
	for it := range l.iters {
		s := int64(1)
		if it < len(l.scale) {
			s = l.scale[it]
		}
		start := len(tr)
		in := alloc(64 << 10 * s)
		if input != 0 {
			free(input)
		}
		input = in
		switch l.forward {
		case "eval":
			var acts []uint64
			for range l.layers {
				acts = append(acts, alloc(32*mib*s))
				free(alloc(16 * mib * s))
			}
			free(acts...)
			continue
		case "layers":
			var cache []uint64
			h := alloc(16 * mib * s)
			for range l.layers {
				cache = append(cache, alloc(4*mib*s))
				free(alloc(64 * mib * s)) // attention scores
				h2 := alloc(16 * mib * s)
				free(alloc(32 * mib * s)) // the MLP's intermediate
				free(h)
				h = h2
			}
			free(h)
			free(cache...)
			continue
		}
		acts := make([]uint64, l.layers)
		for k := range acts {
			acts[k] = alloc(32 * mib * s)
			free(alloc(16 * mib * s))
			if it == 0 && k == 0 && l.lazy {
				alloc(4 * mib)
			}
		}
		logits := alloc(64 * mib * s)
		if kept != 0 {
			free(kept)
			kept = 0
		}
		loss := alloc(4)
		bwd := len(tr)
		grad := alloc(64 * mib * s)
		free(loss)
		if l.keepOutput {
			kept = logits
		} else {
			free(logits)
		}
		for k := l.layers - 1; k >= 0; k-- {
			out := alloc(32 * mib * s)
			free(grad)
			grad = alloc(32 * mib * s)
			free(out)
			switch {
			case !l.keepGrads:
				grads[k] = alloc(8 * mib)
			case it == 0:
				alloc(8 * mib) // becomes .grad and stays
			default:
				free(alloc(8 * mib)) // added to .grad
			}
			free(acts[k])
		}
		free(grad)
		opt := len(tr)
		if it == 0 {
			for range 2 * l.layers {
				alloc(8 * mib) // AdamW's state
			}
		}
		var tmp []uint64
		for range l.layers {
			tmp = append(tmp, alloc(8*mib))
		}
		free(tmp...)
		if !l.keepGrads {
			free(grads...)
		}
		want.Iterations = append(want.Iterations, phases.Iteration{Index: it + 1, Span: phases.Span{Start: start},
			Forward: phases.Span{Start: start, End: bwd}, Backward: phases.Span{Start: bwd, End: opt},
			Optimizer: phases.Span{Start: opt}, Complete: true})
	}
	for k := range want.Iterations {
		end := len(tr)
		if k+1 < len(want.Iterations) {
			end = want.Iterations[k+1].Span.Start
		}
		want.Iterations[k].Span.End, want.Iterations[k].Optimizer.End = end, end
	}
	if last := len(want.Iterations) - 1; l.cut > 0 && last >= 0 {
		it := &want.Iterations[last]
		if it.Span.Start+l.cut >= len(tr) {
			panic("loop: cut beyond the last iteration")
		}
		tr = tr[:it.Span.Start+l.cut]
		it.Complete = false
		it.Span.End = len(tr)
		for _, sp := range []*phases.Span{&it.Forward, &it.Backward, &it.Optimizer} {
			if sp.End > len(tr) {
				sp.End = len(tr)
			}
			if sp.Start >= len(tr) {
				*sp = phases.Span{Start: -1, End: -1}
			}
		}
	}
	want.Events = len(tr)
	return tr, want
}

// TestPeriodicLoops: training loops the shared runs do not cover are split where they record their boundaries —
// gradients never freed (the optimizer's temporaries then form a piece of their own after a floor), the last
// output kept across the boundary, a lazily created workspace in the first forward, sequence lengths changing by
// up to 16×, two steps only, and dumps in the middle of a step (the step the trace ends in is incomplete and has
// the phases it got to) — and loops of forwards alone get no iterations.
func TestPeriodicLoops(t *testing.T) {
	for _, tc := range []struct {
		name string
		loop loop
	}{
		{"plain", loop{iters: 4, layers: 8}},
		{"set_to_none=False", loop{iters: 4, layers: 8, keepGrads: true}},
		{"kept output", loop{iters: 4, layers: 8, keepOutput: true}},
		{"lazy workspace", loop{iters: 3, layers: 8, lazy: true}},
		{"varying lengths", loop{iters: 6, layers: 8, scale: []int64{1, 16, 4, 8, 2, 12}}},
		{"two steps", loop{iters: 2, layers: 8}},
		{"dump inside the forward", loop{iters: 4, layers: 8, cut: 40}},
		{"dump inside the backward", loop{iters: 4, layers: 8, cut: 90}},
		{"dump inside the optimizer step", loop{iters: 4, layers: 8, cut: 130}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, want := tc.loop.build()
			checkPattern(t, tr, want, 1)
		})
	}
	for _, tc := range []struct {
		name string
		loop loop
	}{
		{"eval loop", loop{iters: 6, layers: 8, forward: "eval"}},
		{"inference layer by layer", loop{iters: 6, layers: 8, forward: "layers"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, _ := tc.loop.build()
			checkSilent(t, tr, 0)
		})
	}
	t.Run("one block over and over", func(t *testing.T) {
		// Every free is a floor and every piece repeats the last: a run of thousands of pieces, no training step.
		var tr []snapshot.TraceEntry
		for i := range 10_000 {
			a := uint64(i%7+1) << 30
			tr = append(tr, snapshot.TraceEntry{Action: snapshot.ActionAlloc, Addr: a, Size: 1 << 20},
				snapshot.TraceEntry{Action: snapshot.ActionFreeRequested, Addr: a, Size: 1 << 20},
				snapshot.TraceEntry{Action: snapshot.ActionFreeCompleted, Addr: a, Size: 1 << 20})
		}
		checkSilent(t, tr, 0)
	})
}
