package analyze

import (
	"slices"
	"testing"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/report"
)

// The tests below put each threshold of the log, tracer and cross-input checks between two literal values,
// those findings/thresholds.go documents, so that a changed threshold, or a comparison turned from > into >= (or
// back), fails here instead of moving both sides of the test with it. "Fires above" thresholds are silent at the
// value itself; "at or above" ones fire there.

// fired lists the IDs of fs.
func fired(fs []findings.Finding) []findings.ID {
	var ids []findings.ID
	for _, f := range fs {
		ids = append(ids, f.ID)
	}
	return ids
}

// boundary is one case: the findings computed from a report, and whether id must be among them.
type boundary struct {
	name  string
	got   []findings.Finding
	id    findings.ID
	fires bool
}

func checkBoundaries(t *testing.T, cases []boundary) {
	t.Helper()
	for _, c := range cases {
		if ids := fired(c.got); slices.Contains(ids, c.id) != c.fires {
			t.Errorf("%s: %s fired %v (findings %v), want %v", c.name, c.id, !c.fires, ids, c.fires)
		}
	}
}

// TestDumpFragmentationMinCached: the dump's fragmentation is judged only when cached free memory is at least 10 %
// of reserved (TestRecommendationThresholds puts the 50 % itself between literals).
func TestDumpFragmentationMinCached(t *testing.T) {
	dump := func(cached int64) []findings.Finding {
		r := &report.SnapshotReport{Totals: report.Totals{ReservedBytes: 100 * MiB, RequestedBytes: 100 * MiB},
			Fragmentation: report.Fragmentation{FragmentationPct: 60, CachedFreeBytes: cached}}
		return cacheRecommendations(r, false, true)
	}
	checkBoundaries(t, []boundary{
		{"60 % fragmented, 10 of 100 MiB cached", dump(10 * MiB), findings.Fragmentation, true},
		{"60 % fragmented, 10 MiB − 512 B of 100 cached", dump(10*MiB - 512), findings.Fragmentation, false},
	})
}

func TestLogThresholdBoundaries(t *testing.T) {
	const gib = 1 << 30
	log := func(v report.LogView) []findings.Finding { return logRecommendations(&v) }
	checkBoundaries(t, []boundary{
		// Near capacity: peak reserved at or above 90 % of the device.
		{"90 of 100 GiB reserved", log(report.LogView{CapacityBytes: 100 * gib, PeakReservedBytes: 90 * gib}), findings.LogNearCapacity, true},
		{"90 GiB − 1 MiB of 100 reserved", log(report.LogView{CapacityBytes: 100 * gib, PeakReservedBytes: 90*gib - MiB}), findings.LogNearCapacity, false},
		// Cache slack: reserved − allocated at or above 20 % of reserved.
		{"80 of 100 GiB allocated", log(report.LogView{PeakReservedBytes: 100 * gib, PeakAllocatedBytes: 80 * gib}), findings.LogReservedSlack, true},
		{"80 GiB + 1 MiB of 100 allocated", log(report.LogView{PeakReservedBytes: 100 * gib, PeakAllocatedBytes: 80*gib + MiB}), findings.LogReservedSlack, false},
		// Rank imbalance: at or above 10 % over the median.
		{"imbalance 10 %", log(report.LogView{ReservedImbalancePct: 10}), findings.LogRankImbalance, true},
		{"imbalance 9.9 %", log(report.LogView{ReservedImbalancePct: 9.9}), findings.LogRankImbalance, false},
	})
}

func TestTracerThresholdBoundaries(t *testing.T) {
	tracer := func(peak, gap, unknown, listed int64) []findings.Finding {
		return tracerRecommendations(&report.TracerDeviceView{PeakBytes: peak, GapBytes: gap, ListedBytes: listed,
			Modules: []report.ModuleStat{{Pattern: report.UnknownModule, Bytes: unknown}}})
	}
	checkBoundaries(t, []boundary{
		// The peak not in the tensor list: at or above 10 %.
		{"10 of 100 MiB unlisted", tracer(100*MiB, 10*MiB, 0, 90*MiB), findings.TracerUnlistedPeak, true},
		{"10 MiB − 512 B of 100 unlisted", tracer(100*MiB, 10*MiB-512, 0, 90*MiB), findings.TracerUnlistedPeak, false},
		// Listed memory outside any module: at or above 50 %.
		{"50 of 100 MiB outside modules", tracer(100*MiB, 0, 50*MiB, 100*MiB), findings.TracerUnknownModule, true},
		{"50 MiB − 512 B of 100 outside modules", tracer(100*MiB, 0, 50*MiB-512, 100*MiB), findings.TracerUnknownModule, false},
	})
}

func TestCrossInputThresholdBoundaries(t *testing.T) {
	// Outliers: an input reserving more than 10 % above the median of its iteration.
	outliers := func(reserved ...int64) []findings.Finding {
		var rows []report.CrossRow
		var idx []int
		for i, r := range reserved {
			rows = append(rows, report.CrossRow{File: "rank" + string(rune('0'+i)) + ".pickle", Rank: i, Iteration: 1, ReservedBytes: r})
			idx = append(idx, i)
		}
		c := &report.Cross{}
		addOutliers(c, rows, []int{1}, map[int][]int{1: idx})
		return c.Recommendations
	}
	// Growth across iterations: a rank's allocated bytes never drop over at least 3 snapshots and rise by 1 MiB.
	growth := func(allocated ...int64) []findings.Finding {
		var rows []report.CrossRow
		for i, a := range allocated {
			rows = append(rows, report.CrossRow{File: "it.pickle", Rank: 0, Iteration: i + 1, ReservedBytes: 100 * MiB, AllocatedBytes: a})
		}
		c := &report.Cross{}
		addGrowth(c, rows)
		return c.Recommendations
	}
	checkBoundaries(t, []boundary{
		{"110 MiB against a median of 100", outliers(100*MiB, 100*MiB, 110*MiB), findings.RankImbalance, false},
		{"110 MiB + 512 B against a median of 100", outliers(100*MiB, 100*MiB, 110*MiB+512), findings.RankImbalance, true},
		{"1 MiB over 3 snapshots", growth(10*MiB, 10*MiB+MiB/2, 11*MiB), findings.LeakAcrossIterations, true},
		{"1 MiB − 512 B over 3 snapshots", growth(10*MiB, 10*MiB+MiB/2, 11*MiB-512), findings.LeakAcrossIterations, false},
		{"1 MiB over 2 snapshots", growth(10*MiB, 11*MiB), findings.LeakAcrossIterations, false},
	})
}
