package static

import (
	"path/filepath"
	"testing"

	"github.com/memscan/memscan/internal/components"
)

// TestComponentsAtPeakAddUp: the parts a stage holds at its peak, in package components' terms, add up to its
// predicted peak allocated, for training (forward, backward or optimizer peak) and inference (prefill or decode),
// and inference holds nothing kept for a backward.
func TestComponentsAtPeakAddUp(t *testing.T) {
	files, _ := filepath.Glob("../testdata/static/h200/*.json")
	more, _ := filepath.Glob("../testdata/static/*.json")
	files = append(files, more...)
	if len(files) < 10 {
		t.Fatalf("%d configs found", len(files))
	}
	for _, f := range files {
		cfg, err := LoadConfig(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		rep, err := Estimate(*cfg)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, st := range rep.Stages {
			var sum int64
			for _, p := range st.ComponentsAtPeak(rep.Config.Mode) {
				sum += p.Bytes
				if p.Bytes < 0 {
					t.Errorf("%s stage %d: %s = %d", f, st.Index, p.Component, p.Bytes)
				}
				if rep.Config.Mode != "train" && (p.Component == components.Activations || p.Component == components.Gradients) {
					t.Errorf("%s: inference has %s", f, p.Component)
				}
			}
			// Rounding: each part is a float converted to bytes.
			if d := sum - st.PeakAllocated; d < -8 || d > 8 {
				t.Errorf("%s stage %d (%s peak): parts add up to %d, peak allocated %d", f, st.Index, st.PeakStage, sum, st.PeakAllocated)
			}
		}
	}
}
