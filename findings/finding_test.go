package findings

import (
	"strings"
	"testing"
)

func TestFormatMeasure(t *testing.T) {
	tests := []struct {
		v    float64
		unit Unit
		want string
	}{
		{104857600, Bytes, "100.0 MiB"}, // 100 × 2^20
		{2097152000, Bytes, "2.0 GiB"},  // 2000 MiB = 1.95 GiB, printed with one decimal
		{12.754, Percent, "12.75%"},
		{10, Percent, "10.00%"},
		{3, "", "3"},
		{1.256, "", "1.26"},
	}
	for _, tc := range tests {
		if got := FormatMeasure(tc.v, tc.unit); got != tc.want {
			t.Errorf("FormatMeasure(%v, %q) = %q, want %q", tc.v, tc.unit, got, tc.want)
		}
	}
}

// TestCatalogue: every constructor builds a finding whose ID, severity, unit and title are one entry of the
// catalogue, every catalogue entry has a constructor, and no two entries share an ID and scope.
func TestCatalogue(t *testing.T) {
	at := At{Device: 0, Event: 5, Iteration: 1, Phase: "forward", Text: "iteration 1 forward"}
	x := OOMExplained{Layers: 4, LayersDone: 2, PerLayerBytes: 1 << 20, ProjectedBytes: 3 << 30, CapacityBytes: 2 << 30}
	built := map[string]Finding{
		"trace oom":           NewOOM(at, 1<<30, 1<<20, x, false),
		"trace leak":          NewLeak(at, LeakSite{Site: "a.py:1:f", Category: "Activation", Iterations: 3, PerIteration: 2 << 20}, 0, 1, 4<<20),
		"trace fragmentation": NewFragmentation(FragmentationFacts{MaxReserved: at, Reserved: 4 << 30, Peak: at, Allocated: 2 << 30, WithExpandable: 3 << 30, Basis: BasisReplay}),
		"trace cache":         NewCacheOverhead(at, 4<<30, at, 2<<30, false),
		"trace idle":          NewIdleCache(at, 2, 2<<30),
		"trace loss":          NewLossLogits(LossFacts{Peak: at, PeakBytes: 4 << 30, HeldBytes: 2 << 30, LogitsBytes: 1 << 30, GradientBytes: 1 << 30, NewPeakBytes: 3 << 30}),
		"dump cache":          NewDumpCacheOverhead(20, 100, 80, 10, 5, 5),
		"dump large":          NewLargeUnusedBlocks(1, 200<<20, 200<<20),
		"dump fragmentation":  NewDumpFragmentation(60, 1<<30, 100<<20, 2, 0.5),
		"dump pending":        NewPendingFree(2, 1<<20),
		"dump small":          NewSmallPoolSegments(101, 202<<20, 1<<20),
		"dump rounding":       NewRoundingWaste(6, 1<<20),
		"dump private":        NewPrivatePools(11, 1<<30),
		"dump no history":     NewNoHistory(1, 1<<20, 4<<20),
		"inputs imbalance":    NewInputsImbalance("r1.pickle", " (rank 1)", 2<<30, 20, 1<<30, "iteration 1", 1),
		"inputs leak":         NewLeakAcrossIterations(0, 1<<30, 1, 2<<30, 3, 3),
		"ranks mixed":         NewMixedIterations(8, 2, "1, 2", ""),
		"ranks runs":          NewMixedRuns(2, "a/rank* (8 summaries), b/rank* (8 summaries)"),
		"ranks duplicate":     NewDuplicateRanks(1, "rank 5 of iteration 1: a.pickle, b.pickle"),
		"ranks missing":       NewMissingRanks(28, 1000, "972-999", true),
		"ranks world":         NewStagesWithoutWorld(972, 8),
		"ranks imbalance":     NewRanksImbalance("rank 3", 2<<30, 20, 1<<30, 8),
		"ranks skew":          NewPipelineStageSkew(0, 2<<30, 3, 1<<30),
		"ranks oom":           NewRankOOM(1, 1, 8),
		"log capacity":        NewLogNearCapacity(95<<30, 95, 100<<30),
		"log slack":           NewLogReservedSlack(10<<30, 7<<30, 30),
		"log imbalance":       NewLogRankImbalance(12),
		"tracer unlisted":     NewTracerUnlistedPeak(1<<30, 4<<30, 25),
		"tracer unknown":      NewTracerUnknownModule(3<<30, 60),
	}
	type key struct {
		id    ID
		scope string
	}
	specs := map[key]Spec{}
	for _, s := range Catalogue() {
		k := key{s.ID, s.Scope}
		if _, dup := specs[k]; dup {
			t.Errorf("%s is declared twice in scope %s", s.ID, s.Scope)
		}
		specs[k] = s
	}
	used := map[key]bool{}
	for name, f := range built {
		scope := strings.Fields(name)[0]
		s, ok := specs[key{f.ID, scope}]
		switch {
		case !ok:
			t.Errorf("%s: %s is not in the catalogue for scope %s", name, f.ID, scope)
		case s.Severity != f.Severity || s.Unit != f.Unit || s.Title != f.Title:
			t.Errorf("%s: built %s/%q/%q, catalogue says %s/%q/%q", name, f.Severity, f.Unit, f.Title, s.Severity, s.Unit, s.Title)
		}
		if f.Evidence == "" || f.Advice == "" {
			t.Errorf("%s: empty evidence or advice: %+v", name, f)
		}
		used[key{f.ID, scope}] = true
	}
	for k := range specs {
		if !used[k] {
			t.Errorf("catalogue entry %s (%s) has no constructor in this test", k.id, k.scope)
		}
	}
}

// TestRank: critical findings first, then by the bytes saved at the peak, largest first; ties and findings that
// save nothing keep their order.
func TestRank(t *testing.T) {
	fs := []Finding{
		{ID: "a", Severity: Info},
		{ID: "b", Severity: Warning, SavedBytes: 1 << 30},
		{ID: "c", Severity: Info, SavedBytes: 3 << 30},
		{ID: "d", Severity: Critical},
		{ID: "e", Severity: Warning},
		{ID: "f", Severity: Info, SavedBytes: 1 << 30},
	}
	Rank(fs)
	var got []string
	for _, f := range fs {
		got = append(got, string(f.ID))
	}
	if strings.Join(got, "") != "dcbfae" {
		t.Errorf("ranked %v, want d c b f a e", got)
	}
}

// TestOOMShardingAdvice: sharding is advised only when the model's state (weights, gradients, optimizer) is at
// least ShardingMinSharePct of what was live at the OOM: the 8B OOM's 15 of 137 GiB is not; 40 of 100 GiB is.
func TestOOMShardingAdvice(t *testing.T) {
	at := At{Event: 9, Iteration: 1, Phase: "forward", Text: "iteration 1 forward"}
	oom := func(state, live int64) Finding {
		x := OOMExplained{Live: LiveSet{Bytes: live, ByComponent: []Share{{Name: "activations", Bytes: live - state}, {Name: "weights", Bytes: state}}}}
		return NewOOM(at, 1<<30, 1<<20, x, false)
	}
	if f := oom(15<<30, 137<<30); strings.Contains(f.Advice, "shard") {
		t.Errorf("sharding advised for 11 %% of the live memory: %s", f.Advice)
	}
	if f := oom(40<<30, 100<<30); !strings.Contains(f.Advice, "shard the weights, gradients and optimizer state") || !strings.Contains(f.Advice, "40.00 %") {
		t.Errorf("sharding not advised for 40 %% of the live memory: %s", f.Advice)
	}
}
