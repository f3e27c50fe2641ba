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

// LifeClass is all the lifetime rules read of one allocation's lifetime on a timeline: the phases of its alloc
// and free and how the iterations of the two relate. Allocations of one stack and one class get the same
// attribution, so a trace of millions of blocks is attributed once per (stack, class).
type LifeClass struct {
	// Timeline is false when no phases are known (no lifetime rule applies).
	Timeline bool
	// Alloc is the phase of the alloc; Free that of the free (None when alive at the end), an inference prefill
	// or decode read as a forward.
	Alloc, Free phases.Phase
	// AliveAtEnd: still live at the end of the trace, or freed by an out-of-memory error's unwinding.
	AliveAtEnd bool
	// SameIteration: freed in the iteration it was allocated in (or both outside every iteration).
	SameIteration bool
	// FreedLater: freed in a later iteration than it was allocated in, or alive at the end.
	FreedLater bool
	// NoBackward: allocated in a forward whose iteration has no backward, and alive at the end.
	NoBackward bool
}

// ClassifyLife returns the class of life on tl (nil: no phases known).
func ClassifyLife(life Life, tl *phases.Timeline) LifeClass {
	if tl == nil {
		return LifeClass{}
	}
	aliveAtEnd := endsAlive(life, tl)
	ai, ap := tl.At(life.Start)
	fi, fp := len(tl.Iterations), phases.None
	if !aliveAtEnd {
		fi, fp = tl.At(life.End)
	}
	return lifeClass(tl, aliveAtEnd, ai, ap, fi, fp)
}

// LifeClassifier classifies the lifetimes of one timeline's allocations, asked in trace order (a replay's
// elements): each end of a lifetime is placed by its own phases.Cursor, so that neither searches every iteration
// again. Its classes are ClassifyLife's.
type LifeClassifier struct {
	tl         *phases.Timeline
	start, end phases.Cursor
}

// NewLifeClassifier returns a classifier on tl (nil: no phases known).
func NewLifeClassifier(tl *phases.Timeline) *LifeClassifier {
	c := &LifeClassifier{tl: tl}
	if tl != nil {
		c.start, c.end = tl.Cursor(), tl.Cursor()
	}
	return c
}

// Classify returns ClassifyLife(life, tl).
func (c *LifeClassifier) Classify(life Life) LifeClass {
	if c.tl == nil {
		return LifeClass{}
	}
	aliveAtEnd := endsAlive(life, c.tl)
	ai, ap := c.start.At(life.Start)
	fi, fp := len(c.tl.Iterations), phases.None
	if !aliveAtEnd {
		fi, fp = c.end.At(life.End)
	}
	return lifeClass(c.tl, aliveAtEnd, ai, ap, fi, fp)
}

// endsAlive reports whether life is still live at the end of tl's trace. What is freed after an out-of-memory
// error is freed by the exception unwinding: it was live when the step failed, which is all its lifetime says.
func endsAlive(life Life, tl *phases.Timeline) bool {
	return life.End >= tl.Events || tl.OOM >= 0 && life.End > tl.OOM
}

// lifeClass is the class of a lifetime whose alloc is in iteration ai and phase ap and whose free in fi and fp
// (len(tl.Iterations) and None when aliveAtEnd).
func lifeClass(tl *phases.Timeline, aliveAtEnd bool, ai int, ap phases.Phase, fi int, fp phases.Phase) LifeClass {
	// An inference iteration's prefill and decode are forwards to the lifetime rules.
	if fp.IsForward() {
		fp = phases.Forward
	}
	return LifeClass{Timeline: true, Alloc: ap, Free: fp, AliveAtEnd: aliveAtEnd, SameIteration: fi == ai && !aliveAtEnd,
		FreedLater: fi > ai, NoBackward: ap.IsForward() && aliveAtEnd && ai >= 0 && tl.Iterations[ai].Backward.Empty()}
}

// lifetimeVerdict applies the lifetime rules: the category and component the lifetime implies, and the rule name
// (LifeInconclusive when it implies nothing).
func lifetimeVerdict(c LifeClass) (string, components.Component, string) {
	ap := c.Alloc
	if ap.IsForward() {
		ap = phases.Forward
	}
	switch ap {
	case phases.Setup:
		if c.AliveAtEnd {
			return Parameters, components.Weights, LifeSetupKept
		}
	case phases.Forward:
		switch {
		case c.SameIteration && c.Free == phases.Backward:
			return Activation, components.Activations, LifeSavedForBackward
		case c.SameIteration && c.Free == phases.Forward:
			return Temporary, components.Temporaries, LifeForwardTransient
		case c.NoBackward:
			return Activation, components.Activations, LifeForwardKept
		}
	case phases.Backward:
		switch {
		case c.SameIteration && c.Free == phases.Backward:
			return Temporary, components.Temporaries, LifeBackwardTransient
		case c.SameIteration && c.Free == phases.Optimizer, c.FreedLater:
			return Gradient, components.Gradients, LifeKeptAfterBackward
		}
	case phases.Optimizer:
		if c.SameIteration && c.Free == phases.Optimizer {
			return Temporary, components.Temporaries, LifeOptimizerTransient
		}
		if c.FreedLater {
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
	return AttributeClass(d, ClassifyLife(life, tl))
}

// AttributeClass is Attribute for a lifetime already classified (ClassifyLife).
func AttributeClass(d Decision, c LifeClass) Attribution {
	a := Attribution{Category: d.Category, Component: CategoryComponent(d.Category), DecidedBy: DecidedByStack, Rule: d.Rule,
		Site: d.Site}
	if d.Category == Unknown {
		a.DecidedBy = ""
	}
	if !c.Timeline {
		return a
	}
	a.AllocPhase = c.Alloc
	cat, comp, rule := lifetimeVerdict(c)
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
