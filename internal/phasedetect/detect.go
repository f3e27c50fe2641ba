// Package phasedetect finds the training iterations in an allocator trace and, within each, the forward, backward and
// optimizer phases, as event-index (and time) boundaries per device (the model of package phases).
//
// Evidence, strongest first:
//
//   - record_function annotations of the optimizer (PyTorch's "Optimizer.step#AdamW.step", and the zero_grad that
//     usually follows) delimit the optimizer phase; an iteration ends where its optimizer phase ends;
//   - stacks: an allocation made inside a module call (torch.nn Module._call_impl, or any frame named forward)
//     starts the forward; one made by autograd (C++ *Backward*::apply or autograd::Engine frames, Python
//     torch.autograd backward frames, checkpoint recomputation) starts the backward; one made under torch/optim
//     starts the optimizer phase when no annotation says where it is;
//   - with stacks="python", autograd's own thread records no stack at all: a stackless allocation that follows a
//     forward in a trace that otherwise has stacks is the backward;
//   - failing all of that, `snapshot` actions or a record_function name repeated at least twice split the trace into
//     iterations with no phases;
//   - a trace with no stacks and no markers at all is split by its alloc/free pattern: the same program's requests
//     repeating, transient memory falling back to a floor between them, and a forward whose blocks a backward
//     releases (see periodic.go); a trace without that pattern gets no iterations.
//
// Everything before the first forward is the setup (model build, data loading of the first step). The allocator
// records the process from its first allocation only when history was enabled that early; a trace that starts
// later still gets iterations, but its setup is whatever preceded the first phase seen.
package phasedetect

import (
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/memscan/memscan/phases"
	"github.com/memscan/memscan/snapshot"
)

// kind is what an allocation's stack says about the phase it was made in.
type kind uint8

const (
	kindOther kind = iota
	kindModule
	kindAutograd
	kindOptim
	kindStackless
)

var nativeBackward = regexp.MustCompile(`Backward\d*::apply|autograd::Engine::|AccumulateGrad::apply|autograd::CopyBackwards`)

// isNativeBackward matches nativeBackward. Every alternative contains "Backward", "AccumulateGrad" or
// "autograd::", so the substring test turns away the other frames (most frames of a C++ stack) before the
// regexp runs: the regexp on every frame was most of the cost of classifying C++ stacks.
func isNativeBackward(name string) bool {
	return (strings.Contains(name, "Backward") || strings.Contains(name, "autograd::") || strings.Contains(name, "AccumulateGrad")) &&
		nativeBackward.MatchString(name)
}

// stackKind classifies one stack, innermost frame first; the first frame that says anything decides, except that
// autograd frames anywhere win (a backward op calls the same kernels as the forward).
func stackKind(s *snapshot.Stack) kind {
	if s == nil || len(s.Frames) == 0 {
		return kindStackless
	}
	k := kindOther
	for i := range s.Frames {
		f := &s.Frames[i]
		file := strings.ReplaceAll(f.Filename, `\`, "/")
		switch {
		case isNativeBackward(f.Name),
			strings.Contains(file, "torch/autograd/") && (f.Name == "backward" || f.Name == "_engine_run_backward" || f.Name == "grad"),
			strings.HasSuffix(file, "torch/_tensor.py") && f.Name == "backward",
			strings.Contains(file, "torch/utils/checkpoint"):
			return kindAutograd
		case k == kindOther && strings.Contains(file, "torch/optim/"):
			k = kindOptim
		case k == kindOther && (f.Name == "forward" ||
			strings.HasSuffix(file, "torch/nn/modules/module.py") && (f.Name == "_call_impl" || f.Name == "_wrapped_call_impl")):
			k = kindModule
		}
	}
	return k
}

// window is an annotated range of events.
type window struct{ start, end int }

// annotated maps, for each of subs, the START/END pairs of annotations whose name contains it (on device dev) to
// event windows: an event belongs to the window when its time lies in [START, END]. ordered says the trace's times
// never decrease: then each search starts from the one before (searchNear), as annotations come in time order, and
// the subs share one walk through the trace instead of one each.
func annotated(trace []snapshot.TraceEntry, anns []snapshot.Annotation, dev int, ordered bool, subs ...string) [][]window {
	out := make([][]window, len(subs))
	if len(trace) == 0 || !trace[0].HasTime {
		return out
	}
	near := 0
	search := func(f func(i int) bool) int {
		if !ordered {
			return sort.Search(len(trace), f)
		}
		near = searchNear(len(trace), near, f)
		return near
	}
	open := make([]int64, len(subs))
	for k := range open {
		open[k] = -1
	}
	for _, a := range anns {
		if a.Device != dev {
			continue
		}
		for k, sub := range subs {
			if !strings.Contains(a.Name, sub) {
				continue
			}
			switch a.Stage {
			case "START":
				open[k] = a.TimeUS
			case "END":
				if open[k] < 0 {
					continue
				}
				from := open[k]
				s := search(func(i int) bool { return trace[i].TimeUS >= from })
				e := search(func(i int) bool { return trace[i].TimeUS > a.TimeUS })
				out[k] = append(out[k], window{s, e})
				open[k] = -1
			}
		}
	}
	for _, w := range out {
		sortWindows(w)
	}
	return out
}

// searchNear returns the first i in [0, n) at which f is true (n when none), for f false then true, as
// sort.Search does. It starts at near and walks up to nearWalk steps one at a time (events in a row are read at
// the memory's streaming speed, where each probe of a search waits for its own cache line), then steps outwards in
// doubling steps and searches between: an answer close to near costs a short walk instead of a search of the
// whole range.
func searchNear(n, near int, f func(i int) bool) int {
	near = min(max(near, 0), n)
	at := func(i int) bool { return i >= n || f(i) }
	if at(near) {
		for i := near; i > max(near-nearWalk, 0); i-- {
			if !at(i - 1) {
				return i
			}
		}
	} else {
		for i := near + 1; i <= min(near+nearWalk, n); i++ {
			if at(i) {
				return i
			}
		}
	}
	lo, hi := near-1, near // f is false at lo (or lo is −1) and true at hi (or hi is n)
	if at(near) {
		for step := 1; lo >= 0 && at(lo); step *= 2 {
			hi, lo = lo, lo-step
		}
		lo = max(lo, -1)
	} else {
		lo, hi = near, near+1
		for step := 1; !at(hi); step *= 2 {
			lo, hi = hi, min(hi+step, n)
		}
	}
	return lo + 1 + sort.Search(hi-lo-1, func(i int) bool { return at(lo + 1 + i) })
}

// nearWalk is how far searchNear walks before it searches: a training iteration's annotated windows lie tens to
// hundreds of events apart.
const nearWalk = 256

// sortWindows orders windows by start.
func sortWindows(w []window) { sort.Slice(w, func(i, j int) bool { return w[i].start < w[j].start }) }

// Detect finds the iterations and phases of device dev's trace; stacks are the snapshot's TraceStacks, which the
// entries index, and anns its external annotations. Where the events' times never decrease (as the allocator
// records them), the annotations are placed by searches that start from the last one's place, not from the whole
// trace each time (a run of 40,000 iterations has twice as many annotated windows); the answers are the same
// either way.
func Detect(trace []snapshot.TraceEntry, stacks []*snapshot.Stack, anns []snapshot.Annotation, dev int) *phases.Timeline {
	return detectOrdered(trace, stacks, anns, dev, timesOrdered(trace))
}

// timesOrdered reports whether the trace's times never decrease.
func timesOrdered(trace []snapshot.TraceEntry) bool {
	for i := 1; i < len(trace); i++ {
		if trace[i].TimeUS < trace[i-1].TimeUS {
			return false
		}
	}
	return true
}

// detectOrdered is Detect told whether the trace's times never decrease.
func detectOrdered(trace []snapshot.TraceEntry, stacks []*snapshot.Stack, anns []snapshot.Annotation, dev int, timesOrdered bool) *phases.Timeline {
	d := &detector{trace: trace, stacks: stacks, t: &phases.Timeline{Device: dev, Events: len(trace), Setup: phases.NoSpan, Iterations: []phases.Iteration{}, OOM: -1}}
	if len(trace) == 0 {
		d.t.Source = "empty trace"
		return d.t
	}
	w := annotated(trace, anns, dev, timesOrdered, "Optimizer.step", "zero_grad")
	d.steps, d.zero = w[0], w[1]
	d.setZeroReach()
	d.run()
	if !d.t.Training() && d.hasStacks {
		d.inference()
	}
	if !d.t.Training() && len(d.steps) == 0 {
		if ms, src := markers(trace, anns, dev); len(ms) >= 2 {
			d.t.Iterations = d.t.Iterations[:0]
			d.t.Setup = phases.Span{Start: 0, End: ms[0]}
			for i, m := range ms {
				end := len(trace)
				if i+1 < len(ms) {
					end = ms[i+1]
				}
				d.t.Iterations = append(d.t.Iterations, phases.Iteration{Index: i + 1, Span: phases.Span{Start: m, End: end},
					Forward: phases.NoSpan, Backward: phases.NoSpan, Optimizer: phases.NoSpan, Complete: i+1 < len(ms)})
			}
			d.t.Source = src
		} else if !d.hasStacks {
			d.periodic()
		}
	}
	d.times()
	return d.t
}

type detector struct {
	trace       []snapshot.TraceEntry
	stacks      []*snapshot.Stack // the snapshot's TraceStacks, which the entries index
	kinds       []kind            // 1 + the kind of each stack, by its index in stacks (0: not worked out yet)
	t           *phases.Timeline
	steps, zero []window
	// zeroReach[i] is the latest end among zero[:i+1], so the first window ending after an event is found by
	// binary search: a run of thousands of iterations has as many zero_grad windows.
	zeroReach []int
	hasStacks bool
}

// stack returns the stack of event e, nil when it has none.
func (d *detector) stack(e *snapshot.TraceEntry) *snapshot.Stack {
	return snapshot.StackOf(d.stacks, e)
}

// kind returns stackKind of event e's stack, worked out once per stack: a trace names few stacks, each many
// times, and the walks ask for every allocation's.
func (d *detector) kind(e *snapshot.TraceEntry) kind {
	r := int(e.Stack)
	if r <= 0 || r >= len(d.stacks) {
		return kindStackless
	}
	if d.kinds == nil {
		d.kinds = make([]kind, len(d.stacks))
	}
	if k := d.kinds[r]; k != 0 {
		return k - 1
	}
	k := stackKind(d.stacks[r])
	d.kinds[r] = k + 1
	return k
}

// state of the walk.
type state uint8

const (
	inSetup state = iota
	inForward
	inBackward
	inOptimizer // found by frames: ends at the next allocation that is not the optimizer's
	inStep      // inside an annotated optimizer window
	afterStep   // an annotated optimizer phase ended; the next allocation starts an iteration
)

func (d *detector) run() {
	trace, n := d.trace, len(d.trace)
	for i := range trace {
		if st := d.stack(&trace[i]); trace[i].Action == snapshot.ActionAlloc && st != nil && len(st.Frames) > 0 {
			d.hasStacks = true
			break
		}
	}
	hasStacks := d.hasStacks
	if !hasStacks && len(d.steps) == 0 {
		// Nothing to walk by: every allocation would be "other" and no phase would ever start. Only the OOM.
		for j := range trace {
			if trace[j].Action == snapshot.ActionOOM {
				d.t.OOM = j
				break
			}
		}
		d.t.Source = "no iteration evidence"
		return
	}
	if len(d.steps) > 0 {
		// An iteration per annotated optimizer step, give or take one: tens of thousands in a long run, grown in
		// one allocation instead of a copy at each doubling.
		d.t.Iterations = make([]phases.Iteration, 0, len(d.steps)+1)
	}
	st := inSetup
	var cur *phases.Iteration
	bwdAllocs := 0 // autograd allocations of the current backward
	begin := func(j int, s state) {
		bwdAllocs = 0
		if k := len(d.t.Iterations); k == cap(d.t.Iterations) {
			// Doubling, up to what the walk can build: without annotated steps it stops past one iteration per
			// minEventsPerIteration events ("too mixed", see below) and drops them, and append's quarter steps
			// allocated five times the last array for those (35 MB on a 1.5-million-event trace of random
			// stacks), now about twice.
			more := max(k, 16)
			if len(d.steps) == 0 {
				more = max(1, min(more, n/minEventsPerIteration+2-k))
			}
			d.t.Iterations = slices.Grow(d.t.Iterations, more)
		}
		d.t.Iterations = append(d.t.Iterations, phases.Iteration{Index: len(d.t.Iterations) + 1, Span: phases.Span{Start: j, End: n},
			Forward: phases.NoSpan, Backward: phases.NoSpan, Optimizer: phases.NoSpan})
		cur = &d.t.Iterations[len(d.t.Iterations)-1]
		if len(d.t.Iterations) == 1 && j > 0 {
			d.t.Setup = phases.Span{Start: 0, End: j}
		}
		d.enter(cur, j, s)
		st = s
	}
	end := func(j int) {
		cur.Span.End = j
		closeSpan(&cur.Forward, j)
		closeSpan(&cur.Backward, j)
		closeSpan(&cur.Optimizer, j)
	}
	step, stepEnd := 0, -1
	for j := 0; j < n; j++ {
		if len(d.steps) == 0 && len(d.t.Iterations) >= minMixedIterations && len(d.t.Iterations)*minEventsPerIteration > n {
			// Already more iterations than the trace can hold at minEventsPerIteration each: the verdict below
			// will be "too mixed" whatever follows, so stop walking (a random multi-million-event trace would
			// otherwise build hundreds of thousands of throwaway iterations). Only the OOM is still needed.
			for ; j < n; j++ {
				if trace[j].Action == snapshot.ActionOOM {
					d.t.OOM = j
					break
				}
			}
			break
		}
		if step < len(d.steps) && j >= d.steps[step].start {
			// An annotated optimizer step: its phase runs to the window's end, and on through a zero_grad that
			// follows before anything else is allocated (set_to_none frees the gradients there).
			if cur == nil || st == afterStep {
				begin(j, inStep)
			} else {
				d.enter(cur, j, inStep)
			}
			stepEnd = d.extendZeroGrad(d.steps[step].end)
			st = inStep
			step++
		}
		if st == inStep && j >= stepEnd {
			end(j)
			cur.Complete = true
			st = afterStep
		}
		e := &trace[j]
		if e.Action == snapshot.ActionOOM {
			d.t.OOM = j
			if cur != nil {
				end(j + 1)
			}
			break
		}
		if e.Action != snapshot.ActionAlloc {
			continue
		}
		k := d.kind(e)
		if k == kindStackless {
			k = kindOther
			if hasStacks {
				k = kindAutograd
			}
		}
		switch st {
		case inSetup:
			// Optimizer code before any forward is its construction (states some optimizers create eagerly).
			switch k {
			case kindModule:
				begin(j, inForward)
			case kindAutograd:
				begin(j, inBackward)
			}
		case afterStep:
			prev := cur
			begin(prev.Span.End, inForward)
			if k == kindAutograd {
				d.enter(cur, j, inBackward)
				st = inBackward
			}
		case inForward:
			if k == kindAutograd {
				d.enter(cur, j, inBackward)
				st, bwdAllocs = inBackward, 0
			} else if k == kindOptim && len(d.steps) == 0 {
				d.enter(cur, j, inOptimizer)
				st = inOptimizer
			}
		case inBackward:
			switch {
			case k == kindOptim && len(d.steps) == 0:
				d.enter(cur, j, inOptimizer)
				st = inOptimizer
			case k == kindAutograd:
				bwdAllocs++
			case k == kindModule && bwdAllocs >= minBackwardAllocs:
				// A new forward with no optimizer step between: gradient accumulation's next micro-batch. A
				// backward of a few allocations is no backward at all (a stray frame), so it does not split.
				end(j)
				begin(j, inForward)
			}
		case inOptimizer:
			if k != kindOptim {
				end(j)
				cur.Complete = true
				begin(j, inForward)
				if k == kindAutograd {
					d.enter(cur, j, inBackward)
					st = inBackward
				}
			}
		}
	}
	if cur != nil && d.t.OOM < 0 && (st == inOptimizer || st == inStep) {
		cur.Complete = true
	}
	switch {
	case len(d.steps) > 0:
		d.t.Source = "optimizer annotations + stacks"
	case len(d.t.Iterations) >= minMixedIterations && n/len(d.t.Iterations) < minEventsPerIteration:
		// Phases flipping every few events are not a training loop's: the stacks are too mixed to tell.
		// The walk built up to one iteration per minEventsPerIteration events: let their array go rather than keep
		// it, empty, for as long as the timeline lives (megabytes on a trace of millions of events).
		d.t.Iterations, d.t.Setup = []phases.Iteration{}, phases.NoSpan
		d.t.Source = "stacks too mixed for iterations"
	case len(d.t.Iterations) > 0:
		d.t.Source = "stacks"
	default:
		d.t.Source = "no iteration evidence"
	}
}

// Sanity bounds of the stack walk: a training iteration allocates far more than this, so fewer means the frames
// that looked like forward and backward were strays.
// A short trace of one or two iterations is what it is; flipping shows as many tiny ones.
const (
	minBackwardAllocs     = 8
	minEventsPerIteration = 32
	minMixedIterations    = 3
)

// enter starts phase s of it at event j, closing the phase before it.
func (d *detector) enter(it *phases.Iteration, j int, s state) {
	closeSpan(&it.Forward, j)
	closeSpan(&it.Backward, j)
	closeSpan(&it.Optimizer, j)
	open := phases.Span{Start: j, End: it.Span.End}
	switch s {
	case inForward:
		it.Forward = open
	case inBackward:
		it.Backward = open
	case inOptimizer, inStep:
		if it.Optimizer.Empty() {
			it.Optimizer = open
		} else {
			it.Optimizer.End = it.Span.End
		}
	}
}

// closeSpan ends an open span at j.
func closeSpan(s *phases.Span, j int) {
	if s.Start >= 0 && s.End > j {
		s.End = max(j, s.Start)
	}
}

// setZeroReach fills zeroReach from zero (in start order).
func (d *detector) setZeroReach() {
	d.zeroReach = make([]int, len(d.zero))
	for i, z := range d.zero {
		d.zeroReach[i] = z.end
		if i > 0 {
			d.zeroReach[i] = max(z.end, d.zeroReach[i-1])
		}
	}
}

// extendZeroGrad returns the end of the optimizer phase whose step window ends at end: the end of a zero_grad
// window that begins before the next allocation, else end itself.
func (d *detector) extendZeroGrad(end int) int {
	next := end
	for next < len(d.trace) && d.trace[next].Action != snapshot.ActionAlloc {
		next++
	}
	// The first window (in start order) that begins by next and ends after end.
	begun := sort.Search(len(d.zero), func(i int) bool { return d.zero[i].start > next })
	if i := sort.Search(len(d.zeroReach), func(i int) bool { return d.zeroReach[i] > end }); i < begun {
		return d.zero[i].end
	}
	return end
}

// markers are event indices of `snapshot` actions, else of the most frequent record_function START on the device.
func markers(trace []snapshot.TraceEntry, anns []snapshot.Annotation, dev int) ([]int, string) {
	var idx []int
	for j := range trace {
		if trace[j].Action == snapshot.ActionSnapshot {
			idx = append(idx, j)
		}
	}
	if len(idx) >= 2 {
		return idx, "snapshot markers"
	}
	if !trace[0].HasTime {
		return nil, ""
	}
	byName := map[string][]int64{}
	best := ""
	for _, a := range anns {
		if a.Device != dev || a.Stage != "START" {
			continue
		}
		byName[a.Name] = append(byName[a.Name], a.TimeUS)
		if l := len(byName[a.Name]); l > len(byName[best]) || l == len(byName[best]) && a.Name < best {
			best = a.Name
		}
	}
	if len(byName[best]) < 2 {
		return nil, ""
	}
	idx = idx[:0]
	for _, t := range byName[best] {
		j := sort.Search(len(trace), func(i int) bool { return trace[i].TimeUS >= t })
		if j < len(trace) && (len(idx) == 0 || idx[len(idx)-1] != j) {
			idx = append(idx, j)
		}
	}
	return idx, "annotations " + best
}

// times fills every span's times from the trace.
func (d *detector) times() {
	if !d.trace[0].HasTime {
		return
	}
	set := func(s *phases.Span) {
		if s.Empty() {
			return
		}
		s.StartUS = d.trace[s.Start].TimeUS
		s.EndUS = d.trace[min(s.End, len(d.trace)-1)].TimeUS
	}
	set(&d.t.Setup)
	for k := range d.t.Iterations {
		it := &d.t.Iterations[k]
		set(&it.Span)
		set(&it.Forward)
		set(&it.Backward)
		set(&it.Optimizer)
		if it.Prefill != nil {
			set(it.Prefill)
			set(it.Decode)
		}
	}
}
