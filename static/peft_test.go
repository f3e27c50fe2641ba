package static

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/memscan/memscan/internal/testutil"
)

// TestPEFTFullFinetune compares the predicted peak reserved memory with Hugging Face PEFT's measured
// torch.cuda.max_memory_reserved for full fine-tuning of Llama-3.2-3B on an L40S (pure bf16 AdamW, batch 4,
// sequences up to 768 tokens, eager HF kernels with SDPA attention).
func TestPEFTFullFinetune(t *testing.T) {
	dir := testutil.SharedDir(t, "research_data", "peft_metamathqa")
	data, err := os.ReadFile(filepath.Join(dir, "results__full-finetuning--llama-3.2-3B-lr_0.00001.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		TrainInfo struct {
			Max    float64 `json:"accelerator_memory_max"`
			P99    float64 `json:"accelerator_memory_reserved_99th"`
			Params int64   `json:"num_total_params"`
		} `json:"train_info"`
	}
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	c, err := LoadConfig("../testdata/static/peft-llama3.2-3b-full-l40s.json")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Estimate(*c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Params.Total != res.TrainInfo.Params {
		t.Errorf("param count %d, PEFT reports %d", r.Params.Total, res.TrainInfo.Params)
	}
	got := float64(r.Summary.PeakReservedBytes)
	e := got/res.TrainInfo.Max - 1
	t.Logf("peak reserved predicted %.2f GiB vs measured max %.2f GiB (%+.1f%%), 99th percentile %.2f GiB",
		got/gib, res.TrainInfo.Max/gib, 100*e, res.TrainInfo.P99/gib)
	if math.Abs(e) > 0.10 {
		t.Errorf("peak reserved %.2f GiB vs measured %.2f GiB: %+.1f%% (bound 10%%)", got/gib, res.TrainInfo.Max/gib, 100*e)
	}
}
