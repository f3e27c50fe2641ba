package calibrate

import (
	"cmp"
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/static"
)

// remedyChange is one change Remedies tries, applied to a configuration.
type remedyChange struct {
	name  string
	apply func(*static.Config)
}

// remedyChanges are the changes that cut a training step's peak without changing the model or the number of
// devices, cheapest first: expandable segments (an allocator setting), a chunked loss (a loss rewrite, no extra
// compute), full activation checkpointing (about a third more compute), then smaller micro-batches, largest
// first, each with gradient accumulation keeping the global batch (so the estimator counts the gradients the
// accumulation keeps across micro-batches). Changes the configuration has already are left out.
func remedyChanges(cfg static.Config) (opts []remedyChange, batches []remedyChange) {
	if !cfg.Allocator.ExpandableSegments {
		opts = append(opts, remedyChange{findings.RemedyExpandable, func(c *static.Config) { c.Allocator.ExpandableSegments = true }})
	}
	if cfg.Training.Loss != "chunked" {
		opts = append(opts, remedyChange{findings.RemedyChunkedLoss, func(c *static.Config) { c.Training.Loss = "chunked" }})
	}
	if cfg.Training.Recompute != "full" {
		opts = append(opts, remedyChange{findings.RemedyRecompute, func(c *static.Config) { c.Training.Recompute, c.Training.RecomputeLayers = "full", 0 }})
	}
	mb := cfg.Training.MicroBatchSize
	for b := mb / 2; b >= 1; b /= 2 {
		if mb%b != 0 {
			continue
		}
		steps := mb / b
		batches = append(batches, remedyChange{findings.RemedyMicroBatch(mb, b, steps), func(c *static.Config) {
			// The same global batch in steps times as many micro-batches: the estimator keeps the gradients
			// across them.
			global := c.Training.GlobalBatchSize
			if global == 0 {
				global = mb * max(c.Parallel.DP, 1) * max(c.Parallel.NumMicrobatches, 1)
			}
			c.Training.MicroBatchSize, c.Training.GlobalBatchSize, c.Parallel.NumMicrobatches = b, global, 0
		}})
	}
	return opts, batches
}

// Remedies tries the changes that cut a training step's peak without changing the model or the number of
// devices (remedyChanges), alone and combined, against capacity: what the caching allocator could reserve on the
// device (an OOM's reserved plus the free memory it reported), compared with the predicted peak reserved; 0 takes
// the configuration's own GPU, usable fraction and CUDA context instead. It returns the unchanged configuration
// first ("as configured"), then every single change, fitting or not, then the combinations that fit and contain
// no smaller fitting one (a micro-batch shrunk further counts as containing a lesser shrink), smallest change first: fewer changes, then the cheaper ones (the order of
// remedyChanges, a micro-batch shrunk less before one shrunk more).
func Remedies(cfg static.Config, capacity int64) ([]findings.Remedy, error) {
	try := func(change string, c static.Config) (findings.Remedy, error) {
		r, err := static.Estimate(c)
		if err != nil {
			return findings.Remedy{}, fmt.Errorf("static estimate (%s): %w", change, err)
		}
		// The estimator counts what gradient accumulation keeps across micro-batches in its peaks.
		rm := findings.Remedy{Change: change, PeakAllocatedBytes: r.Summary.PeakMemoryBytes, PeakReservedBytes: r.Summary.PeakReservedBytes,
			DeviceBytes: r.Fit.NeededBytes, Fits: r.Fit.Fits, AccumulatedGradientBytes: r.Summary.PeakAccumulatedGradBytes}
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
	opts, batches := remedyChanges(cfg)
	// A combination is a subset of opts (a bit mask) and at most one micro-batch (index into batches, −1 none).
	type combo struct {
		mask, batch int
	}
	size := func(x combo) int {
		n := bits.OnesCount(uint(x.mask))
		if x.batch >= 0 {
			n++
		}
		return n
	}
	var all []combo
	for batch := -1; batch < len(batches); batch++ {
		for mask := 0; mask < 1<<len(opts); mask++ {
			if x := (combo{mask, batch}); size(x) > 0 {
				all = append(all, x)
			}
		}
	}
	// Smallest change first: fewer changes; then no micro-batch change before one, a smaller shrink first; then
	// the cheaper options (lower bits).
	slices.SortStableFunc(all, func(x, y combo) int {
		return cmp.Or(cmp.Compare(size(x), size(y)), cmp.Compare(x.batch, y.batch), cmp.Compare(x.mask, y.mask))
	})
	var fitting []combo
	contains := func(x, y combo) bool { // x holds every change of y, a micro-batch shrunk at least as far
		return x.mask&y.mask == y.mask && (y.batch < 0 || x.batch >= y.batch)
	}
	for _, x := range all {
		single := size(x) == 1
		if !single && slices.ContainsFunc(fitting, func(y combo) bool { return contains(x, y) }) {
			continue // a smaller change already fits
		}
		c := cfg
		var names []string
		for i, o := range opts {
			if x.mask&(1<<i) != 0 {
				o.apply(&c)
				names = append(names, o.name)
			}
		}
		if x.batch >= 0 {
			batches[x.batch].apply(&c)
			names = append(names, batches[x.batch].name)
		}
		rm, err := try(strings.Join(names, " + "), c)
		if err != nil {
			return nil, err
		}
		if rm.Fits {
			fitting = append(fitting, x)
		}
		if single || rm.Fits {
			out = append(out, rm)
		}
	}
	return out, nil
}

// AddRemedies answers, for every explained OOM of r, which changes to the static configuration cfg (Remedies:
// smaller micro-batches that keep the global batch by accumulation, activation checkpointing, a chunked loss,
// alone and combined) fit the memory the allocator could have had there (its reserved bytes plus the free memory
// the OOM reported), each with its predicted peak. The OOM finding's advice then names the changes that fit. A loss-logits finding gets the estimator's saving for a
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
	// The two estimates depend on cfg alone: made once, at the first loss-logits finding (one per device may
	// come).
	var base, chunked *static.Report
	for j := range r.Recommendations {
		f := &r.Recommendations[j]
		if f.ID != findings.LossLogits {
			continue
		}
		if base == nil {
			var err error
			if base, err = static.Estimate(cfg); err != nil {
				return fmt.Errorf("%s: static estimate (as configured): %w", r.File, err)
			}
			c := cfg
			c.Training.Loss = "chunked"
			if chunked, err = static.Estimate(c); err != nil {
				return fmt.Errorf("%s: static estimate (%s): %w", r.File, findings.RemedyChunkedLoss, err)
			}
		}
		findings.WithLossEstimate(f, base.Summary.PeakMemoryBytes, chunked.Summary.PeakMemoryBytes)
	}
	return nil
}
