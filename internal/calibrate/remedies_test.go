package calibrate_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/calibrate"
	"github.com/memscan/memscan/static"
)

// oomConfig is the H200 OOM run (Llama 3 8B, batch 8 × 8192, bf16, AdamW, SDPA, no checkpointing) as a static
// configuration.
const oomConfig = `{"model":{"preset":"llama3-8b"},
 "training":{"micro_batch_size":8,"seq_length":8192,"precision":"bf16","optimizer":"adamw","optimizer_impl":"foreach",
  "attention":"flash","kernels":"eager","loss":"standard","recompute":"none"},
 "hardware":{"gpu":"h200-sxm","num_gpus":1}}`

// TestRemedies: the configuration that ran out of memory is predicted not to fit; every change is tried alone, in
// the order of their cost; the combinations listed after them fit and hold no smaller fitting change (a micro-batch
// shrunk further holds a lesser shrink), fewer changes first. A smaller micro-batch keeps the global batch by
// accumulation, whose gradients — 2 bytes a parameter in bf16 — the later micro-batches hold: the estimator's
// peak for it is the one-micro-batch peak plus them.
func TestRemedies(t *testing.T) {
	cfg, err := static.ParseConfig([]byte(oomConfig), false)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := calibrate.Remedies(*cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	singles := []string{"as configured", findings.RemedyExpandable, findings.RemedyChunkedLoss, findings.RemedyRecompute,
		findings.RemedyMicroBatch(8, 4, 2), findings.RemedyMicroBatch(8, 2, 4), findings.RemedyMicroBatch(8, 1, 8)}
	if len(rs) <= len(singles) || rs[0].Fits {
		t.Fatalf("remedies %+v: want the failing base, six single changes and fitting combinations", rs)
	}
	for i, name := range singles {
		if rs[i].Change != name {
			t.Errorf("remedy %d is %q, want %q", i, rs[i].Change, name)
		}
		if i > 0 && rs[i].PeakReservedBytes >= rs[0].PeakReservedBytes {
			t.Errorf("%s does not lower the peak reserved: %d ≥ %d", rs[i].Change, rs[i].PeakReservedBytes, rs[0].PeakReservedBytes)
		}
	}
	parts := func(r findings.Remedy) []string { return strings.Split(r.Change, " + ") }
	for i, r := range rs[len(singles):] {
		if !r.Fits || len(parts(r)) < 2 {
			t.Errorf("%s listed among the combinations: fits %v", r.Change, r.Fits)
		}
		if i > 0 && len(parts(r)) < len(parts(rs[len(singles)+i-1])) {
			t.Errorf("%s after a larger combination", r.Change)
		}
		for _, smaller := range rs[1 : len(singles)+i] {
			if smaller.Fits && holds(t, parts(r), parts(smaller)) {
				t.Errorf("%s holds %s, which fits already", r.Change, smaller.Change)
			}
		}
	}
	// Accumulation over 8 micro-batches of 1: the peak of one micro-batch of 1 (the loss's backward, where no
	// gradient exists yet) plus every bf16 gradient, which the later micro-batches hold; the estimator counts
	// them itself.
	one := *cfg
	one.Training.MicroBatchSize, one.Training.GlobalBatchSize, one.Parallel.NumMicrobatches = 1, 0, 0
	est, err := static.Estimate(one)
	if err != nil {
		t.Fatal(err)
	}
	// Llama 3 8B has 8,030,261,248 parameters (estimate_test.go in package static derives them).
	const params = 8_030_261_248
	mb1 := rs[len(singles)-1]
	if grads := int64(2 * params); mb1.AccumulatedGradientBytes != grads || mb1.PeakAllocatedBytes != est.Summary.PeakMemoryBytes+grads {
		t.Errorf("micro-batch 1 with 8 accumulation steps: %d allocated (%d of gradients), want %d + 2·%d parameters",
			mb1.PeakAllocatedBytes, mb1.AccumulatedGradientBytes, est.Summary.PeakMemoryBytes, int64(params))
	}
	eight := one
	eight.Training.GlobalBatchSize = 8
	acc, err := static.Estimate(eight)
	if err != nil {
		t.Fatal(err)
	}
	if mb1.PeakAllocatedBytes != acc.Summary.PeakMemoryBytes || mb1.PeakReservedBytes != acc.Summary.PeakReservedBytes {
		t.Errorf("remedy %d allocated, %d reserved; the estimator predicts %d, %d for 8 micro-batches of 1",
			mb1.PeakAllocatedBytes, mb1.PeakReservedBytes, acc.Summary.PeakMemoryBytes, acc.Summary.PeakReservedBytes)
	}
	// A device of 1 PiB fits every change alone: nothing is combined.
	all, err := calibrate.Remedies(*cfg, 1<<50)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != len(singles) {
		t.Errorf("%d remedies on a 1 PiB device, want the %d single ones", len(all), len(singles))
	}
	for _, r := range all {
		if !r.Fits {
			t.Errorf("%s does not fit a 1 PiB device", r.Change)
		}
	}
}

// holds reports whether the changes x include every change of y, a micro-batch shrunk at least as far.
func holds(t *testing.T, x, y []string) bool {
	t.Helper()
	for _, c := range y {
		if !slices.Contains(x, c) && !(strings.HasPrefix(c, "micro_batch_size") && slices.ContainsFunc(x, func(d string) bool {
			return strings.HasPrefix(d, "micro_batch_size") && microBatch(t, d) <= microBatch(t, c)
		})) {
			return false
		}
	}
	return true
}

// microBatch reads the new micro-batch from "micro_batch_size 8 -> N (...)". A change it cannot read fails the
// test: read as 0, every micro-batch change would count as shrunk at least as far as any other.
func microBatch(t *testing.T, change string) int {
	t.Helper()
	var from, to int
	if _, err := fmt.Sscanf(change, "micro_batch_size %d -> %d", &from, &to); err != nil {
		t.Fatalf("micro-batch change %q: %v", change, err)
	}
	return to
}
