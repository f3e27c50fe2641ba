package calibrate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/calibrate"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/static"
)

// TestAddRemediesRealOOM: the H200 run that ran out of memory (Llama 3 8B, batch 8 × 8192) as a static
// configuration; of the single changes, the estimator fits only a smaller micro-batch into what the allocator
// could have had (its reserved bytes plus the free memory the OOM reported), and the OOM finding names it.
func TestAddRemediesRealOOM(t *testing.T) {
	in := testutil.DecodeGPURun(t, "llama8b-oom-b8-s8192-snap.pickle.gz")
	rep, err := analyze.Analyze(context.Background(), in, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := static.ParseConfig([]byte(`{"model":{"preset":"llama3-8b"},
		"training":{"micro_batch_size":8,"seq_length":8192,"precision":"bf16","optimizer":"adamw","optimizer_impl":"foreach",
		"attention":"flash","kernels":"eager","loss":"standard","recompute":"none"},"hardware":{"gpu":"h200-sxm","num_gpus":1}}`), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := calibrate.AddRemedies(rep, *cfg); err != nil {
		t.Fatal(err)
	}
	ooms := rep.OOMs()
	if len(ooms) != 1 || len(ooms[0].Remedies) != 4 {
		t.Fatalf("ooms %+v", ooms)
	}
	o := ooms[0]
	capacity := o.ReservedBytes + o.DeviceFreeBytes
	if o.Explained.CapacityBytes != capacity {
		t.Errorf("capacity %d, want reserved + free = %d", o.Explained.CapacityBytes, capacity)
	}
	for _, rm := range o.Remedies {
		if rm.Fits != (rm.PeakReservedBytes <= capacity) {
			t.Errorf("%s: fits=%v with %d reserved against %d", rm.Change, rm.Fits, rm.PeakReservedBytes, capacity)
		}
		if rm.Change == "as configured" && rm.Fits {
			t.Error("the configuration that ran out of memory is predicted to fit")
		}
	}
	var rec *findings.Finding
	for i := range rep.Recommendations {
		if rep.Recommendations[i].ID == "oom" {
			rec = &rep.Recommendations[i]
		}
	}
	if rec == nil || !strings.Contains(rec.Advice, "micro_batch_size 8 -> ") {
		t.Errorf("oom advice does not name the fitting micro-batch: %+v", rec)
	}
}
