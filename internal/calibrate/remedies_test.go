package calibrate_test

import (
	"fmt"
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

// TestRemedies: the configuration that ran out of memory is predicted not to fit; the micro-batch remedy is the
// largest micro-batch the estimator says fits (one more does not); every tried change is reported.
func TestRemedies(t *testing.T) {
	cfg, err := static.ParseConfig([]byte(oomConfig), false)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := calibrate.Remedies(*cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", rs)
	if len(rs) != 4 || rs[0].Change != "as configured" || rs[0].Fits {
		t.Fatalf("remedies %+v: want the failing base and three changes", rs)
	}
	var mb findings.Remedy
	for _, r := range rs[1:] {
		if r.PeakAllocatedBytes >= rs[0].PeakAllocatedBytes {
			t.Errorf("%s does not lower the peak: %d ≥ %d", r.Change, r.PeakAllocatedBytes, rs[0].PeakAllocatedBytes)
		}
		if strings.HasPrefix(r.Change, "micro_batch_size") {
			mb = r
		}
	}
	if !mb.Fits {
		t.Fatalf("no micro-batch fits: %+v", rs)
	}
	var b int
	if _, err := fmtSscan(mb.Change, &b); err != nil {
		t.Fatal(err)
	}
	next := *cfg
	next.Training.MicroBatchSize, next.Training.GlobalBatchSize = b+1, 0
	if r, err := static.Estimate(next); err != nil || r.Fit.Fits {
		t.Errorf("micro-batch %d chosen but %d fits too (%v)", b, b+1, err)
	}
	// A device of 1 PiB fits every change.
	all, err := calibrate.Remedies(*cfg, 1<<50)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range all {
		if !r.Fits {
			t.Errorf("%s does not fit a 1 PiB device", r.Change)
		}
	}
}

// fmtSscan reads the new micro-batch from "micro_batch_size 8 -> N".
func fmtSscan(change string, b *int) (int, error) {
	return fmt.Sscanf(change[strings.LastIndex(change, " ")+1:], "%d", b)
}
