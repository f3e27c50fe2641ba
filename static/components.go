package static

import "github.com/memscan/memscan/internal/components"

// Component is one named per-GPU memory component, for tables and charts.
type Component struct {
	Name  string
	Bytes int64
}

// ComponentsAtPeak is what one GPU of the stage holds at its predicted peak, split into package components'
// parts: the definitions runtime attribution uses too, so a calibration compares like with like. The parts add
// up to PeakAllocated (up to rounding), in components.All's order; parts the mode never has are left out.
func (st *Stage) ComponentsAtPeak(mode string) []components.Part {
	at := st.AtPeak
	parts := []components.Part{{Component: components.Weights, Bytes: st.Weights}}
	if mode == "train" {
		parts = append(parts, components.Part{Component: components.Gradients, Bytes: at.Grads},
			components.Part{Component: components.OptimizerStates, Bytes: st.Optimizer},
			components.Part{Component: components.Activations, Bytes: at.Activations})
	}
	parts = append(parts, components.Part{Component: components.Temporaries, Bytes: at.Temporaries})
	if mode != "train" {
		parts = append(parts, components.Part{Component: components.KVCache, Bytes: at.KVCache})
	}
	return append(parts, components.Part{Component: components.Other, Bytes: st.Other})
}

// componentLabels name the parts in tables and chart legends.
var componentLabels = map[components.Component]string{
	components.Weights:         "weights",
	components.Gradients:       "gradients",
	components.OptimizerStates: "optimizer states",
	components.Activations:     "activations",
	components.Temporaries:     "temporaries",
	components.KVCache:         "KV cache",
	components.Other:           "other (workspaces, buffers)",
}

// Components lists the worst GPU's peak broken down by component (ComponentsAtPeak; they add up to the peak
// allocated), with the allocator and runtime overheads after it.
func (r *Report) Components() []Component {
	s := r.Summary
	var cs []Component
	for _, p := range r.Stages[r.WorstStage].ComponentsAtPeak(r.Config.Mode) {
		cs = append(cs, Component{componentLabels[p.Component], p.Bytes})
	}
	return append(cs, Component{"allocator overhead (reserved − allocated)", s.PeakReservedBytes - s.PeakMemoryBytes},
		Component{"CUDA context + NCCL", s.DeviceTotalBytes - s.PeakReservedBytes})
}
