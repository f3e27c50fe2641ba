package phasedetect

import (
	"math"
	"slices"
	"sort"

	"github.com/memscan/memscan/phases"
	"github.com/memscan/memscan/snapshot"
)

// The periodic split reads a trace that has neither stacks nor markers. What defines a training iteration there:
//
//   - The same program runs every iteration: the same allocation requests in the same order, whatever the shapes.
//     Sizes change with the batch's sequence length, but which block is freed after how many other requests does
//     not, so a token per allocation and free carrying its block's lifetime (counted in tokens) repeats exactly
//     from one iteration to the next. That is the evidence of periodicity, and it needs no memory threshold.
//   - Memory the trace never frees (weights, the optimizer state created in the first step, caches, a leak) belongs
//     to no iteration: only the transient bytes — blocks the trace frees again — are followed. Without the
//     persistent ones every iteration starts and ends near zero: also the first, whose optimizer step raises the
//     total by the optimizer state, and those of a leaking run, whose total creeps up every step.
//   - Between iterations the transient memory falls back to a floor (the next batch's input, at most an output the
//     loop keeps until the next step): a valley low beside the memory the iterations on both sides reach. Inside an
//     iteration it does not: the forward holds its activations until the backward releases them, and the backward
//     ends holding the gradients until the optimizer step and zero_grad.
//   - A training iteration has a forward that holds blocks until a backward releases them, allocating as it goes
//     (see trainingShape): a loop of forwards alone (inference, a model run one layer at a time) is not training.
//
// The split: the valleys of the transient-memory curve that are floors (floorShare) and not noise (noiseShare) cut
// the trace into pieces; the longest run of pieces in which each repeats the program of the piece g after it (g =
// 1; 2 or 3 when an iteration falls into several pieces, e.g. the optimizer step's temporaries apart from forward
// and backward when the gradients are never freed) and whose iterations have the shape of training steps are the
// iterations, with the first step and one the trace ends in added where they fit. A single iteration shows no
// period: it gets none.

// Thresholds of the periodic split, with their reasons.
const (
	// floorShare: a boundary valley's transient memory is at most 1/floorShare of the lower neighbouring peak.
	// Between iterations it is the next input (bytes) or an output the loop kept (a few percent of the peak);
	// inside an iteration, after the backward, it is the gradients, which the optimizer's temporaries rarely
	// more than double.
	floorShare = 4
	// noiseShare: a valley shallower than 1/noiseShare of the highest transient memory is noise (a transient of
	// the setup, the swap of one input for the next). Iterations of one run differ in activation memory by the
	// ratio of their sequence lengths, well below this (8 in the shared varying-length run).
	noiseShare = 64
	// minSimilarity is the share of tokens two iterations of one program have in common when aligned: iterations
	// of the shared runs share 85 to 100 % also where the sequence length changes the kernels, unrelated pieces
	// next to nothing.
	minSimilarity = 0.5
	// compareWindow and compareShift bound the comparison of two pieces: their first or last compareWindow
	// tokens, shifted against each other by up to compareShift (where a boundary falls before or after the swap
	// of inputs, or a piece holds a few requests more).
	compareWindow = 256
	compareShift  = 8
	// sampleStride: every sampleStride-th token of a comparison is looked at first (see agree).
	sampleStride = 16
	// phaseSlack: a peak more than 1/phaseSlack of an iteration's tokens away from where the other iterations
	// have theirs is not the one after their forward (see phases).
	phaseSlack = 16
	// maxGroup is the most pieces one iteration may span.
	maxGroup = 3
	// minPartialTokens is the least of an iteration the trace must hold to count it when it ends inside it: the
	// first few requests of a forward match any program.
	minPartialTokens = 16
)

// transient is a trace as the periodic split reads it: one token per alloc and free of a block the trace frees
// again, in trace order.
type transient struct {
	trace []snapshot.TraceEntry
	n     int // events read: up to and including the first OOM
	// tok is the distance in tokens to the token's partner: positive for an alloc, negative for its free, 0 for an
	// alloc whose free the trace does not show (see readTransient).
	tok []int32
	at  []int32 // the event of each token
	// live is the transient memory after each token.
	live []int64
	// persist holds the events of the allocations taken for persistent: never freed, made before tail.
	persist []int32
}

// readTransient pairs allocations with their frees and builds the tokens. A block is freed where the program frees
// it (free_requested; free_completed in traces recorded without it). Frees after an OOM still pair (unwinding the
// failed step frees its activations), but the tokens stop at the OOM. A block never freed is persistent, unless
// allocated at or after event tail: a trace that ends inside an iteration (a dump in the middle of a step, an OOM
// handler that dumps before the exception unwinds) never frees that iteration's activations, which are transient
// all the same. Such blocks and those freed after the OOM get the token 0, which agrees with any alloc's.
func readTransient(trace []snapshot.TraceEntry, tail int) *transient {
	// One pass pairs every alloc before the OOM with its free, making a provisional entry for each of those allocs
	// and for each free before the OOM: ev is its event, mate its partner's entry (−1 while unpaired, −2 for an
	// alloc freed only after the OOM), delta its change of memory (the alloc's size, negated at the free). Two
	// thirds of the events is the most entries a trace gets where every free is recorded twice (requested and
	// completed), as PyTorch does since free_completed exists.
	n, guess := len(trace), 2*len(trace)/3+64
	ev, mate, delta := make([]int32, 0, guess), make([]int32, 0, guess), make([]int64, 0, guess)
	open := newAddrTable()
	lastFreed := uint64(0)
	for j := range trace {
		e := &trace[j]
		switch e.Action {
		case snapshot.ActionOOM:
			n = min(n, j+1)
		case snapshot.ActionAlloc:
			if j < n {
				open.put(e.Addr, int32(len(ev)))
				ev, mate, delta = append(ev, int32(j)), append(mate, -1), append(delta, e.Size)
			}
		case snapshot.ActionFreeRequested, snapshot.ActionFreeCompleted:
			if e.Action == snapshot.ActionFreeCompleted && e.Addr == lastFreed {
				continue // its free_requested came first (the usual order: no lookup)
			}
			k, ok := open.take(e.Addr)
			if !ok {
				continue
			}
			lastFreed = e.Addr
			if j >= n {
				mate[k] = -2
				continue
			}
			mate[k] = int32(len(ev))
			ev, mate, delta = append(ev, int32(j)), append(mate, k), append(delta, -delta[k])
		}
	}
	// Drop the persistent allocs and renumber: kept maps a provisional index to its token.
	kept := make([]int32, len(ev))
	var persist []int32
	m := 0
	for k := range ev {
		kept[k] = int32(m)
		switch {
		case mate[k] == -1 && int(ev[k]) >= tail:
			mate[k] = -2
		case mate[k] == -1:
			persist = append(persist, ev[k])
			continue
		}
		m++
	}
	// The tokens overwrite the provisional arrays from the front: token m is written once entry k ≥ m is read.
	c := &transient{trace: trace, n: n, tok: mate[:0], at: ev[:0], live: delta[:0], persist: persist}
	var cur int64
	for k := range ev {
		p, j, d := mate[k], ev[k], delta[k]
		if p == -1 {
			continue
		}
		cur += d
		dist := int32(0) // an alloc whose free the trace does not show
		if p >= 0 {
			dist = kept[p] - kept[k]
		}
		c.tok, c.at, c.live = append(c.tok, dist), append(c.at, j), append(c.live, cur)
	}
	return c
}

// event returns the event of token t, the end of the read trace past the last token.
func (c *transient) event(t int) int {
	if t >= len(c.at) {
		return c.n
	}
	return int(c.at[t])
}

// after returns where a stretch that starts with token t starts: after token t−1 and the free_completed events
// that follow it (a free's completion belongs with its request), so that what the trace does between two tokens
// without changing transient memory (allocating persistent blocks: the optimizer state, the last batch's input)
// belongs to what follows.
func (c *transient) after(t int) int {
	if t == 0 {
		return 0
	}
	j := c.event(t-1) + 1
	for j < c.n && c.trace[j].Action == snapshot.ActionFreeCompleted {
		j++
	}
	return j
}

// floors returns the tokens where transient memory starts to rise again after standing at a floor between two
// substantial peaks.
func (c *transient) floors() []int {
	m := len(c.live)
	if m < 3 {
		return nil
	}
	// The highest memory on each side of a valley before it gets back down to the valley's: to the left until
	// memory no higher, to the right until strictly lower, so that of two equal valleys (the swap of one input for
	// the next of its size) only the earlier has a whole iteration on both sides. Monotonic stacks whose entries
	// carry the highest memory among those they replaced.
	type entry struct{ v, mx int64 }
	type valley struct {
		t    int32
		left int64
	}
	// Only a free followed by an alloc can be the first token of a valley; their left sides are kept for the
	// pass from the right.
	var cand []valley
	st := make([]entry, 0, 64)
	var hi int64
	for t, v := range c.live {
		hi = max(hi, v)
		mx := int64(-1)
		for len(st) > 0 && st[len(st)-1].v > v {
			mx = max(mx, st[len(st)-1].mx)
			st = st[:len(st)-1]
		}
		st = append(st, entry{v, max(mx, v)})
		if mx > v && t+1 < m && c.live[t+1] > v {
			cand = append(cand, valley{int32(t), mx})
		}
	}
	if hi == 0 {
		return nil
	}
	var out []int
	st = st[:0]
	k := len(cand) - 1
	for t := m - 1; t > 0; t-- {
		v, mx := c.live[t], int64(-1)
		for len(st) > 0 && st[len(st)-1].v >= v {
			mx = max(mx, st[len(st)-1].mx)
			st = st[:len(st)-1]
		}
		closed := len(st) > 0
		st = append(st, entry{v, max(mx, v)})
		if k < 0 || int(cand[k].t) != t {
			continue
		}
		// Where memory never gets back below the valley, the trace ended inside the mountain on the right (a dump
		// in the middle of a step, an OOM): only the left one says how deep the valley is.
		peak := cand[k].left
		if closed {
			peak = min(peak, mx)
		}
		if peak-v >= hi/noiseShare && floorShare*v <= peak {
			out = append(out, t+1)
		}
		k--
	}
	slices.Reverse(out)
	return out
}

// piece is the stretch of tokens [t0, t1) between two floors, peak its highest transient memory.
type piece struct {
	t0, t1 int
	peak   int64
}

// pieces cuts the tokens at the floors. The first piece starts at its foot instead of the trace's start: after
// the token where transient memory last stood at its lowest before the piece's peak, so that the setup and its
// own transients stay out of it.
func (c *transient) pieces(cuts []int) []piece {
	bounds := append(append([]int{0}, cuts...), len(c.tok))
	out := make([]piece, 0, len(bounds)-1)
	for i := 0; i+1 < len(bounds); i++ {
		a, b := bounds[i], bounds[i+1]
		top := a
		for t := a; t < b; t++ {
			if c.live[t] > c.live[top] {
				top = t
			}
		}
		if i == 0 {
			// The trace starts without transient memory.
			for t := range top {
				if c.live[t] == 0 {
					a = t + 1
				}
			}
		}
		var peak int64
		if top < b {
			peak = c.live[top]
		}
		out = append(out, piece{t0: a, t1: b, peak: peak})
	}
	return out
}

// same reports whether two tokens agree: equal, or an alloc whose free the trace does not show against any alloc.
func same(x, y int32) bool { return x == y || x == 0 && y > 0 || y == 0 && x > 0 }

// Alignments agree tries.
const (
	alignStarts = 1 << iota
	alignEnds
)

// agree reports whether the token ranges a and b have at least minSimilarity of their tokens in common, aligned at
// their starts or at their ends (as align says) and shifted against each other by up to compareShift tokens (at
// most compareWindow tokens compared).
func (c *transient) agree(a0, a1, b0, b1, align int) bool {
	w := min(a1-a0, b1-b0, compareWindow)
	if w <= 0 {
		return false
	}
	need := int(math.Ceil(minSimilarity * float64(w)))
	for i, o := range [2][2]int{{a0, b0}, {a1 - w, b1 - w}} {
		if align&(1<<i) == 0 {
			continue
		}
		for s := 0; s <= 2*compareShift; s++ {
			sh := (s + 1) / 2 // 0, 1, −1, 2, −2, …: the likeliest shifts first
			if s%2 == 0 {
				sh = -sh
			}
			lo, hi := max(0, a0-o[0]-sh), min(w, a1-o[0]-sh)
			if hi-lo < need {
				continue
			}
			ta, tb := c.tok[o[0]+sh+lo:o[0]+sh+hi], c.tok[o[1]+lo:o[1]+hi]
			// Every sampleStride-th token first: where not even a quarter of those agree, half of all will
			// not either (short of an unlucky sample), and unrelated pieces are dismissed at a fraction of the cost.
			sampled, agreed := 0, 0
			for i := 0; i < len(ta); i += sampleStride {
				sampled++
				if same(ta[i], tb[i]) {
					agreed++
				}
			}
			if 4*agreed < sampled {
				continue
			}
			agreed, miss := 0, len(ta)-need // give up once more than miss tokens differ
			for i := range ta {
				if same(ta[i], tb[i]) {
					if agreed++; agreed >= need {
						return true
					}
				} else if miss--; miss < 0 {
					break
				}
			}
		}
	}
	return false
}

// similar reports whether two pieces run the same program: token counts within a quarter of each other and
// tokens that agree.
func (c *transient) similar(a, b piece) bool {
	la, lb := a.t1-a.t0, b.t1-b.t0
	if la == 0 || lb == 0 || 4*(max(la, lb)-min(la, lb)) > max(la, lb) {
		return false
	}
	return c.agree(a.t0, a.t1, b.t0, b.t1, alignStarts|alignEnds)
}

// prefixOf reports whether piece a, cut short by the end of the trace, starts the way ref does.
func (c *transient) prefixOf(a, ref piece) bool {
	la, lr := a.t1-a.t0, ref.t1-ref.t0
	if la < minPartialTokens || 4*la > 5*lr {
		return false
	}
	w := min(la, lr, compareWindow)
	return c.agree(a.t0, a.t0+w, ref.t0, ref.t0+w, alignStarts)
}

// repeat is a run of count iterations of g pieces each, the first starting at piece first.
type repeat struct{ first, count, g int }

// repeats returns every run of at least two iterations, trying iterations of 1 to maxGroup pieces, the runs that
// cover the most tokens first (among equal ones, fewer pieces per iteration first).
func (c *transient) repeats(ps []piece) []repeat {
	type cand struct {
		repeat
		tokens int
	}
	var out []cand
	for g := 1; g <= maxGroup; g++ {
		for i := 0; i+g < len(ps); {
			k := i // pieces i .. k−1 each repeat the program of the piece g later
			for k+g < len(ps) && c.similar(ps[k], ps[k+g]) {
				k++
			}
			if k == i {
				i++
				continue
			}
			// An iteration starts with its forward, the highest piece of its group: shift the run's phase there.
			// Every piece of all but the last iteration must repeat in the next one.
			phase := 0
			for p := 1; p < g; p++ {
				if ps[i+p].peak > ps[i+phase].peak {
					phase = p
				}
			}
			if first := i + phase; k-first >= g {
				n := 1 + (k-first)/g
				out = append(out, cand{repeat{first, n, g}, ps[first+n*g-1].t1 - ps[first].t0})
			}
			i = k
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].tokens > out[b].tokens })
	reps := make([]repeat, len(out))
	for k := range out {
		reps[k] = out[k].repeat
	}
	return reps
}

// periodic splits a trace that has neither stacks nor markers by its alloc/free pattern (see the top of this file),
// or leaves it without iterations when no training loop shows.
func (d *detector) periodic() {
	c := readTransient(d.trace, len(d.trace))
	sp, complete := c.split()
	if sp == nil {
		return
	}
	if last := sp[len(sp)-1]; last.end < len(c.tok) || c.heldAtEnd(sp) {
		// The trace may end inside one more iteration, or inside the last one found, whose blocks were then taken
		// for persistent: read it again with those of the last iteration on as transient.
		c2 := readTransient(d.trace, c.after(last.start))
		if sp2, complete2 := c2.split(); len(sp2) >= len(sp) {
			c, sp, complete = c2, sp2, complete2
		}
	}
	d.t.Iterations = d.t.Iterations[:0]
	// The setup runs to the first iteration's first token: persistent blocks allocated before it are the model's.
	d.t.Setup = phases.Span{Start: 0, End: c.event(sp[0].start)}
	for k, s := range sp {
		start, end := c.after(s.start), c.after(s.end)
		if k == 0 {
			start = d.t.Setup.End
		}
		if s.end == len(c.tok) {
			end = c.n
		}
		it := phases.Iteration{Index: k + 1, Span: phases.Span{Start: start, End: end}, Forward: phases.Span{Start: start, End: end},
			Backward: phases.NoSpan, Optimizer: phases.NoSpan, Complete: k+1 < len(sp) || complete}
		if s.bwd < s.end {
			bwd := c.event(s.bwd)
			it.Forward.End, it.Backward = bwd, phases.Span{Start: bwd, End: end}
		}
		if s.opt < s.end {
			opt := c.after(s.opt)
			it.Backward.End, it.Optimizer = opt, phases.Span{Start: opt, End: end}
		}
		d.t.Iterations = append(d.t.Iterations, it)
	}
	d.t.Source = "alloc/free pattern"
}

// persistent counts the allocations taken for persistent among events [lo, hi).
func (c *transient) persistent(lo, hi int) int {
	return sort.Search(len(c.persist), func(k int) bool { return int(c.persist[k]) >= hi }) -
		sort.Search(len(c.persist), func(k int) bool { return int(c.persist[k]) >= lo })
}

// heldAtEnd reports whether the last of iterations sp, which runs to the end of the trace, made more of the
// allocations taken for persistent than the one before it, beyond the next batch's input: what a step holds when
// the trace ends inside it.
func (c *transient) heldAtEnd(sp []split) bool {
	last, prev := sp[len(sp)-1], sp[len(sp)-2]
	return c.persistent(c.after(last.start), c.n) > c.persistent(c.after(prev.start), c.after(prev.end))+1
}

// split finds the iterations: the floors cut the tokens into pieces, and the runs of repeating pieces, the longest
// first, are tried until one has the shape of training.
func (c *transient) split() ([]split, bool) {
	ps := c.pieces(c.floors())
	for _, rep := range c.repeats(ps) {
		if sp, complete := c.iterations(ps, rep); sp != nil {
			return sp, complete
		}
	}
	return nil, false
}

// split is one iteration's phase boundaries in tokens: forward [start, bwd), backward [bwd, opt), optimizer
// [opt, end); fb ends the piece that holds forward and backward.
type split struct{ start, bwd, opt, end, fb int }

// iterations turns a run of repeating pieces into iterations with their phases, or returns nil when they are not
// training steps. complete is false when the trace ends inside the last one.
func (c *transient) iterations(ps []piece, rep repeat) (sp []split, complete bool) {
	// The shape of the first few iterations first: a run of many short pieces that are no training steps (one
	// small block allocated and freed over and over) is dismissed before all its iterations are placed.
	probe := make([]split, min(rep.count, 3))
	for k := range probe {
		p := rep.first + k*rep.g
		probe[k] = split{start: ps[p].t0, end: ps[p+rep.g-1].t1, fb: ps[p].t1}
	}
	c.phases(probe, true)
	for _, s := range probe {
		if !c.trainingShape(s) {
			return nil, false
		}
	}
	for k := range rep.count {
		p := rep.first + k*rep.g
		// Forward and backward lie in an iteration's first piece, its highest; the rest of an iteration of
		// several pieces is the optimizer step's.
		sp = append(sp, split{start: ps[p].t0, end: ps[p+rep.g-1].t1, fb: ps[p].t1})
	}
	// The first iteration may differ from the others more than they differ among themselves: it creates what the
	// later ones reuse (gradients kept by zero_grad(set_to_none=False), caches), which leaves its tokens apart from
	// theirs. The group before the run is the first iteration if it is about as long and has the shape of one.
	if p := rep.first - rep.g; p >= 0 {
		first := split{start: ps[p].t0, end: ps[rep.first-1].t1, fb: ps[p].t1}
		ref := sp[0]
		if l, lr := first.end-first.start, ref.end-ref.start; 4*(max(l, lr)-min(l, lr)) <= lr {
			pair := []split{first, ref}
			c.phases(pair, true)
			if c.trainingShape(pair[0]) {
				sp = append([]split{first}, sp...)
			}
		}
	}
	complete = true
	if next := rep.first + rep.count*rep.g; next < len(ps) && c.prefixOf(ps[next], ps[rep.first+(rep.count-1)*rep.g]) {
		// The trace ends (or runs out of memory) inside one more iteration.
		end := ps[min(next+rep.g, len(ps))-1].t1
		sp = append(sp, split{start: ps[next].t0, end: end, fb: ps[next].t1})
		complete = false
	} else if last, prev := &sp[len(sp)-1], sp[len(sp)-2]; len(c.tok)-last.start < 2*(prev.end-prev.start) &&
		last.end-last.start < prev.end-prev.start-max(8, (prev.end-prev.start)/64) {
		// The last iteration holds fewer tokens than the one before it, and what follows is less than another
		// one: the trace ends inside it, in the backward or the optimizer step, whose last blocks may have made
		// a piece of their own (a varying sequence length changes an iteration's count by under 1 %; zero_grad
		// alone frees a block per parameter).
		last.end = len(c.tok)
		complete = false
	}
	for k := 0; k+1 < len(sp); k++ {
		sp[k].end = sp[k+1].start
	}
	c.phases(sp, complete)
	for k, s := range sp {
		if (k+1 < len(sp) || complete) && !c.trainingShape(s) {
			return nil, false
		}
	}
	return sp, complete
}

// phases places the backward at the highest transient memory of each iteration's forward-and-backward piece:
// the forward's activations are all held there, and the backward's first gradients (a few requests after its
// start) have just been added. Where that peak falls far from where it falls in the other iterations — in a first
// iteration of short sequences, the optimizer's first step outweighs the activations — the forward's length in
// tokens, the same in every iteration of one program, places it instead. See optimizerStart for the optimizer.
// The phases of an iteration the trace ends in (complete false for the last) come from those lengths alone: the
// backward and the optimizer step are there if the trace gets as far as they start in the others; bwd or opt is
// end where not.
func (c *transient) phases(sp []split, complete bool) {
	whole := len(sp)
	if !complete {
		whole--
	}
	bwd := make([]int, whole)
	for k := range whole {
		s := &sp[k]
		s.bwd = s.start
		for t := s.start; t < s.fb; t++ {
			if c.live[t] > c.live[s.bwd] {
				s.bwd = t
			}
		}
		bwd[k] = s.bwd - s.start
	}
	med := median(bwd)
	opt := make([]int, whole)
	for k := range whole {
		s := &sp[k]
		if d := bwd[k] - med; phaseSlack*max(d, -d) > s.end-s.start && s.start+med < s.fb {
			s.bwd = s.start + med
		}
		s.opt = c.optimizerStart(*s)
		opt[k] = s.opt - s.start
	}
	if !complete {
		s := &sp[whole]
		s.bwd, s.opt = min(s.start+med, s.end), min(s.start+median(opt), s.end)
	}
}

// median returns the middle value of xs, the lower one of an even count: a peak out of place lies after the
// forward (in the first optimizer step), never before it.
func median(xs []int) int {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[(len(s)-1)/2]
}

// optimizerStart returns the token where the optimizer phase of iteration s begins, s.end when it shows none.
// The iteration's last allocation of a block it frees again ends the optimizer step (what follows only frees:
// zero_grad). Before it, once the backward has released the last block the forward held, only the gradients
// remain: the lowest transient memory from there on is the backward's end, and the optimizer's temporaries rise
// from it. Blocks the forward held that are freed only after that last allocation (outputs the loop keeps until
// the step is over) do not count; and where nothing is allocated after the low, the optimizer step allocates
// nothing and does not show.
func (c *transient) optimizerStart(s split) int {
	last := -1
	for t := s.end - 1; t >= s.bwd; t-- {
		if d := int(c.tok[t]); d > 0 && t+d < s.end {
			last = t
			break
		}
	}
	if last < 0 {
		return s.end
	}
	from := s.bwd
	for t := s.start; t < s.bwd; t++ {
		if d := int(c.tok[t]); d > 0 && t+d >= s.bwd && t+d < last {
			from = max(from, t+d)
		}
	}
	low := from
	for t := from; t <= last; t++ {
		if c.live[t] < c.live[low] {
			low = t
		}
	}
	if low >= last {
		return s.end
	}
	return low + 1
}

// trainingShape reports whether iteration s looks like a training step rather than a forward alone (an inference
// loop, a model run one layer at a time): its forward holds blocks for the backward (at least two), and the
// backward
//   - requests at least as many blocks as the forward did: every operation the forward recorded for autograd has a
//     backward that allocates the gradient of each input that needs one, and weights add theirs;
//   - releases the held blocks at its own pace, one after another with gradients allocated in between, at least
//     half of them: the tail of a forward frees its intermediates in bursts, after the one operation that used
//     them last.
//
// Measured: the backwards of the shared H200 runs and of a public CNN request 1.4 to 1.8 times the forward's blocks
// and pace 63 to 68 % of their releases (the synthetic loop of internal/traingen 1.2 and 80 %); a layer's forward
// in inference requests a tenth of the blocks of its first part, and the forward-only loops of the public
// snapshots whose tail requests more pace 25 % or less.
func (c *transient) trainingShape(s split) bool {
	sh := c.shapeOf(s)
	return sh.held >= 2 && sh.post >= sh.pre && 2*sh.paced >= sh.held
}

// shape counts what tells a training step from a forward alone, over its forward-and-backward piece.
type shape struct {
	pre, post int // allocations before and after the backward's start
	held      int // blocks allocated before the backward's start and freed after it
	paced     int // held blocks freed after an allocation made since the previous held block's free
}

func (c *transient) shapeOf(s split) shape {
	// Allocations of persistent blocks count too: the first backward creates the gradients that
	// zero_grad(set_to_none=False) keeps, a first forward its lazily built workspaces.
	sh := shape{pre: c.persistent(c.event(s.start), c.after(s.bwd)), post: c.persistent(c.after(s.bwd), c.after(s.fb))}
	allocated := false
	for t := s.start; t < s.fb; t++ {
		d := int(c.tok[t])
		switch {
		case d >= 0 && t < s.bwd:
			sh.pre++
		case d >= 0:
			sh.post++
			allocated = true
		case t >= s.bwd && t+d >= s.start && t+d < s.bwd:
			sh.held++
			if allocated {
				sh.paced++
			}
			allocated = false
		}
	}
	return sh
}
