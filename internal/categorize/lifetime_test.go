package categorize

import (
	"testing"

	"github.com/memscan/memscan/internal/components"
	"github.com/memscan/memscan/phases"
	"github.com/memscan/memscan/snapshot"
)

// TestAttributeLifetimes walks every lifetime rule on a hand-made timeline of two iterations:
// setup [0,10), iteration 1: forward [10,20) backward [20,30) optimizer [30,40); iteration 2: [40,50) [50,60) [60,70).
func TestAttributeLifetimes(t *testing.T) {
	sp := func(a, b int) phases.Span { return phases.Span{Start: a, End: b} }
	tl := &phases.Timeline{Events: 70, Setup: sp(0, 10), OOM: -1, Iterations: []phases.Iteration{
		{Index: 1, Span: sp(10, 40), Forward: sp(10, 20), Backward: sp(20, 30), Optimizer: sp(30, 40), Complete: true},
		{Index: 2, Span: sp(40, 70), Forward: sp(40, 50), Backward: sp(50, 60), Optimizer: sp(60, 70), Complete: true},
	}}
	unknown := Decision{Category: Unknown, Reason: ReasonNoStack, FrameIndex: -1}
	engine := Decision{Category: Gradient, Rule: "autograd-engine-native", Pass: "native"}
	adam := Decision{Category: OptimizerState, Rule: "torch-optim", Site: "adamw.py:1:_init_group"}
	matmul := Decision{Category: LinearMatMul, Rule: "matmul-functions", Site: "model.py:3:forward"}
	kv := Decision{Category: KVCache, Rule: "hf-cache-utils"}
	tests := []struct {
		name      string
		d         Decision
		life      Life
		cat       string
		comp      components.Component
		decidedBy string
		rule      string
	}{
		{"weights kept from setup", unknown, Life{2, 70}, Parameters, components.Weights, DecidedByLifetime, LifeSetupKept},
		{"setup input freed in iteration 2", unknown, Life{3, 45}, Unknown, components.Other, "", LifeInconclusive},
		{"saved activation", unknown, Life{12, 25}, Activation, components.Activations, DecidedByLifetime, LifeSavedForBackward},
		{"matmul output saved: op category kept", matmul, Life{12, 25}, LinearMatMul, components.Activations, DecidedByStack, LifeSavedForBackward},
		{"matmul transient", matmul, Life{12, 13}, LinearMatMul, components.Temporaries, DecidedByStack, LifeForwardTransient},
		{"forward transient, no stack", unknown, Life{12, 13}, Temporary, components.Temporaries, DecidedByLifetime, LifeForwardTransient},
		{"activation gradient from the engine", engine, Life{21, 22}, Temporary, components.Temporaries, DecidedByLifetime, LifeBackwardTransient},
		{"parameter gradient to zero_grad", unknown, Life{22, 35}, Gradient, components.Gradients, DecidedByLifetime, LifeKeptAfterBackward},
		{"parameter gradient freed next iteration", engine, Life{22, 42}, Gradient, components.Gradients, DecidedByStack, LifeKeptAfterBackward},
		{"optimizer state", adam, Life{31, 70}, OptimizerState, components.OptimizerStates, DecidedByStack, LifeOptimizerKept},
		{"foreach scratch", adam, Life{31, 33}, Temporary, components.Temporaries, DecidedByLifetime, LifeOptimizerTransient},
		{"KV cache stays KV cache", kv, Life{12, 70}, KVCache, components.KVCache, DecidedByStack, LifeInconclusive},
		{"live before the trace", unknown, Life{-1, 70}, Parameters, components.Weights, DecidedByLifetime, LifeSetupKept},
		// Kept from the setup is weak: an optimizer that creates its state eagerly stays optimizer state.
		{"optimizer state created before the first forward", adam, Life{2, 70}, OptimizerState, components.OptimizerStates, DecidedByStack, LifeSetupKept},
		{"unmatched stack kept from the setup", Decision{Category: Unknown, Reason: ReasonNoMatch, Site: "x.py:1:f"}, Life{2, 70}, Parameters, components.Weights, DecidedByLifetime, LifeSetupKept},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := Attribute(tc.d, tc.life, tl)
			if a.Category != tc.cat || a.Component != tc.comp || a.DecidedBy != tc.decidedBy || a.Lifetime != tc.rule {
				t.Errorf("got %s/%s by %q (%q), want %s/%s by %q (%q)", a.Category, a.Component, a.DecidedBy, a.Lifetime,
					tc.cat, tc.comp, tc.decidedBy, tc.rule)
			}
		})
	}
	// Without a timeline the stack alone decides and the component follows the category.
	if a := Attribute(adam, Life{31, 33}, nil); a.Category != OptimizerState || a.Component != components.OptimizerStates || a.DecidedBy != DecidedByStack {
		t.Errorf("no timeline: %+v", a)
	}
	// An OOM at event 15 ends a forward: what the unwinding frees afterwards was live when the step failed.
	none := phases.Span{Start: -1, End: -1}
	oom := &phases.Timeline{Events: 20, Setup: sp(0, 10), OOM: 15, Iterations: []phases.Iteration{
		{Index: 1, Span: sp(10, 16), Forward: sp(10, 16), Backward: none, Optimizer: none}}}
	if a := Attribute(unknown, Life{12, 17}, oom); a.Lifetime != LifeForwardKept || a.Component != components.Activations {
		t.Errorf("freed after the OOM: %+v", a)
	}
}

// TestKVCacheRules: Hugging Face's cache_utils and the serving engines' pools land in KV Cache.
func TestKVCacheRules(t *testing.T) {
	r := Default()
	for _, st := range [][]snapshot.Frame{
		{{Filename: "/venv/lib/python3.12/site-packages/transformers/cache_utils.py", Line: 146, Name: "update"},
			{Filename: "/venv/lib/python3.12/site-packages/transformers/models/llama/modeling_llama.py", Line: 260, Name: "forward"}},
		{{Filename: "/venv/lib/python3.12/site-packages/vllm/worker/cache_engine.py", Line: 80, Name: "_allocate_kv_cache"}},
		{{Filename: "/srv/app.py", Line: 9, Name: "init_cache"}},
	} {
		if d := r.Decide(st); d.Category != KVCache {
			t.Errorf("%v: %s (%s), want KV Cache", st[0], d.Category, d.Rule)
		}
	}
}
