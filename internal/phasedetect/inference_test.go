package phasedetect

import (
	"testing"

	"github.com/memscan/memscan/internal/snapbuild"
	"github.com/memscan/memscan/phases"
	"github.com/memscan/memscan/snapshot"
)

// generateTrace records what Hugging Face's generate does, with stacks="python": the weights (setup), generate's
// own preparation, the prompt's forward inside _prefill, the loop's bookkeeping, two decode steps of one forward
// each, then a forward outside generate. gen says whether the stacks show the generation loop's frames.
func generateTrace(gen bool) *snapshot.Snapshot {
	const hf = "/venv/lib/python3.12/site-packages/transformers/generation/utils.py:"
	loop := []string{hf + "3002:_sample", hf + "2802:generate", "/home/user/run.py:20:main"}
	if !gen {
		loop = []string{"/home/user/run.py:20:main"}
	}
	fwd := func(extra ...string) *snapshot.Stack {
		return snapbuild.Stack(append([]string{"/home/user/model.py:50:forward", "/venv/lib/python3.12/site-packages/torch/nn/modules/module.py:1750:_call_impl"}, extra...)...)
	}
	weights := snapbuild.Stack("/venv/lib/python3.12/site-packages/torch/nn/modules/linear.py:106:__init__", "/home/user/run.py:10:main")
	prep := snapbuild.Stack(append([]string{hf + "2194:_prepare_special_tokens"}, loop[1:]...)...)
	prefill := fwd(append([]string{hf + "4109:_prefill"}, loop...)...)
	book := snapbuild.Stack(append([]string{hf + "1109:_update_model_kwargs_for_generation"}, loop...)...)
	decode := fwd(loop...)
	plain := fwd("/home/user/run.py:30:main")
	if !gen {
		prep, prefill, book = snapbuild.Stack("/home/user/run.py:19:main"), decode, snapbuild.Stack("/home/user/run.py:21:main")
	}
	b := snapbuild.NewSnap(1)
	// Events without times, as the fixture was written: the builder numbers only those that have none.
	event := func(e snapbuild.Entry) {
		e.HasTime = true
		b.Event(0, e)
		b.S.DeviceTraces[0][len(b.S.DeviceTraces[0])-1].HasTime = false
	}
	addr := uint64(0x1000)
	alloc := func(st *snapshot.Stack) {
		event(snapbuild.Ev(snapshot.ActionAlloc, addr, 512, st))
		addr += 512
	}
	alloc(weights)                                                            // 0: setup
	alloc(prep)                                                               // 1: generate begins
	alloc(prefill)                                                            // 2: prefill
	alloc(prefill)                                                            // 3
	alloc(book)                                                               // 4: decode begins
	alloc(decode)                                                             // 5
	alloc(book)                                                               // 6
	alloc(decode)                                                             // 7
	alloc(book)                                                               // 8: generate's last allocation
	b.Event(0, snapbuild.Ev(snapshot.ActionFreeCompleted, 0x1200, 512, prep)) // 9: generate's tail
	alloc(plain)                                                              // 10: a forward outside generate
	alloc(plain)                                                              // 11
	return b.S
}

// TestInferenceGenerateCalls: a generate call is an iteration whose prefill runs from the prompt's forward to the
// loop's first bookkeeping and whose decode runs to the call's last allocation; the free after it is its tail, and
// the forward after it an iteration of its own. Summary.json's form is checked in analyze.
func TestInferenceGenerateCalls(t *testing.T) {
	s := generateTrace(true)
	tl := Detect(s.DeviceTraces[0], s.TraceStacks, nil, 0)
	if len(tl.Iterations) != 2 || tl.Setup != (phases.Span{Start: 0, End: 1}) {
		t.Fatalf("setup %+v, iterations %+v", tl.Setup, tl.Iterations)
	}
	g, f := tl.Iterations[0], tl.Iterations[1]
	if g.Span != (phases.Span{Start: 1, End: 10}) || g.Prefill == nil || *g.Prefill != (phases.Span{Start: 2, End: 4}) ||
		*g.Decode != (phases.Span{Start: 4, End: 9}) || !g.Complete {
		t.Errorf("generate call %+v prefill %+v decode %+v", g, g.Prefill, g.Decode)
	}
	if f.Prefill != nil || f.Span != (phases.Span{Start: 10, End: 12}) || f.Forward != (phases.Span{Start: 10, End: 12}) || f.Complete {
		t.Errorf("forward after generate %+v", f)
	}
	for j, want := range map[int]phases.Phase{2: phases.Prefill, 3: phases.Prefill, 5: phases.Decode, 8: phases.Decode, 11: phases.Forward} {
		if _, ph := tl.At(j); ph != want {
			t.Errorf("event %d in %s, want %s", j, ph, want)
		}
	}
}

// TestInferenceWithoutGenerate: the same allocations without the generation loop's frames are one forward, with
// no prefill or decode.
func TestInferenceWithoutGenerate(t *testing.T) {
	s := generateTrace(false)
	tl := Detect(s.DeviceTraces[0], s.TraceStacks, nil, 0)
	for _, it := range tl.Iterations {
		if it.Prefill != nil || it.Decode != nil {
			t.Errorf("prefill or decode without generate: %+v", it)
		}
	}
	if len(tl.Iterations) == 0 || tl.Iterations[0].Forward.Empty() {
		t.Errorf("iterations %+v, want a forward", tl.Iterations)
	}
}
