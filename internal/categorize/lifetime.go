package categorize

import (
	"github.com/memscan/memscan/internal/components"
	"github.com/memscan/memscan/phases"
)

// What decided an attribution's category.
const (
	DecidedByStack    = "stack"
	DecidedByLifetime = "lifetime"
	// DecidedByLoss is the loss's own pattern in a trace: the logits by their size beside the cross-entropy's
	// tensors, its gradients by their size and place at the start of the backward (internal/detect).
	DecidedByLoss = "loss pattern"
)

// Lifetime rule names, recorded on every attribution the lifetime informed.
const (
	LifeSetupKept          = "setup-kept"          // allocated before the first forward, alive through every iteration
	LifeSavedForBackward   = "saved-for-backward"  // allocated in forward, freed in the same iteration's backward
	LifeForwardTransient   = "forward-transient"   // allocated and freed within one forward
	LifeForwardKept        = "forward-kept"        // allocated in a forward with no backward after it (inference, OOM)
	LifeBackwardTransient  = "backward-transient"  // allocated and freed within one backward
	LifeKeptAfterBackward  = "kept-after-backward" // allocated in backward, alive until the optimizer or zero_grad
	LifeOptimizerTransient = "optimizer-transient" // allocated and freed within one optimizer phase
	LifeOptimizerKept      = "optimizer-kept"      // allocated in an optimizer phase and kept past it
	LifeInconclusive       = ""                    // the lifetime does not tell the role
)

// Life is what a trace says about one allocation: it was live after events Start..End−1 of the device's trace;
// Start −1 means live before the first recorded event, End ≥ the timeline's event count still live at the end.
type Life struct {
	Start, End int
}

// Attribution is one allocation's category and component, and what decided them.
type Attribution struct {
	Category  string
	Component components.Component
	// DecidedBy says whether a stack rule or the lifetime chose Category.
	DecidedBy string
	// Rule is the deciding stack rule's name (empty when no stack rule matched).
	Rule string
	// Lifetime is the lifetime rule that matched (LifeInconclusive when none did); it decides Component whenever
	// it is set, and Category when the stack is missing or names only the generic machinery.
	Lifetime string
	Site     string
	// AllocPhase is the phase the allocation was made in (None without a timeline). The iterations and the
	// phase of the free, which the lifetime rules read too, are left to Timeline.At: kept here they would make
	// nearly every block's attribution distinct, where a trace of millions of blocks has a few thousand.
	AllocPhase phases.Phase
}

// lifecycleCategories name a role in the training step rather than an operator. A stack rule that lands in one of
// them only says which machinery allocated (autograd's engine, the optimizer's code, a module's __init__), not what
// the memory is: autograd's engine allocates activation gradients as well as parameter gradients, and a foreach
// optimizer step allocates scratch as well as state. Where the lifetime is conclusive it decides among them.
var lifecycleCategories = map[string]bool{
	Gradient: true, OptimizerState: true, Parameters: true, Autograd: true, Temporary: true, Unknown: true,
}

// Lifecycle reports whether category names a role in the training step (see lifecycleCategories) rather than
// an operator: such a decision says which machinery allocated, and other evidence may say what the memory is.
func Lifecycle(category string) bool { return lifecycleCategories[category] }

// lifetimeVerdict applies the lifetime rules: the category and component the lifetime implies, and the rule name
// (LifeInconclusive when it implies nothing).
func lifetimeVerdict(a *Attribution, life Life, tl *phases.Timeline) (string, components.Component, string) {
	n := len(tl.Iterations)
	// What is freed after an out-of-memory error is freed by the exception unwinding: it was live when the step
	// failed, which is all its lifetime says.
	aliveAtEnd := life.End >= tl.Events || tl.OOM >= 0 && life.End > tl.OOM
	ai, ap := tl.At(life.Start)
	fi, fp := n, phases.None
	if !aliveAtEnd {
		fi, fp = tl.At(life.End)
	}
	a.AllocPhase = ap
	// An inference iteration's prefill and decode are forwards to the lifetime rules.
	if ap.IsForward() {
		ap = phases.Forward
	}
	if fp.IsForward() {
		fp = phases.Forward
	}
	sameIter := fi == ai && !aliveAtEnd
	switch ap {
	case phases.Setup:
		if aliveAtEnd {
			return Parameters, components.Weights, LifeSetupKept
		}
	case phases.Forward:
		switch {
		case sameIter && fp == phases.Backward:
			return Activation, components.Activations, LifeSavedForBackward
		case sameIter && fp == phases.Forward:
			return Temporary, components.Temporaries, LifeForwardTransient
		case aliveAtEnd && tl.Iterations[ai].Backward.Empty():
			return Activation, components.Activations, LifeForwardKept
		}
	case phases.Backward:
		switch {
		case sameIter && fp == phases.Backward:
			return Temporary, components.Temporaries, LifeBackwardTransient
		case sameIter && fp == phases.Optimizer, fi > ai:
			return Gradient, components.Gradients, LifeKeptAfterBackward
		}
	case phases.Optimizer:
		if sameIter && fp == phases.Optimizer {
			return Temporary, components.Temporaries, LifeOptimizerTransient
		}
		if fi > ai {
			return OptimizerState, components.OptimizerStates, LifeOptimizerKept
		}
	}
	return "", "", LifeInconclusive
}

// CategoryComponent is the component a category implies when no lifetime says more.
func CategoryComponent(category string) components.Component {
	switch category {
	case Parameters, FSDP:
		return components.Weights
	case Gradient:
		return components.Gradients
	case OptimizerState:
		return components.OptimizerStates
	case KVCache:
		return components.KVCache
	case Temporary, LossLogits:
		return components.Temporaries
	case Communication, DataInput, Unknown:
		return components.Other
	}
	// Operator categories (Attention, Linear/MatMul, ...) hold forward results, mostly kept for backward.
	return components.Activations
}

// weakLifetime marks the lifetime rules that only say "kept from before the first forward" or "kept from a
// forward with no backward": they place memory no stack rule claimed, but do not overrule one.
var weakLifetime = map[string]bool{LifeSetupKept: true, LifeForwardKept: true}

// Attribute combines a stack decision with the allocation's lifetime on the device's timeline (nil: no phases
// known):
//   - a stack with no matching rule (Unknown) takes the lifetime's category and component;
//   - a stack rule that names only lifecycle machinery (see lifecycleCategories) yields to a lifetime that tells
//     transient from kept (the autograd engine's activation gradients become Temporary, a foreach optimizer's
//     scratch too); the weak rules (weakLifetime) never overrule a stack;
//   - otherwise the stack keeps the category, and the lifetime still gives the component, except where the stack
//     names a role (lifecycle categories, the KV cache) and the lifetime is weak.
func Attribute(d Decision, life Life, tl *phases.Timeline) Attribution {
	a := Attribution{Category: d.Category, Component: CategoryComponent(d.Category), DecidedBy: DecidedByStack, Rule: d.Rule,
		Site: d.Site}
	if d.Category == Unknown {
		a.DecidedBy = ""
	}
	if tl == nil {
		return a
	}
	cat, comp, rule := lifetimeVerdict(&a, life, tl)
	a.Lifetime = rule
	weak := weakLifetime[rule]
	switch {
	case rule == LifeInconclusive || d.Category == KVCache:
	case d.Category == Unknown || lifecycleCategories[d.Category] && !weak && cat != d.Category:
		a.Category, a.Component, a.DecidedBy = cat, comp, DecidedByLifetime
	case !weak || !lifecycleCategories[d.Category]:
		a.Component = comp
	}
	return a
}
