package analyze

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/memscan/memscan/internal/export"
	"github.com/memscan/memscan/internal/traingen"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/report"
)

// TestAnalyzeFileLetsGo: AnalyzeFile, which owns the snapshot it decodes, lets the trace and the annotations go as
// soon as it has read them, and its report is the one Analyze makes of the same file while leaving a caller's
// snapshot whole.
func TestAnalyzeFileLetsGo(t *testing.T) {
	ctx := context.Background()
	s := traingen.TrainingLoop{Iterations: 6, Layers: 4, WeightBytes: 32 << 20, ActivationBytes: 48 << 20, LogitsBytes: 64 << 20,
		Annotations: true, Scale: []float64{1, 2, 1, 3, 1, 2}}.Build()
	if len(s.ExternalAnnotations) == 0 || len(s.DeviceTraces[0]) == 0 {
		t.Fatal("the training loop has no annotations or no trace")
	}
	path := filepath.Join(t.TempDir(), "rank0_memory_snapshot.pickle")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := export.WritePickle(ctx, f, s); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	owned, err := AnalyzeFile(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	in, err := load.DecodeFileWith(ctx, path, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	events, marks := len(in.Snapshot.DeviceTraces[0]), len(in.Snapshot.ExternalAnnotations)
	shown, err := Analyze(ctx, in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Snapshot.DeviceTraces[0]) != events || len(in.Snapshot.ExternalAnnotations) != marks {
		t.Errorf("Analyze changed the caller's snapshot: %d events and %d marks, had %d and %d",
			len(in.Snapshot.DeviceTraces[0]), len(in.Snapshot.ExternalAnnotations), events, marks)
	}
	if !reflect.DeepEqual(owned, shown) {
		t.Errorf("AnalyzeFile's report differs from Analyze's of the same file")
	}
	part, ok := owned.Part.(*report.SnapshotReport)
	if !ok || len(part.Details) != 1 || len(part.Iterations) != 1 || len(part.Iterations[0].Iterations) != 6 {
		t.Fatalf("the report is not a snapshot's with one detail and one timeline of 6 iterations: %T", owned.Part)
	}
	// An analysis that owns its input lets both go.
	in, err = load.DecodeFileWith(ctx, path, load.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Analyze(ctx, in, Options{ownsInput: true}); err != nil {
		t.Fatal(err)
	}
	if in.Snapshot.DeviceTraces[0] != nil || in.Snapshot.ExternalAnnotations != nil {
		t.Errorf("an owned analysis kept %d events and %d marks", len(in.Snapshot.DeviceTraces[0]), len(in.Snapshot.ExternalAnnotations))
	}
}
