package phases_test

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/memscan/memscan/internal/gen"
	"github.com/memscan/memscan/internal/traingen"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/phases"
	"github.com/memscan/memscan/snapshot"
)

// benchRandom is a generated 2.4 M-event single-device trace without stacks (the allocator benchmarks' size): no
// training loop, so the periodic split reads all of it and finds nothing.
var benchRandom = sync.OnceValues(func() ([]snapshot.TraceEntry, error) {
	var buf bytes.Buffer
	if _, err := gen.Write(&buf, gen.Config{Seed: 7, Entries: 2_400_000, Devices: 1, Stacks: gen.StacksNone}); err != nil {
		return nil, err
	}
	in, err := load.Decode(context.Background(), "bench.pickle", &buf)
	if err != nil {
		return nil, err
	}
	return in.Snapshot.DeviceTraces[0], nil
})

// benchTraining is a synthetic training loop of about 2.4 M events with its stacks removed: 300 iterations of 500
// layers, which the periodic split must find.
var benchTraining = sync.OnceValue(func() []snapshot.TraceEntry {
	s := traingen.TrainingLoop{Iterations: 300, Layers: 500, WeightBytes: 2 << 20, ActivationBytes: 4 << 20, LogitsBytes: 64 << 20}.Build()
	tr := s.DeviceTraces[0]
	for j := range tr {
		tr[j].Stack = nil
	}
	return tr
})

func BenchmarkDetectPeriodicRandom(b *testing.B) {
	tr, err := benchRandom()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(tr)), "events")
	for b.Loop() {
		if tl := phases.Detect(tr, nil, 0); len(tl.Iterations) != 0 {
			b.Fatalf("%d iterations from %s", len(tl.Iterations), tl.Source)
		}
	}
}

func BenchmarkDetectPeriodicTraining(b *testing.B) {
	tr := benchTraining()
	b.ReportMetric(float64(len(tr)), "events")
	for b.Loop() {
		if tl := phases.Detect(tr, nil, 0); len(tl.Iterations) != 300 {
			b.Fatalf("%d iterations from %s", len(tl.Iterations), tl.Source)
		}
	}
}
