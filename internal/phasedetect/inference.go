package phasedetect

import (
	"strings"

	"github.com/memscan/memscan/phases"
	"github.com/memscan/memscan/snapshot"
)

// generateLoops are the functions of a generation library's decoding loop (Hugging Face transformers'
// generation/utils.py: generate and its strategies; _prefill since transformers 5).
var generateLoops = map[string]bool{"generate": true, "_sample": true, "_greedy_search": true, "_beam_search": true,
	"_beam_sample": true, "_assisted_decoding": true, "_contrastive_search": true, "_dola_decoding": true, "_prefill": true}

// inGenerate reports whether an allocation's stack runs inside a generation loop.
func inGenerate(s *snapshot.Stack) bool {
	if s == nil {
		return false
	}
	for i := range s.Frames {
		f := &s.Frames[i]
		if generateLoops[f.Name] && strings.Contains(strings.ReplaceAll(f.Filename, `\`, "/"), "/generation/") {
			return true
		}
	}
	return false
}

// inference splits an inference trace by its generate calls: each call (a run of allocations made inside the
// generation loop) is an iteration whose prefill runs from the first model forward in it to the loop's first own
// allocation after that forward (logits processing, the next step's inputs), and whose decode runs from there to
// the call's end; model forwards outside any generate call are iterations of a forward only. A trace with no
// generate call keeps the iterations it has.
func (d *detector) inference() {
	trace, n := d.trace, len(d.trace)
	type call struct{ start, prefill, decode, end int }
	var calls []call
	cur := call{start: -1, prefill: -1, decode: -1}
	lastGen := -1
	flush := func() {
		if cur.start >= 0 && cur.prefill >= 0 {
			cur.end = lastGen + 1
			calls = append(calls, cur)
		}
		cur = call{start: -1, prefill: -1, decode: -1}
	}
	// Whether each stack (by its index) is inside a generate call: 1 + 0 or 1, 0 when not worked out yet.
	inGen := make([]int8, len(d.stacks))
	for j := range trace {
		e := &trace[j]
		if e.Action != snapshot.ActionAlloc {
			continue
		}
		gen := false
		if r := int(e.Stack); r > 0 && r < len(inGen) {
			if inGen[r] == 0 {
				inGen[r] = 1
				if inGenerate(d.stacks[r]) {
					inGen[r] = 2
				}
			}
			gen = inGen[r] == 2
		}
		if !gen {
			flush()
			continue
		}
		if cur.start < 0 {
			cur.start = j
		}
		switch {
		case d.kind(e) == kindModule && cur.prefill < 0:
			cur.prefill = j
		case d.kind(e) != kindModule && cur.prefill >= 0 && cur.decode < 0:
			cur.decode = j
		}
		lastGen = j
	}
	flush()
	if len(calls) == 0 {
		return
	}
	end := n
	if d.t.OOM >= 0 {
		end = d.t.OOM + 1
	}
	var its []phases.Iteration
	add := func(it phases.Iteration) {
		it.Index = len(its) + 1
		its = append(its, it)
	}
	// forward is the first model forward's allocation in [from, to) (outside any generate call), to when none.
	forward := func(from, to int) int {
		for j := from; j < to; j++ {
			e := &trace[j]
			if e.Action != snapshot.ActionAlloc {
				continue
			}
			if d.kind(e) == kindModule {
				return j
			}
		}
		return to
	}
	for i, c := range calls {
		next := end
		if i+1 < len(calls) {
			next = calls[i+1].start
		}
		pre := phases.Span{Start: c.prefill, End: c.end}
		dec := phases.NoSpan
		if c.decode >= 0 {
			pre.End, dec = c.decode, phases.Span{Start: c.decode, End: c.end}
		}
		add(phases.Iteration{Span: phases.Span{Start: c.start, End: c.end}, Forward: phases.Span{Start: c.prefill, End: c.end},
			Backward: phases.NoSpan, Optimizer: phases.NoSpan, Complete: c.end < end, Prefill: &pre, Decode: &dec})
		// What follows the call up to the next one is its tail (frees) up to a forward of the model's own, which is
		// an iteration of its own to the next call.
		f := forward(c.end, next)
		its[len(its)-1].Span.End = f
		if f < next {
			add(phases.Iteration{Span: phases.Span{Start: f, End: next}, Forward: phases.Span{Start: f, End: next},
				Backward: phases.NoSpan, Optimizer: phases.NoSpan, Complete: next < end})
		}
	}
	d.t.Iterations = its
	d.t.Setup = phases.Span{Start: 0, End: calls[0].start}
	if calls[0].start == 0 {
		d.t.Setup = phases.NoSpan
	}
	d.t.Source += " + generate calls"
}
