package findings

import (
	"fmt"

	"github.com/memscan/memscan/static"
)

// Remedy is one single change to a training configuration and what the static estimator predicts with it.
type Remedy struct {
	// Change says what changed, e.g. "micro_batch_size 8 -> 2".
	Change string `json:"change"`
	// PeakAllocatedBytes and PeakReservedBytes are the predicted peaks, DeviceBytes the predicted device total
	// (reserved plus the CUDA context).
	PeakAllocatedBytes int64 `json:"peak_allocated_bytes"`
	PeakReservedBytes  int64 `json:"peak_reserved_bytes"`
	DeviceBytes        int64 `json:"device_bytes"`
	Fits               bool  `json:"fits"`
}

// Remedies tries, one at a time, the changes that cut a training step's peak without changing the model or the
// number of devices: the largest smaller micro-batch that fits (1 when none does), full activation checkpointing,
// and a chunked loss. capacity is what the caching allocator could reserve on the device (an OOM's reserved plus
// the free memory it reported), compared with the predicted peak reserved; 0 takes the configuration's own GPU,
// usable fraction and CUDA context instead. The unchanged configuration comes first, as "as configured".
func Remedies(cfg static.Config, capacity int64) ([]Remedy, error) {
	try := func(change string, c static.Config) (Remedy, error) {
		r, err := static.Estimate(c)
		if err != nil {
			return Remedy{}, fmt.Errorf("static estimate (%s): %w", change, err)
		}
		rm := Remedy{Change: change, PeakAllocatedBytes: r.Summary.PeakMemoryBytes, PeakReservedBytes: r.Summary.PeakReservedBytes,
			DeviceBytes: r.Fit.NeededBytes, Fits: r.Fit.Fits}
		if capacity > 0 {
			rm.Fits = rm.PeakReservedBytes <= capacity
		}
		return rm, nil
	}
	base, err := try("as configured", cfg)
	if err != nil {
		return nil, err
	}
	out := []Remedy{base}
	if cfg.Mode != "" && cfg.Mode != "train" {
		return out, nil
	}
	if mb := cfg.Training.MicroBatchSize; mb > 1 {
		// Halve until it fits, then look for the largest fitting size between the last two tried.
		var best Remedy
		lo, hi := 0, mb // lo fits (0: none found), hi does not
		for b := mb / 2; b >= 1; b /= 2 {
			c := cfg
			c.Training.MicroBatchSize = b
			c.Training.GlobalBatchSize = 0 // let the estimator derive it from the new micro-batch
			rm, err := try(fmt.Sprintf("micro_batch_size %d -> %d", mb, b), c)
			if err != nil {
				return nil, err
			}
			best = rm
			if rm.Fits {
				lo = b
				break
			}
			hi = b
		}
		for b := hi - 1; lo > 0 && b > lo; b-- {
			c := cfg
			c.Training.MicroBatchSize = b
			c.Training.GlobalBatchSize = 0
			rm, err := try(fmt.Sprintf("micro_batch_size %d -> %d", mb, b), c)
			if err != nil {
				return nil, err
			}
			if rm.Fits {
				best = rm
				break
			}
		}
		out = append(out, best)
	}
	if cfg.Training.Recompute != "full" {
		c := cfg
		c.Training.Recompute, c.Training.RecomputeLayers = "full", 0
		rm, err := try("recompute full (activation checkpointing)", c)
		if err != nil {
			return nil, err
		}
		out = append(out, rm)
	}
	if cfg.Training.Loss != "chunked" {
		c := cfg
		c.Training.Loss = "chunked"
		rm, err := try("loss chunked", c)
		if err != nil {
			return nil, err
		}
		out = append(out, rm)
	}
	return out, nil
}
