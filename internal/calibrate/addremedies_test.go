package calibrate_test

import (
	"context"
	"strings"
	"testing"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/calibrate"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/static"
)

// TestAddRemediesRealOOM: the H200 run that ran out of memory (Llama 3 8B, batch 8 × 8192) as a static
// configuration. Against what the allocator could have had (its reserved bytes plus the free memory the OOM
// reported), no single change fits once accumulation's gradients are counted for a smaller micro-batch; the
// smallest fitting change is checkpointing with a chunked loss at the same micro-batch (about 85 GiB allocated),
// and the finding names it first. Sharding is not advised: weights are 11 % of what was live.
func TestAddRemediesRealOOM(t *testing.T) {
	in := testutil.DecodeGPURun(t, "llama8b-oom-b8-s8192-snap.pickle.gz")
	rep, err := analyze.Analyze(context.Background(), in, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := static.ParseConfig([]byte(oomConfig), false)
	if err != nil {
		t.Fatal(err)
	}
	if err := calibrate.AddRemedies(rep, *cfg); err != nil {
		t.Fatal(err)
	}
	ooms := rep.OOMs()
	if len(ooms) != 1 || len(ooms[0].Remedies) < 8 {
		t.Fatalf("ooms %+v", ooms)
	}
	o := ooms[0]
	capacity := o.ReservedBytes + o.DeviceFreeBytes
	if o.Explained.CapacityBytes != capacity {
		t.Errorf("capacity %d, want reserved + free = %d", o.Explained.CapacityBytes, capacity)
	}
	var first *findings.Remedy
	for i, rm := range o.Remedies {
		if rm.Fits != (rm.PeakReservedBytes <= capacity) {
			t.Errorf("%s: fits=%v with %d reserved against %d", rm.Change, rm.Fits, rm.PeakReservedBytes, capacity)
		}
		if i <= 6 && rm.Fits {
			t.Errorf("single change %s fits", rm.Change)
		}
		if rm.Fits && first == nil {
			first = &o.Remedies[i]
		}
	}
	want := findings.RemedyChunkedLoss + " + " + findings.RemedyRecompute
	if first == nil || first.Change != want || first.PeakAllocatedBytes < 80<<30 || first.PeakAllocatedBytes > 90<<30 {
		t.Fatalf("first fitting change %+v, want %s at about 85 GiB", first, want)
	}
	var rec *findings.Finding
	for i := range rep.Recommendations {
		if rep.Recommendations[i].ID == "oom" {
			rec = &rep.Recommendations[i]
		}
	}
	if rec == nil || !strings.Contains(rec.Advice, "smallest change first: "+want) || strings.Contains(rec.Advice, "shard") {
		t.Errorf("oom advice: %+v", rec)
	}
	if rec != nil && rec.SavedBytes != o.Remedies[0].PeakAllocatedBytes-first.PeakAllocatedBytes {
		t.Errorf("saved %d, want the predicted peak as configured less the first fitting change's", rec.SavedBytes)
	}
}

// TestAddLossEstimate: the healthy H200 Llama 3.2 1B run (batch 4 × 2048, pure bf16) as a static configuration;
// its loss-logits finding, judged from the trace, gains the estimator's two peaks (as configured and with
// training.loss chunked, each estimated here) without losing its own saving; a configuration already chunked
// adds nothing.
func TestAddLossEstimate(t *testing.T) {
	in := testutil.DecodeGPURun(t, "llama1b-bf16-b4-s2048-snap.pickle.gz")
	rep, err := analyze.Analyze(context.Background(), in, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := static.ParseConfig([]byte(`{"model":{"preset":"llama3.2-1b"},
		"training":{"micro_batch_size":4,"seq_length":2048,"precision":"bf16","optimizer":"adamw","optimizer_impl":"foreach",
		"attention":"sdpa","loss":"standard","recompute":"none"},"hardware":{"gpu":"h200-sxm","num_gpus":1}}`), false)
	if err != nil {
		t.Fatal(err)
	}
	loss := func() *findings.Finding {
		for i := range rep.Recommendations {
			if rep.Recommendations[i].ID == findings.LossLogits {
				return &rep.Recommendations[i]
			}
		}
		t.Fatal("no loss-logits finding")
		return nil
	}
	before := *loss()
	chunked := *cfg
	chunked.Training.Loss = "chunked"
	if err := calibrate.AddRemedies(rep, chunked); err != nil || loss().Evidence != before.Evidence {
		t.Errorf("a chunked configuration changed the finding (%v): %s", err, loss().Evidence)
	}
	if err := calibrate.AddRemedies(rep, *cfg); err != nil {
		t.Fatal(err)
	}
	base, _ := static.Estimate(*cfg)
	ch, _ := static.Estimate(chunked)
	f := loss()
	want := units.Bytes(base.Summary.PeakMemoryBytes) + " as configured and " + units.Bytes(ch.Summary.PeakMemoryBytes) + " with training.loss: chunked, " +
		units.Bytes(base.Summary.PeakMemoryBytes-ch.Summary.PeakMemoryBytes) + " lower"
	if !strings.HasPrefix(f.Evidence, before.Evidence) || !strings.Contains(f.Evidence, want) || f.SavedBytes != before.SavedBytes {
		t.Errorf("evidence %q lacks %q, or the trace's saving changed (%d → %d)", f.Evidence, want, before.SavedBytes, f.SavedBytes)
	}
	if base.Summary.PeakMemoryBytes <= ch.Summary.PeakMemoryBytes {
		t.Errorf("the estimator saves nothing with a chunked loss: %d → %d", base.Summary.PeakMemoryBytes, ch.Summary.PeakMemoryBytes)
	}
}
