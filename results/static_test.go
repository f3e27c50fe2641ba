package results

import (
	"strings"
	"testing"

	"github.com/memscan/memscan/static"
)

// Counts in the console and Markdown views take the singular noun for one: "(1 micro-batch)", never
// "(1 micro-batches)".
func TestStaticViewPlurals(t *testing.T) {
	cases := []struct {
		gbs        int
		want, bad  string
		trainSteps int
	}{
		{8, "(1 micro-batch)", "1 micro-batches", 1},   // dp 8 × micro-batch 1 × 1 = 8
		{32, "(4 micro-batches)", "4 micro-batch)", 2}, // 32 / 8 = 4 micro-batches
	}
	for _, tc := range cases {
		cfg, err := static.LoadConfig("../testdata/static/llama3-8b-fsdp8.json")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Training.GlobalBatchSize, cfg.Parallel.NumMicrobatches = tc.gbs, 0
		cfg.Training.TrainTokens, cfg.Training.TrainSteps = 0, tc.trainSteps
		r, err := static.Estimate(*cfg)
		if err != nil {
			t.Fatal(err)
		}
		var text, md strings.Builder
		if err := WriteStaticText(&text, r); err != nil {
			t.Fatal(err)
		}
		if err := WriteStaticMarkdown(&md, r); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text.String(), tc.want) || strings.Contains(text.String(), tc.bad) {
			t.Errorf("global batch %d: console view lacks %q or has %q", tc.gbs, tc.want, tc.bad)
		}
		for name, out := range map[string]string{"console": text.String(), "markdown": md.String()} {
			if tc.trainSteps == 1 && (strings.Contains(out, " 1 steps") || !strings.Contains(out, " 1 step:")) {
				t.Errorf("%s view with one training step: want \"1 step:\"", name)
			}
		}
	}
}
