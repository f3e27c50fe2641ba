package merge

import (
	"testing"

	"github.com/memscan/memscan/findings"
)

// TestCrossRankThresholdBoundaries puts each cross-rank threshold between two literal values, those
// findings/thresholds.go documents (all "fires above"): an imbalance of 10 % over the median, a first pipeline
// stage holding 1.25x the last, summaries of one iteration, no rank with an OOM. A changed threshold or comparison
// fails here rather than moving both sides of a test that reads the constant.
func TestCrossRankThresholdBoundaries(t *testing.T) {
	const gib = 1 << 30
	base := func() *CrossRank {
		return &CrossRank{Ranks: 8, Reserved: MetricStats{Max: 10 * gib, MaxRank: 3, Median: 10 * gib}}
	}
	stages := func(first, last int64) func(*CrossRank) {
		return func(c *CrossRank) {
			c.Stages = []StageStat{{Stage: 0, Ranks: 4, MeanReserved: first}, {Stage: 1, Ranks: 4, MeanReserved: last}}
		}
	}
	for _, tc := range []struct {
		name  string
		mod   func(*CrossRank)
		id    findings.ID
		fires bool
	}{
		{"imbalance 10 %", func(c *CrossRank) { c.ImbalancePct = 10 }, findings.RankImbalance, false},
		{"imbalance 10.01 %", func(c *CrossRank) { c.ImbalancePct = 10.01 }, findings.RankImbalance, true},
		{"first stage 1.25x the last", stages(125*gib/10, 10*gib), findings.PipelineStageSkew, false},
		{"first stage 1.25x + 1 MiB the last", stages(125*gib/10+1<<20, 10*gib), findings.PipelineStageSkew, true},
		{"one iteration", func(c *CrossRank) { c.Iterations = nil }, findings.MixedIterations, false},
		{"two iterations", func(c *CrossRank) { c.Iterations = []int{1, 2} }, findings.MixedIterations, true},
		{"no rank with an OOM", func(c *CrossRank) { c.OOMRanks = 0 }, findings.RankOOM, false},
		{"one rank with an OOM", func(c *CrossRank) { c.OOMRanks, c.OOMs = 1, 1 }, findings.RankOOM, true},
	} {
		c := base()
		tc.mod(c)
		got := false
		for _, f := range crossRankAdvice(c, Options{}) {
			got = got || f.ID == tc.id
		}
		if got != tc.fires {
			t.Errorf("%s: %s fired %v, want %v", tc.name, tc.id, got, tc.fires)
		}
	}
}
