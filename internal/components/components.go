// Package components defines, once, the parts that training memory is split into, in the sense the static
// estimator uses them. Runtime attribution (what was live at a measured peak) and the static prediction both speak
// this language, so calibration compares like with like.
//
// It imports nothing from memscan, so every layer can use it.
package components

// Component is one part of device memory at a peak.
type Component string

// The components, with what each one holds. The definitions are the contract: runtime attribution must put a byte
// where the estimator would have counted it.
const (
	// Weights are the model's parameters and buffers: created before the first forward and alive through every
	// iteration (for mixed precision, the fp32 master copy is part of the optimizer states, not here).
	Weights Component = "weights"
	// Gradients are parameter gradients only: produced in backward and kept until the optimizer step or zero_grad.
	// Gradients with respect to activations are temporaries.
	Gradients Component = "gradients"
	// OptimizerStates are what the optimizer keeps between steps (Adam's moments, master weights): created in the
	// first optimizer step and kept.
	OptimizerStates Component = "optimizer"
	// Activations are forward results kept for backward: allocated in forward and freed in backward.
	Activations Component = "activations"
	// Temporaries are transient in forward, backward or the optimizer step: workspaces, activation gradients, the
	// logits and the loss and its gradient.
	Temporaries Component = "temporaries"
	// KVCache is an inference key/value cache (Hugging Face cache_utils, static caches, vLLM/SGLang block pools).
	KVCache Component = "kv_cache"
	// Other is everything else: inputs, communication buffers, memory whose role cannot be told.
	Other Component = "other"
)

// All lists the components in report order.
func All() []Component {
	return []Component{Weights, Gradients, OptimizerStates, Activations, Temporaries, KVCache, Other}
}

// Part is the bytes of one component.
type Part struct {
	Component Component
	Bytes     int64
}
