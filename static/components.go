package static

// Component is one named per-GPU memory component, for tables and charts.
type Component struct {
	Name  string
	Bytes int64
}

// Components lists the worst GPU's peak broken down by component (they add up to the peak allocated, with the
// allocator and runtime overheads after it).
func (r *Report) Components() []Component {
	s := r.Summary
	cs := []Component{{"weights", s.WeightMemoryBytes}}
	if r.Config.Mode == "train" {
		at := r.Stages[r.WorstStage].AtPeak
		cs = append(cs, Component{"gradients", at.Grads}, Component{"optimizer states", s.OptimizerMemoryBytes},
			Component{"activations", at.Activations}, Component{"temporaries", at.Temporaries})
	} else {
		cs = append(cs, Component{"KV cache", s.KVCacheMemoryBytes}, Component{"activations", s.ActivationMemoryBytes})
	}
	cs = append(cs, Component{"other (workspaces, buffers)", s.OtherMemoryBytes},
		Component{"allocator overhead (reserved − allocated)", s.PeakReservedBytes - s.PeakMemoryBytes},
		Component{"CUDA context + NCCL", s.DeviceTotalBytes - s.PeakReservedBytes})
	return cs
}
