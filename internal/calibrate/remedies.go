package calibrate

import (
	"fmt"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/static"
)

// Remedies tries, one at a time, the changes that cut a training step's peak without changing the model or the
// number of devices: the largest smaller micro-batch that fits (1 when none does), full activation checkpointing,
// and a chunked loss. capacity is what the caching allocator could reserve on the device (an OOM's reserved plus
// the free memory it reported), compared with the predicted peak reserved; 0 takes the configuration's own GPU,
// usable fraction and CUDA context instead. The unchanged configuration comes first, as "as configured".
func Remedies(cfg static.Config, capacity int64) ([]findings.Remedy, error) {
	try := func(change string, c static.Config) (findings.Remedy, error) {
		r, err := static.Estimate(c)
		if err != nil {
			return findings.Remedy{}, fmt.Errorf("static estimate (%s): %w", change, err)
		}
		rm := findings.Remedy{Change: change, PeakAllocatedBytes: r.Summary.PeakMemoryBytes, PeakReservedBytes: r.Summary.PeakReservedBytes,
			DeviceBytes: r.Fit.NeededBytes, Fits: r.Fit.Fits}
		if capacity > 0 {
			rm.Fits = rm.PeakReservedBytes <= capacity
		}
		return rm, nil
	}
	base, err := try(findings.RemedyAsConfigured, cfg)
	if err != nil {
		return nil, err
	}
	out := []findings.Remedy{base}
	if cfg.Mode != "" && cfg.Mode != "train" {
		return out, nil
	}
	if mb := cfg.Training.MicroBatchSize; mb > 1 {
		// Halve until it fits, then look for the largest fitting size between the last two tried.
		var best findings.Remedy
		lo, hi := 0, mb // lo fits (0: none found), hi does not
		for b := mb / 2; b >= 1; b /= 2 {
			c := cfg
			c.Training.MicroBatchSize = b
			c.Training.GlobalBatchSize = 0 // let the estimator derive it from the new micro-batch
			rm, err := try(findings.RemedyMicroBatch(mb, b), c)
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
			rm, err := try(findings.RemedyMicroBatch(mb, b), c)
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
		rm, err := try(findings.RemedyRecompute, c)
		if err != nil {
			return nil, err
		}
		out = append(out, rm)
	}
	if cfg.Training.Loss != "chunked" {
		c := cfg
		c.Training.Loss = "chunked"
		rm, err := try(findings.RemedyChunkedLoss, c)
		if err != nil {
			return nil, err
		}
		out = append(out, rm)
	}
	return out, nil
}

// AddRemedies answers, for every explained OOM of r, which single change to the static configuration cfg fits the
// memory the allocator could have had there (its reserved bytes plus the free memory the OOM reported): the
// largest smaller micro-batch, activation checkpointing, a chunked loss, each with its predicted peak. The OOM
// finding's advice then names the changes that fit. A loss-logits finding gets the estimator's saving for a
// chunked loss beside the trace's. Only a snapshot's trace records OOMs and losses: other reports are left as
// they are.
func AddRemedies(r *report.Report, cfg static.Config) error {
	s, ok := r.Part.(*report.SnapshotReport)
	if !ok {
		return nil
	}
	for i := range s.OOMs {
		o := &s.OOMs[i]
		if o.Explained == nil {
			continue
		}
		rs, err := Remedies(cfg, o.Explained.CapacityBytes)
		if err != nil {
			return fmt.Errorf("%s: oom at event %d: %w", r.File, o.EventIndex, err)
		}
		o.Remedies = rs
		for j := range r.Recommendations {
			if f := &r.Recommendations[j]; f.ID == findings.OOM && f.Event == o.EventIndex && f.Device == o.Device {
				findings.WithRemedies(f, rs, o.Explained.CapacityBytes)
			}
		}
	}
	return addLossEstimate(r, cfg)
}

// addLossEstimate gives a loss-logits finding the estimator's figure for the same change: the configuration's
// predicted peak allocated as configured and with training.loss chunked. A configuration already chunked, or not
// a training one, says nothing about it.
func addLossEstimate(r *report.Report, cfg static.Config) error {
	if cfg.Mode != "" && cfg.Mode != "train" || cfg.Training.Loss == "chunked" {
		return nil
	}
	for j := range r.Recommendations {
		f := &r.Recommendations[j]
		if f.ID != findings.LossLogits {
			continue
		}
		base, err := static.Estimate(cfg)
		if err != nil {
			return fmt.Errorf("%s: static estimate (as configured): %w", r.File, err)
		}
		c := cfg
		c.Training.Loss = "chunked"
		chunked, err := static.Estimate(c)
		if err != nil {
			return fmt.Errorf("%s: static estimate (%s): %w", r.File, findings.RemedyChunkedLoss, err)
		}
		findings.WithLossEstimate(f, base.Summary.PeakMemoryBytes, chunked.Summary.PeakMemoryBytes)
	}
	return nil
}
