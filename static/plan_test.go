package static

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// A recommendation that proposes a parallel layout must be the strategy-table row of that layout: the same
// configuration (global batch included), so the same bytes, and its text must name the row and what changes.
func TestRecommendationsMatchStrategyRows(t *testing.T) {
	quoted := regexp.MustCompile(`as strategy "([^"]+)"`)
	cases := []struct {
		name string
		mod  func(*Config)
		want map[string]string // recommendation title prefix → strategy row it must equal
	}{
		{"llama3-8b zero0 mbs1", func(c *Config) { c.Parallel.ZeroStage = 0 },
			map[string]string{"Shard more model state (ZeRO-1)": "DP+ZeRO-1", "Tensor parallelism TP=8": "TP8+SP"}},
		{"llama3-8b zero0 mbs2", func(c *Config) { c.Parallel.ZeroStage, c.Training.MicroBatchSize, c.Parallel.NumMicrobatches = 0, 2, 0 },
			map[string]string{"Shard more model state (ZeRO-1)": "DP+ZeRO-1", "Tensor parallelism TP=8": "TP8+SP"}},
		{"llama3-8b zero1 chunked loss mbs2", func(c *Config) {
			c.Parallel.ZeroStage, c.Training.Loss, c.Training.MicroBatchSize, c.Parallel.NumMicrobatches = 1, "chunked", 2, 0
		},
			map[string]string{"Shard more model state (ZeRO-2)": "DP+ZeRO-2", "Tensor parallelism TP=8": "TP8+SP"}},
		{"llama3-8b zero3 seq64k", func(c *Config) { c.Training.SeqLength = 65536 },
			map[string]string{"Tensor parallelism TP=8": "TP8+SP+FSDP"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := LoadConfig("../testdata/static/llama3-8b-fsdp8.json")
			if err != nil {
				t.Fatal(err)
			}
			tc.mod(cfg)
			r, err := Estimate(*cfg)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := CompareStrategies(context.Background(), *cfg)
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]StrategyRow{}
			for _, row := range rows {
				byName[row.Name] = row
			}
			found := map[string]bool{}
			for _, rc := range r.Recommendations {
				for prefix, rowName := range tc.want {
					if !strings.HasPrefix(rc.Title, prefix) {
						continue
					}
					found[prefix] = true
					m := quoted.FindStringSubmatch(rc.Detail)
					if m == nil || m[1] != rowName {
						t.Errorf("%q does not name strategy %q: %s", rc.Title, rowName, rc.Detail)
					}
					row, ok := byName[rowName]
					if !ok || row.DeviceBytes == 0 {
						t.Fatalf("no estimated strategy row %q in %+v", rowName, rows)
					}
					if rc.NewPeakBytes != row.DeviceBytes || rc.SavesBytes != r.Summary.DeviceTotalBytes-row.DeviceBytes {
						t.Errorf("%q: %d B (saves %d), strategy row %q: %d B", rc.Title, rc.NewPeakBytes, rc.SavesBytes, rowName, row.DeviceBytes)
					}
					if strings.Contains(rc.Detail, fmt.Sprintf("global batch %d→", r.Config.Training.GlobalBatchSize)) {
						t.Errorf("%q changes the global batch: %s", rc.Title, rc.Detail)
					}
					if !strings.Contains(rc.Detail, "ZeRO stage") && row.ZeroStage != r.Config.Parallel.ZeroStage {
						t.Errorf("%q does not state the ZeRO change: %s", rc.Title, rc.Detail)
					}
				}
			}
			for prefix := range tc.want {
				if !found[prefix] {
					t.Errorf("no recommendation %q among %+v", prefix, r.Recommendations)
				}
			}
		})
	}
}

// describeChange must list exactly the fields that differ, so recommendation texts state what the variant changes.
func TestDescribeChange(t *testing.T) {
	cfg, err := LoadConfig("../testdata/static/llama3-8b-fsdp8.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Resolve(); err != nil {
		t.Fatal(err)
	}
	if got := describeChange(*cfg, *cfg); got != "" {
		t.Errorf("identical configs: %q, want empty", got)
	}
	v, note, ok := strategyConfig(*cfg, strategy{"TP8+SP", 8, 1, 1, true, true})
	if !ok || note != "" {
		t.Fatalf("TP8+SP on 8 GPUs, global batch 32: ok %v note %q", ok, note)
	}
	if err := v.Resolve(); err != nil {
		t.Fatal(err)
	}
	// dp 8 → 1 with micro-batch 1 and global batch 32: 4 → 32 micro-batches per step.
	want := "TP 1→8, DP 8→1, sequence parallelism on, ZeRO stage 3→1, distributed optimizer on, gradient buffer on_demand→persistent, micro-batches per step 4→32"
	if got := describeChange(*cfg, v); got != want {
		t.Errorf("describeChange = %q\nwant %q", got, want)
	}
}
