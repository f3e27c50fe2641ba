package phasedetect_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/memscan/memscan/internal/phasedetect"
	"github.com/memscan/memscan/internal/realsnap"
	"github.com/memscan/memscan/internal/traingen"
	"github.com/memscan/memscan/load"
)

// BenchmarkDetectPeriodicRandom: the generated 2.4M-event stackless trace holds no training loop, so the periodic
// split reads all of it and finds nothing.
func BenchmarkDetectPeriodicRandom(b *testing.B) {
	raw, err := realsnap.BenchStackless()
	if err != nil {
		b.Fatal(err)
	}
	in, err := load.Decode(context.Background(), "bench.pickle", bytes.NewReader(raw))
	if err != nil {
		b.Fatal(err)
	}
	tr := in.Snapshot.DeviceTraces[0]
	b.ReportMetric(float64(len(tr)), "events")
	for b.Loop() {
		if tl := phasedetect.Detect(tr, in.Snapshot.TraceStacks, nil, 0); len(tl.Iterations) != 0 {
			b.Fatalf("%d iterations from %s", len(tl.Iterations), tl.Source)
		}
	}
}

// BenchmarkDetectPeriodicTraining: a synthetic training loop of about 2.4M events with its stacks removed, 300
// iterations of 500 layers, all of which the periodic split must find.
func BenchmarkDetectPeriodicTraining(b *testing.B) {
	s := traingen.TrainingLoop{Iterations: 300, Layers: 500, WeightBytes: 2 << 20, ActivationBytes: 4 << 20, LogitsBytes: 64 << 20}.Build()
	tr := s.DeviceTraces[0]
	for j := range tr {
		tr[j].Stack = 0
	}
	b.ReportMetric(float64(len(tr)), "events")
	for b.Loop() {
		if tl := phasedetect.Detect(tr, nil, nil, 0); len(tl.Iterations) != 300 {
			b.Fatalf("%d iterations from %s", len(tl.Iterations), tl.Source)
		}
	}
}
