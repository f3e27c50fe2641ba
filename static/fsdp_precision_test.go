package static

import (
	"strings"
	"testing"
)

// TestFSDPPrecisionAgrees: under FSDP2 mixed precision (bf16-mixed, ZeRO-3, fp32 reduce) the sharded parameter is
// fp32 and is the master copy. Llama-3-8B (8,030,261,248 params) on 8 GPUs keeps 4 B weights + 4 B grads + 8 B
// AdamW states = 16 B/param, 1/8 of it per GPU; the precision assumption, the whole-model bytes per param and the
// per-GPU figures say the same; the root unit's gathered weights are temporaries, so the activations at the peak
// equal the summary's.
func TestFSDPPrecisionAgrees(t *testing.T) {
	r := estimateFile(t, "../testdata/static/llama3-8b-fsdp8.json", nil)
	const params = 8_030_261_248
	s, st := r.Summary, r.Stages[r.WorstStage]
	if r.Params.Total != params {
		t.Fatalf("params %d", r.Params.Total)
	}
	if st.Weights != 4*params/8 || s.GradMemoryBytes != 4*params/8 || s.OptimizerMemoryBytes != 8*params/8 {
		t.Errorf("per GPU weights %d grads %d optimizer %d, want %d %d %d", st.Weights, s.GradMemoryBytes, s.OptimizerMemoryBytes,
			4*params/8, 4*params/8, 8*params/8)
	}
	if w := s.WholeModel; w.BytesPerParam != 16 || w.WeightMemoryBytes != 4*params || w.OptimizerMemoryBytes != 8*params {
		t.Errorf("whole model %g B/param (weights %d, optimizer %d), want 16 (4, 8 B/param)", w.BytesPerParam, w.WeightMemoryBytes, w.OptimizerMemoryBytes)
	}
	if st.AtPeak.Activations != s.ActivationMemoryBytes || st.AtPeak.Temporaries != s.TemporaryMemoryBytes {
		t.Errorf("at peak activations %d temporaries %d, summary %d %d", st.AtPeak.Activations, st.AtPeak.Temporaries,
			s.ActivationMemoryBytes, s.TemporaryMemoryBytes)
	}
	var precision string
	for _, a := range r.Assumptions {
		if strings.HasPrefix(a, "Precision ") {
			precision = a
		}
	}
	if !strings.Contains(precision, "sharded params fp32 (4 B, the master weights themselves") || strings.Contains(precision, "params bf16 (2 B), grads") {
		t.Errorf("precision assumption %q", precision)
	}
}

// estimateFile estimates a config file, edited by mod when given.
func estimateFile(t *testing.T, path string, mod func(*Config)) *Report {
	t.Helper()
	c, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if mod != nil {
		mod(c)
	}
	r, err := Estimate(*c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
