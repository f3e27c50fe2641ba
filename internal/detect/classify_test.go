package detect_test

import (
	"context"
	"testing"

	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/internal/replay"
	"github.com/memscan/memscan/internal/traingen"
)

// TestLifeClassifierAsClassifyLife: on generated training traces (annotated or told by frames, with an OOM, with
// the loss's pattern), a phase cursor answers as Timeline.At at every event, and the classifier Prepare uses, asked
// in element order, gives every element ClassifyLife's class.
func TestLifeClassifierAsClassifyLife(t *testing.T) {
	loops := map[string]traingen.TrainingLoop{
		"annotated": healthy,
		"frames":    {Iterations: 5, Layers: 3, WeightBytes: 4 * mib, ActivationBytes: 16 * mib, LogitsBytes: 64 * mib},
		"oom":       {Iterations: 3, Layers: 4, WeightBytes: 4 * mib, ActivationBytes: 16 * mib, LogitsBytes: 64 * mib, OOMAtLayer: 3, Annotations: true},
		"loss":      {Iterations: 4, Layers: 2, WeightBytes: 4 * mib, ActivationBytes: 8 * mib, LogitsBytes: 32 * mib, LossVocab: 32000, Annotations: true},
		"leak":      {Iterations: 6, Layers: 2, WeightBytes: 4 * mib, ActivationBytes: 8 * mib, LogitsBytes: 32 * mib, Keep: true, Scale: []float64{1, 2, 1, 3, 1, 2}},
	}
	for name, c := range loops {
		d, err := replay.ReplayDevice(context.Background(), c.Build(), 0)
		if err != nil {
			t.Fatal(err)
		}
		tl := d.Timeline()
		if len(tl.Iterations) < 1 {
			t.Fatalf("%s: %d iterations found; the fixture should show some", name, len(tl.Iterations))
		}
		cur := tl.Cursor()
		for j := -1; j <= len(d.Trace); j++ {
			gi, gp := cur.At(j)
			if wi, wp := tl.At(j); gi != wi || gp != wp {
				t.Errorf("%s: cursor at event %d: %d %v, At: %d %v", name, j, gi, gp, wi, wp)
			}
		}
		lives := categorize.NewLifeClassifier(tl)
		for i := range d.Elements {
			el := &d.Elements[i]
			life := categorize.Life{Start: int(el.Start), End: int(el.End)}
			if got, want := lives.Classify(life), categorize.ClassifyLife(life, tl); got != want {
				t.Errorf("%s: element %d (%d..%d): class %+v, want %+v", name, i, el.Start, el.End, got, want)
			}
		}
	}
}
