package static

import (
	"testing"

	"github.com/memscan/memscan/gpu"
)

// TestApplyOverrides lays command-line values over testdata/static/llama3-8b-fsdp8.json (8 GPUs, ZeRO 3,
// micro-batch 1, global batch 32, so dp 8 and 4 micro-batches) and checks the resolved result by hand.
func TestApplyOverrides(t *testing.T) {
	custom := []gpu.Spec{{Key: "my-card", Name: "My Card 48GB", MemoryGiB: 47.5, BandwidthTBs: 1.2, BF16TFLOPS: 300}}
	tests := []struct {
		name  string
		o     Overrides
		check func(t *testing.T, c *Config)
	}{
		{"layout keeps the global batch", Overrides{Set: map[string]bool{"tp": true}, TP: 8}, func(t *testing.T, c *Config) {
			// dp 8/8 = 1, so 32 / (1 · 1) = 32 micro-batches.
			if c.Parallel.DP != 1 || c.Training.GlobalBatchSize != 32 || c.Parallel.NumMicrobatches != 32 {
				t.Errorf("dp %d, global batch %d, micro-batches %d; want 1, 32, 32", c.Parallel.DP, c.Training.GlobalBatchSize, c.Parallel.NumMicrobatches)
			}
		}},
		{"micro-batch re-derives the global batch", Overrides{Set: map[string]bool{"micro-batch-size": true}, MicroBatch: 2}, func(t *testing.T, c *Config) {
			// No pipeline: one micro-batch per step, so 2 · 8 · 1 = 16.
			if c.Training.MicroBatchSize != 2 || c.Inference.BatchSize != 2 || c.Training.GlobalBatchSize != 16 {
				t.Errorf("micro-batch %d, inference batch %d, global batch %d; want 2, 2, 16", c.Training.MicroBatchSize, c.Inference.BatchSize, c.Training.GlobalBatchSize)
			}
		}},
		{"micro-batch with a global batch", Overrides{Set: map[string]bool{"batch-size": true, "global-batch-size": true}, MicroBatch: 2, GlobalBatch: 64}, func(t *testing.T, c *Config) {
			if c.Training.GlobalBatchSize != 64 || c.Parallel.NumMicrobatches != 4 { // 64 / (2 · 8)
				t.Errorf("global batch %d, micro-batches %d; want 64, 4", c.Training.GlobalBatchSize, c.Parallel.NumMicrobatches)
			}
		}},
		{"zero given as 0 still applies", Overrides{Set: map[string]bool{"zero": true}}, func(t *testing.T, c *Config) {
			if c.Parallel.ZeroStage != 0 {
				t.Errorf("zero stage %d, want 0", c.Parallel.ZeroStage)
			}
		}},
		{"precision re-derives the gradient dtype", Overrides{Set: map[string]bool{"precision": true}, Precision: "bf16"}, func(t *testing.T, c *Config) {
			if c.Training.GradPrecision != "bf16" {
				t.Errorf("grad precision %q, want bf16", c.Training.GradPrecision)
			}
		}},
		{"custom GPU by key", Overrides{Set: map[string]bool{"gpu": true}, GPU: "my-card", CustomGPUs: custom}, func(t *testing.T, c *Config) {
			if c.Hardware.Custom == nil || c.GPU().Name != "My Card 48GB" {
				t.Errorf("GPU %+v, want the custom card", c.GPU())
			}
		}},
		{"unset fields do not apply", Overrides{Set: map[string]bool{}, TP: 8, Mode: "inference"}, func(t *testing.T, c *Config) {
			if c.Parallel.TP != 1 || c.Mode != "train" || c.Parallel.DP != 8 {
				t.Errorf("tp %d, mode %s, dp %d; want the config's 1, train, 8", c.Parallel.TP, c.Mode, c.Parallel.DP)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := LoadConfig("../testdata/static/llama3-8b-fsdp8.json")
			if err != nil {
				t.Fatal(err)
			}
			c.Apply(tc.o)
			if err := c.Resolve(); err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}
