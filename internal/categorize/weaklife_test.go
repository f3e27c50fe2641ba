package categorize

import (
	"testing"

	"github.com/memscan/memscan/internal/components"
	"github.com/memscan/memscan/phases"
)

// TestWeakLifetimeWithOperatorCategory: a weak lifetime (kept from the setup, or kept from a forward with no
// backward) never overrules a stack's category, but it still gives the component when the stack names an operator
// rather than a role. A linear layer's file allocating before the first forward what lives to the end holds that
// layer's weight; what a forward without backward keeps (DataParallel's scattered inputs, a collate's batch: 240
// MiB on each of two GPUs of a public torch_geometric snapshot) is activation memory, not "other". Role categories
// keep their own component under a weak lifetime.
func TestWeakLifetimeWithOperatorCategory(t *testing.T) {
	sp := func(a, b int) phases.Span { return phases.Span{Start: a, End: b} }
	// Setup [0,10), one forward [10,20) with no backward (inference, or a step that failed in its forward).
	tl := &phases.Timeline{Events: 20, Setup: sp(0, 10), OOM: -1, Iterations: []phases.Iteration{
		{Index: 1, Span: sp(10, 20), Forward: sp(10, 20), Backward: phases.NoSpan, Optimizer: phases.NoSpan}}}
	setupKept, forwardKept := Life{Start: 2, End: 20}, Life{Start: 12, End: 20}
	tests := []struct {
		name     string
		category string
		life     Life
		lifetime string
		comp     components.Component
	}{
		{"linear file kept from the setup", LinearMatMul, setupKept, LifeSetupKept, components.Weights},
		{"embedding kept from the setup", Embedding, setupKept, LifeSetupKept, components.Weights},
		{"scatter kept from a forward", Communication, forwardKept, LifeForwardKept, components.Activations},
		{"collated batch kept from a forward", DataInput, forwardKept, LifeForwardKept, components.Activations},
		// Roles keep their component: state the optimizer created eagerly, a gradient buffer made at setup.
		{"optimizer state kept from the setup", OptimizerState, setupKept, LifeSetupKept, components.OptimizerStates},
		{"gradient buffer kept from the setup", Gradient, setupKept, LifeSetupKept, components.Gradients},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := Attribute(Decision{Category: tc.category, Rule: "some-rule", Site: "x.py:1:f"}, tc.life, tl)
			if a.Category != tc.category || a.DecidedBy != DecidedByStack || a.Lifetime != tc.lifetime || a.Component != tc.comp {
				t.Errorf("got %s/%s by %q (%q), want %s/%s by the stack (%q)", a.Category, a.Component, a.DecidedBy, a.Lifetime,
					tc.category, tc.comp, tc.lifetime)
			}
		})
	}
}
