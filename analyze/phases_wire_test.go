package analyze_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/internal/phasedetect"
	"github.com/memscan/memscan/internal/traingen"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/phases"
)

// TestSummaryCarriesPhases: summary.json's input object holds each device's iterations with their forward,
// backward and optimizer boundaries, as package phases finds them, and the peak says where it fell.
func TestSummaryCarriesPhases(t *testing.T) {
	s := traingen.TrainingLoop{Iterations: 3, Layers: 4, WeightBytes: 8 << 20, ActivationBytes: 32 << 20, LogitsBytes: 64 << 20, Annotations: true}.Build()
	rep, err := analyze.Analyze(context.Background(), &load.Input{Path: "train.pickle", Format: "pickle-v4", Snapshot: s}, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Iterations []phases.Timeline `json:"iterations"`
		Peak       struct {
			Iteration int    `json:"iteration"`
			Phase     string `json:"phase"`
		} `json:"peak"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	want := phasedetect.Detect(s.DeviceTraces[0], s.TraceStacks, s.ExternalAnnotations, 0)
	if len(got.Iterations) != 1 || !reflect.DeepEqual(got.Iterations[0], *want) || len(want.Iterations) != 3 {
		t.Errorf("summary iterations %+v, want %+v", got.Iterations, want)
	}
	// The fixture's step peaks when the backward's first gradient lands, with all activations live; step 2 and
	// later also hold the optimizer state, so the peak is in iteration 2.
	if got.Peak.Iteration != 2 || got.Peak.Phase != "backward" {
		t.Errorf("peak in iteration %d %q, want 2 backward", got.Peak.Iteration, got.Peak.Phase)
	}
}
