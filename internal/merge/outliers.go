package merge

import (
	"cmp"
	"slices"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/units"
)

// Outlier is a rank whose measure is more than findings.OutlierPct above the median of its group: the ranks of
// its iteration and pipeline stage (a stage holds other layers and more or fewer micro-batches in flight, so a
// rank is only comparable with its own stage's ranks).
type Outlier struct {
	File      string `json:"file" msgpack:"file"`
	Rank      int    `json:"rank" msgpack:"rank"`
	Iteration int    `json:"iteration" msgpack:"iteration"`
	Stage     int    `json:"stage" msgpack:"stage"`
	Bytes     int64  `json:"bytes" msgpack:"bytes"`
	// MedianBytes is the median of the group (units.PercentileIndex), GroupRanks its size.
	MedianBytes int64   `json:"median_bytes" msgpack:"median_bytes"`
	GroupRanks  int     `json:"group_ranks" msgpack:"group_ranks"`
	AbovePct    float64 `json:"above_pct" msgpack:"above_pct"`
}

// outlierPctInt is findings.OutlierPct as an integer, so that the test is exact: v > median × (1 + pct/100)
// is v × 100 > median × (100 + pct), and validated byte counts (at most maxRankBytes, 2^44) times 110 fit an
// int64 with room to spare.
const outlierPctInt = int64(findings.OutlierPct)

// above reports whether v is more than findings.OutlierPct above median.
func above(v, median int64) bool { return median > 0 && v*100 > median*(100+outlierPctInt) }

// outliers returns every row whose metric is above the median of its group (iteration and stage) by more than
// findings.OutlierPct: the largest gap first, then the largest value, then rank order. A group of one rank has
// nothing to be compared with.
func outliers(rows []RankRow, metric func(RankRow) int64) []Outlier {
	type key struct{ iteration, stage int }
	groups := map[key][]int64{}
	for _, r := range rows {
		k := key{r.Iteration, r.Stage}
		groups[k] = append(groups[k], metric(r))
	}
	medians := make(map[key]int64, len(groups))
	for k, v := range groups {
		slices.Sort(v)
		medians[k] = units.PercentileSorted(v, 50)
	}
	out := []Outlier{}
	for _, r := range rows {
		k := key{r.Iteration, r.Stage}
		v, med := metric(r), medians[k]
		if len(groups[k]) < 2 || !above(v, med) {
			continue
		}
		out = append(out, Outlier{File: r.File, Rank: r.Rank, Iteration: r.Iteration, Stage: r.Stage, Bytes: v,
			MedianBytes: med, GroupRanks: len(groups[k]), AbovePct: (float64(v)/float64(med) - 1) * 100})
	}
	slices.SortFunc(out, func(a, b Outlier) int {
		return cmp.Or(cmp.Compare(b.AbovePct, a.AbovePct), cmp.Compare(b.Bytes, a.Bytes),
			cmp.Compare(a.Iteration, b.Iteration), cmp.Compare(a.Rank, b.Rank), cmp.Compare(a.File, b.File))
	})
	return out
}
