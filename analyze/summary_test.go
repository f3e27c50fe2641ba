package analyze

import (
	"context"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/internal/gen"
	"github.com/memscan/memscan/internal/realsnap"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/internal/traingen"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/snapshot"
)

// TestSummaryOnlyAgrees: Options.SummaryOnly yields what a rank summary reads — totals, devices, the peak's bytes and
// device, the OOM events, the categories of the live blocks (stackless ones placed by their lifetimes) — exactly as
// the full analysis does, on generated snapshots (cycling, growing, two devices with expandable segments and an
// OOM), training loops (stackless backward allocations, a leak, an OOM) and the real snapshots when present.
func TestSummaryOnlyAgrees(t *testing.T) {
	inputs := map[string]*snapshot.Snapshot{}
	for name, cfg := range map[string]gen.Config{
		"generated":            {Seed: 11, Entries: 20000},
		"generated growing":    {Seed: 12, Entries: 20000, Grow: 0.1},
		"generated two-device": {Seed: 13, Entries: 20000, Devices: 2, Expandable: true, OOM: true},
	} {
		inputs[name] = testutil.Generated(t, cfg).Snapshot
	}
	inputs["training"] = traingen.TrainingLoop{Iterations: 6, Layers: 3, WeightBytes: 8 << 20, ActivationBytes: 16 << 20, LogitsBytes: 32 << 20, Annotations: true}.Build()
	inputs["training leak"] = traingen.TrainingLoop{Iterations: 6, Layers: 3, WeightBytes: 8 << 20, ActivationBytes: 16 << 20, LogitsBytes: 32 << 20, Keep: true}.Build()
	inputs["training oom"] = traingen.TrainingLoop{Iterations: 3, Layers: 4, WeightBytes: 8 << 20, ActivationBytes: 16 << 20, LogitsBytes: 32 << 20, OOMAtLayer: 3}.Build()
	// Weights without stacks: their lifetime, not the stack rules (which say Unknown), places them at the dump. With
	// stacks elsewhere, a stackless allocation reads as autograd's, so the lifetime makes them kept gradients.
	stackless := traingen.TrainingLoop{Iterations: 4, Layers: 3, WeightBytes: 8 << 20, ActivationBytes: 16 << 20, LogitsBytes: 32 << 20, Annotations: true}.Build()
	weights := map[uint64]bool{}
	for i, e := range stackless.DeviceTraces[0] {
		if stackless.EntryStack(&e) == traingen.TrainWeightStack {
			weights[e.Addr] = true
			stackless.DeviceTraces[0][i].Stack = 0
		}
	}
	for i := range stackless.Segments {
		if b := &stackless.Segments[i].Blocks[0]; weights[b.Address] {
			b.Stack = nil
		}
	}
	inputs["training, stackless weights"] = stackless
	for name, s := range inputs {
		t.Run(name, func(t *testing.T) { checkSummaryAgrees(t, s) })
	}
	sum, err := AnalyzeSnapshot(context.Background(), stackless, Options{SummaryOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if c := sum.Categories; !slices.ContainsFunc(c, func(c report.CategoryStat) bool { return c.Name == categorize.Gradient && c.Bytes == 3*8<<20 }) ||
		slices.ContainsFunc(c, func(c report.CategoryStat) bool { return c.Name == categorize.Unknown }) {
		t.Errorf("the stackless weights are not placed by their lifetime at the dump: %+v", c)
	}
}

// TestSummaryOnlyAgreesReal is TestSummaryOnlyAgrees on the shared real snapshots (skipped when absent).
func TestSummaryOnlyAgreesReal(t *testing.T) {
	dir, manifest := realsnap.Load(t)
	for _, m := range manifest {
		t.Run(m.File, func(t *testing.T) { checkSummaryAgrees(t, decodeOrSkip(t, filepath.Join(dir, m.File)).Snapshot) })
	}
}

// checkSummaryAgrees compares the summary-only analysis of s with the full one.
func checkSummaryAgrees(t *testing.T, s *snapshot.Snapshot) {
	t.Helper()
	full, err := AnalyzeSnapshot(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := AnalyzeSnapshot(context.Background(), s, Options{SummaryOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	fp, sp := full.Part.(*report.SnapshotReport), sum.Part.(*report.SnapshotReport)
	if fp.Totals != sp.Totals || !reflect.DeepEqual(full.Devices, sum.Devices) || len(fp.OOMs) != len(sp.OOMs) {
		t.Errorf("totals, devices or OOMs differ:\n%+v %v %d\n%+v %v %d", fp.Totals, full.Devices, len(fp.OOMs), sp.Totals, sum.Devices, len(sp.OOMs))
	}
	if (full.Peak == nil) != (sum.Peak == nil) || full.Peak != nil && (full.Peak.Bytes != sum.Peak.Bytes || full.Peak.Device != sum.Peak.Device) {
		t.Errorf("peak %+v, summary's %+v", full.Peak, sum.Peak)
	}
	if !reflect.DeepEqual(full.Categories, sum.Categories) {
		t.Errorf("categories\n%+v\nsummary's\n%+v", full.Categories, sum.Categories)
	}
	if sp.AllocatorReplay != nil || len(sp.Timeline) != 0 {
		t.Errorf("the summary ran the allocator replay or built a timeline")
	}
}
