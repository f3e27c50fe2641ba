package merge

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/gen"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/report"
)

// syntheticSummaries returns n rank summaries of a pipeline-parallel job with stages stages: early stages
// reserve more (1F1B keeps more micro-batches alive there), every rank varies by ±5%, and rank 77 and rank
// n-5 are blown-up outliers (+60% and +35%).
func syntheticSummaries(n, stages int) []*RankSummary {
	rng := rand.New(rand.NewPCG(42, 7))
	per := n / stages
	out := make([]*RankSummary, n)
	for r := range n {
		stage := r / per
		base := float64(40<<30) * (1 + 0.5*float64(stages-1-stage)/float64(stages))
		res := int64(base * (0.95 + 0.1*rng.Float64()))
		switch r {
		case 77:
			res = int64(float64(res) * 1.6)
		case n - 5:
			res = int64(float64(res) * 1.35)
		}
		alloc := res * 8 / 10
		s := &RankSummary{Kind: SummaryKind, Version: SummaryVersion, File: fmt.Sprintf("iteration_1/rank%d_memory_snapshot.pickle", r),
			Rank: r, Iteration: 1, Stage: -1, Devices: []int{r % 8},
			ReservedBytes: res, AllocatedBytes: alloc, RequestedBytes: alloc - 1<<20, InternalFreeBytes: 1 << 20,
			ExternalFreeBytes: res - alloc, PeakBytes: alloc + int64(rng.IntN(1<<30)),
			Categories: []report.CategoryStat{{Name: "activations", Bytes: alloc / 2, Count: 100}, {Name: "parameters", Bytes: alloc / 4, Count: 10}}}
		if r%1000 == 3 {
			s.OOMs = 1
		}
		out[r] = s
	}
	return out
}

func mergeAll(opts Options, sums []*RankSummary) *Merger {
	m := New(opts)
	for _, s := range sums {
		m.Add(s)
	}
	return m
}

// mergeTree merges random groups recursively: every grouping must give the same result.
func mergeTree(opts Options, sums []*RankSummary, rng *rand.Rand) *Merger {
	if len(sums) <= 3 {
		return mergeAll(opts, sums)
	}
	cut := 1 + rng.IntN(len(sums)-1)
	a := mergeTree(opts, sums[:cut], rng)
	b := mergeTree(opts, sums[cut:], rng)
	if rng.IntN(2) == 0 {
		a.Merge(b)
		return a
	}
	b.Merge(a)
	return b
}

func TestMerge4096Ranks(t *testing.T) {
	const n, stages = 4096, 4
	sums := syntheticSummaries(n, stages)
	opts := Options{Stages: stages, World: n}
	got := mergeAll(opts, sums).Result()

	// Independent expectations straight from the summaries.
	var sum, sumReq int64
	res := make([]int64, n)
	maxRank, minRank := 0, 0
	for i, s := range sums {
		sum += s.ReservedBytes
		sumReq += s.RequestedBytes
		res[i] = s.ReservedBytes
		if s.ReservedBytes > sums[maxRank].ReservedBytes {
			maxRank = i
		}
		if s.ReservedBytes < sums[minRank].ReservedBytes {
			minRank = i
		}
	}
	sorted := slices.Clone(res)
	slices.Sort(sorted)
	exactMedian := sorted[(n-1)/2]

	if got.Ranks != n || len(got.Rows) != n {
		t.Fatalf("ranks %d, rows %d, want %d", got.Ranks, len(got.Rows), n)
	}
	for i, r := range got.Rows {
		if r.Rank != i {
			t.Fatalf("row %d is rank %d: rows not in rank order", i, r.Rank)
		}
		if want := i / (n / stages); r.Stage != want {
			t.Fatalf("rank %d in stage %d, want %d", i, r.Stage, want)
		}
	}
	if got.Reserved.Sum != sum || got.Reserved.Max != sums[maxRank].ReservedBytes || got.Reserved.MaxRank != maxRank ||
		got.Reserved.Min != sums[minRank].ReservedBytes || got.Reserved.MinRank != minRank {
		t.Errorf("reserved stats %+v, want sum %d max %d@%d min %d@%d", got.Reserved, sum, sums[maxRank].ReservedBytes, maxRank,
			sums[minRank].ReservedBytes, minRank)
	}
	if maxRank != 77 {
		t.Errorf("largest rank %d, want the +60%% outlier 77", maxRank)
	}
	if exactP90 := sorted[(n-1)*9/10]; got.Reserved.Median != exactMedian || got.Reserved.P90 != exactP90 {
		t.Errorf("median %d p90 %d, want the exact %d and %d", got.Reserved.Median, got.Reserved.P90, exactMedian, exactP90)
	}
	if want := float64(sumReq) / float64(sum) * 100; math.Abs(got.EfficiencyPct-want) > 1e-9 {
		t.Errorf("efficiency %.6f, want %.6f", got.EfficiencyPct, want)
	}
	// Outliers: exactly the ranks more than OutlierPct above the median of their own stage (ranks r/(n/stages)),
	// the median being the lower middle of the stage's sorted values, the test done in integers.
	stageValues := map[int][]int64{}
	for _, s := range sums {
		stageValues[s.Rank/(n/stages)] = append(stageValues[s.Rank/(n/stages)], s.ReservedBytes)
	}
	var want []int
	for _, s := range sums {
		v := slices.Sorted(slices.Values(stageValues[s.Rank/(n/stages)]))
		if med := v[(len(v)-1)/2]; s.ReservedBytes*100 > med*110 {
			want = append(want, s.Rank)
		}
	}
	var gotOut []int
	for _, r := range got.Outliers {
		gotOut = append(gotOut, r.Rank)
	}
	slices.Sort(gotOut)
	if !slices.Equal(gotOut, want) || !slices.Contains(gotOut, 77) || !slices.Contains(gotOut, n-5) {
		t.Errorf("outliers %v, want %v (including 77 and %d)", gotOut, want, n-5)
	}
	// Stages: 1024 ranks each; stage sums add up to the total; stage 0 holds the most.
	if len(got.Stages) != stages {
		t.Fatalf("%d stages, want %d", len(got.Stages), stages)
	}
	var stageSum int64
	for _, st := range got.Stages {
		if st.Ranks != n/stages {
			t.Errorf("stage %d has %d ranks", st.Stage, st.Ranks)
		}
		stageSum += st.ReservedBytes
	}
	if stageSum != sum || got.Stages[0].MeanReserved <= got.Stages[3].MeanReserved {
		t.Errorf("stage sums %d (want %d), stage means %d..%d", stageSum, sum, got.Stages[0].MeanReserved, got.Stages[3].MeanReserved)
	}
	if got.OOMRanks != 5 || got.OOMs != 5 { // ranks 3, 1003, 2003, 3003, 4003
		t.Errorf("OOM ranks %d events %d, want 5 and 5", got.OOMRanks, got.OOMs)
	}
	ids := map[findings.ID]bool{}
	for _, r := range got.Recommendations {
		ids[r.ID] = true
	}
	for _, id := range []findings.ID{"rank-imbalance", "pipeline-stage-skew", "rank-oom"} {
		if !ids[id] {
			t.Errorf("missing recommendation %s (got %v)", id, ids)
		}
	}
}

// orderings merges sums in other orders and groupings than one sequential pass: reversed, shuffled, in random
// trees, and by parallel-style workers.
func orderings(opts Options, sums []*RankSummary, rng *rand.Rand) map[string]func() *Merger {
	return map[string]func() *Merger{
		"reversed": func() *Merger { r := slices.Clone(sums); slices.Reverse(r); return mergeAll(opts, r) },
		"shuffled": func() *Merger {
			r := slices.Clone(sums)
			rng.Shuffle(len(r), func(i, j int) { r[i], r[j] = r[j], r[i] })
			return mergeAll(opts, r)
		},
		"tree1": func() *Merger { return mergeTree(opts, sums, rng) },
		"tree2": func() *Merger { return mergeTree(opts, sums, rng) },
		"workers": func() *Merger {
			ws := make([]*Merger, 7)
			for i := range ws {
				ws[i] = New(opts)
			}
			for i, s := range sums {
				ws[(i*31)%7].Add(s)
			}
			total := New(opts)
			for _, w := range ws {
				total.Merge(w)
			}
			return total
		},
	}
}

// derivedWorldSets are rank sets merged with --stages and no --world: the world is then the highest rank + 1,
// known only once every summary is in, so the stages are assigned when the result is taken.
func derivedWorldSets() []struct {
	name string
	sums []*RankSummary
} {
	all := syntheticSummaries(4096, 8)
	// Some summaries name their stage: it is kept whatever the world (and counts in the world like any rank).
	named := make([]*RankSummary, len(all))
	for i, s := range all {
		c := *s
		if i%5 == 0 {
			c.Stage = 7 - i%8
		}
		named[i] = &c
	}
	// A second iteration of the first 3000 ranks: the world is the highest rank over both.
	twoIters := slices.Clone(all[:3000])
	for _, s := range all[:2000] {
		c := *s
		c.Iteration, c.File = 2, strings.Replace(s.File, "iteration_1", "iteration_2", 1)
		twoIters = append(twoIters, &c)
	}
	// Ranks whose paths named none stay without a stage.
	unnamed := slices.Clone(all[:100])
	for i := range 20 {
		c := *all[i]
		c.Rank, c.File = -1, fmt.Sprintf("copy%d.pickle", i)
		unnamed = append(unnamed, &c)
	}
	return []struct {
		name string
		sums []*RankSummary
	}{
		{"all 4096 ranks", all},
		{"ranks 0-999 (world 1000, 125 per stage)", all[:1000]},
		{"ranks 0-1002 (world 1003, the last stage short)", all[:1003]},
		{"some stages named", named},
		{"two iterations", twoIters},
		{"unnamed ranks", unnamed},
	}
}

// TestMergeAssociative merges the same summaries in other orders and groupings: every result must be identical
// to one sequential pass, with the world given and with the stages waiting for the world to be derived.
func TestMergeAssociative(t *testing.T) {
	tests := []struct {
		name string
		opts Options
		sums []*RankSummary
	}{
		{"world given", Options{Stages: 8, World: 4096}, syntheticSummaries(4096, 8)},
		{"no stages", Options{}, syntheticSummaries(4096, 8)},
	}
	for _, set := range derivedWorldSets() {
		tests = append(tests, struct {
			name string
			opts Options
			sums []*RankSummary
		}{"world derived, " + set.name, Options{Stages: 8}, set.sums})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := mergeAll(tc.opts, tc.sums)
			if err := want.Err(); err != nil {
				t.Fatal(err)
			}
			for name, f := range orderings(tc.opts, tc.sums, rng) {
				m := f()
				if err := m.Err(); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !reflect.DeepEqual(m.Result(), want.Result()) {
					t.Errorf("%s: result differs from the sequential merge", name)
				}
			}
		})
	}
}

// TestMergeDerivedWorld: with Stages and no World, every row, outlier and stage statistic is what the split of
// world = highest rank + 1 gives, worked out here from the summaries, and the report is the one a merge given
// that world writes.
func TestMergeDerivedWorld(t *testing.T) {
	const stages = 8
	for _, set := range derivedWorldSets() {
		t.Run(set.name, func(t *testing.T) {
			world := 0
			for _, s := range set.sums {
				world = max(world, s.Rank+1)
			}
			per := (world + stages - 1) / stages
			wantStage := map[string]int{} // by file and iteration
			wantStats := map[int]*StageStat{}
			for _, s := range set.sums {
				st := s.Stage
				if st < 0 && s.Rank >= 0 {
					st = min(s.Rank/per, stages-1)
				}
				wantStage[fmt.Sprint(s.File, s.Iteration)] = st
				if st < 0 {
					continue
				}
				w := wantStats[st]
				if w == nil {
					w = &StageStat{Stage: st, MinReserved: math.MaxInt64}
					wantStats[st] = w
				}
				w.Ranks++
				w.ReservedBytes += s.ReservedBytes
				w.AllocatedBytes += s.AllocatedBytes
				w.MaxReserved = max(w.MaxReserved, s.ReservedBytes)
				w.MinReserved = min(w.MinReserved, s.ReservedBytes)
				w.MaxPeak = max(w.MaxPeak, s.PeakBytes)
				w.OOMs += s.OOMs
			}

			m := mergeAll(Options{Stages: stages}, set.sums)
			if err := m.Err(); err != nil {
				t.Fatal(err)
			}
			got := m.Result()
			for _, r := range got.Rows {
				if want := wantStage[fmt.Sprint(r.File, r.Iteration)]; r.Stage != want {
					t.Fatalf("rank %d (%s) in stage %d, want %d", r.Rank, r.File, r.Stage, want)
				}
			}
			for _, o := range got.Outliers {
				if want := wantStage[fmt.Sprint(o.File, o.Iteration)]; o.Stage != want {
					t.Fatalf("outlier rank %d (%s) in stage %d, want %d", o.Rank, o.File, o.Stage, want)
				}
			}
			if len(got.Outliers) == 0 {
				t.Error("no outliers: the set's blown-up ranks should be among them")
			}
			if len(got.Stages) != len(wantStats) {
				t.Fatalf("%d stages, want %d", len(got.Stages), len(wantStats))
			}
			for _, st := range got.Stages {
				w := *wantStats[st.Stage]
				w.MeanReserved = w.ReservedBytes / int64(w.Ranks)
				if st != w {
					t.Errorf("stage %d: %+v, want %+v", st.Stage, st, w)
				}
			}
			if given := mergeAll(Options{Stages: stages, World: world}, set.sums).Result(); !reflect.DeepEqual(got, asIfGiven(got, given)) {
				t.Errorf("report differs from the merge given world %d", world)
			}
		})
	}
}

// asIfGiven is given, the report of a merge told the world that derived found, as derived says it: the two
// differ only in whether the world was given, which the missing-ranks finding words, and in the warning that a
// derived world the stages do not divide may hide missing ranks.
func asIfGiven(derived, given *CrossRank) *CrossRank {
	c := *given
	c.RankSet.WorldGiven = false
	worded := func(recs []findings.Finding) []findings.Finding {
		var out []findings.Finding
		for _, f := range recs {
			switch f.ID {
			case findings.StagesWithoutWorld:
			case findings.MissingRanks:
				f.Evidence = ""
				out = append(out, f)
			default:
				out = append(out, f)
			}
		}
		return out
	}
	if !reflect.DeepEqual(worded(derived.Recommendations), worded(given.Recommendations)) {
		return given // let the comparison fail
	}
	c.Recommendations = derived.Recommendations
	return &c
}

// TestMergeBoundedState checks that apart from the table rows the merger's state does not grow with ranks.
func TestMergeBoundedState(t *testing.T) {
	small := mergeAll(Options{}, syntheticSummaries(256, 4))
	big := mergeAll(Options{}, syntheticSummaries(4096, 4))
	for _, m := range []*Merger{small, big} {
		if len(m.categories) != 2 || len(m.stages) != 0 {
			t.Errorf("%d rows: categories %d stages %d", len(m.rows), len(m.categories), len(m.stages))
		}
	}
}

func TestSummaryRoundTrip(t *testing.T) {
	s := syntheticSummaries(4, 2)[1]
	s.Run = "dump/iteration_*/rank*_memory_snapshot.pickle"
	var buf bytes.Buffer
	if err := WriteSummary(&buf, s); err != nil {
		t.Fatal(err)
	}
	got, err := DecodeSummaries("s.msgpack", buf.Bytes(), ReadOptions{})
	s.Source = "s.msgpack" // where it was read from, not part of the file
	if err != nil || len(got.Summaries) != 1 || !reflect.DeepEqual(got.Summaries[0], s) {
		t.Fatalf("round trip: %v %+v", err, got)
	}
	// A run's report.msgpack: every input is summarized, its run named from its path.
	run := &report.Run{Version: report.ReportVersion, Tool: "memscan test", Inputs: []*report.Report{
		{
			Header: report.Header{File: "iteration_2/rank0.pickle", Format: "pickle-v4", Rank: 0, Iteration: 2, Peak: &report.Peak{Bytes: 80}},
			Part:   &report.SnapshotReport{Totals: report.Totals{ReservedBytes: 100, AllocatedBytes: 60, RequestedBytes: 50}, OOMs: []report.OOM{{}}},
		},
		{Header: report.Header{File: "iteration_2/rank1.pickle", Format: "pickle-v4", Rank: 1, Iteration: 2}, Part: &report.SnapshotReport{Totals: report.Totals{ReservedBytes: 200, AllocatedBytes: 90}}},
	}}
	buf.Reset()
	if err := msgpack.NewEncoder(&buf).Encode(run); err != nil {
		t.Fatal(err)
	}
	got, err = DecodeSummaries("report.msgpack", buf.Bytes(), ReadOptions{RunOf: func(p string) string { return "run of " + p }})
	if err != nil || len(got.Summaries) != 2 {
		t.Fatalf("report: %v, %+v", err, got)
	}
	a, b := got.Summaries[0], got.Summaries[1]
	if a.PeakBytes != 80 || a.OOMs != 1 || b.PeakBytes != 90 || b.ReservedBytes != 200 || a.Run != "run of iteration_2/rank0.pickle" {
		t.Errorf("summaries %+v %+v", a, b)
	}
}

func mustMsgpack(t *testing.T, v any) []byte {
	t.Helper()
	b, err := msgpack.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMergeGeneratedRankSet runs the whole path on generated snapshots: decode, analyze, summarize, merge. The
// rank set's first pipeline stage holds more memory, which the per-stage view must show, and each rank's
// reserved bytes must equal the generator's own total.
func TestMergeGeneratedRankSet(t *testing.T) {
	rs := gen.RankSet{Ranks: 8, Stages: 2, Base: gen.Config{Seed: 3, Entries: 3000}}
	m := New(Options{Stages: 2, World: 8})
	for r := range rs.Ranks {
		var buf bytes.Buffer
		st, err := gen.Write(&buf, rs.RankConfig(r))
		if err != nil {
			t.Fatal(err)
		}
		in, err := load.Decode(context.Background(), gen.RankPath("dump", r), &buf)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := analyze.Analyze(context.Background(), in, analyze.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if tot, _ := rep.AllocatorTotals(); tot.ReservedBytes != st.ReservedBytes || tot.AllocatedBytes != st.AllocatedBytes {
			t.Fatalf("rank %d: analyzed reserved/allocated %d/%d, generator wrote %d/%d", r, tot.ReservedBytes,
				tot.AllocatedBytes, st.ReservedBytes, st.AllocatedBytes)
		}
		s := Summarize(rep, "")
		if s.Rank != r {
			t.Fatalf("summary rank %d from path %s, want %d", s.Rank, rep.File, r)
		}
		m.Add(s)
	}
	c := m.Result()
	if c.Ranks != 8 || len(c.Stages) != 2 || c.Stages[0].Ranks != 4 {
		t.Fatalf("ranks %d stages %+v", c.Ranks, c.Stages)
	}
	if c.Stages[0].ReservedBytes+c.Stages[1].ReservedBytes != c.Reserved.Sum {
		t.Errorf("stage sums do not add up to the total")
	}
}

// TestSummarizePeakByKind: a rank summary carries the peak each input kind recorded. A tracer file and a profiler
// timeline have no allocator totals, so the old fallback to allocated bytes summarized their peak as 0.
func TestSummarizePeakByKind(t *testing.T) {
	tests := []struct {
		name string
		r    *report.Report
		want int64
	}{
		{"snapshot with trace", &report.Report{Header: report.Header{Peak: &report.Peak{Bytes: 30 * MiB}}, Part: &report.SnapshotReport{Totals: report.Totals{AllocatedBytes: 10 * MiB}}}, 30 * MiB},
		{"snapshot without trace", &report.Report{Part: &report.SnapshotReport{Totals: report.Totals{AllocatedBytes: 10 * MiB}}}, 10 * MiB},
		{"tracer", &report.Report{Part: &report.TracerReport{Tracer: &report.TracerView{}, PeakBytes: 4 << 30, ListedBytes: 3 << 30}}, 4 << 30},
		{"timeline", &report.Report{Part: &report.TimelineReport{MemoryTimeline: &report.TimelineView{PeakBytes: 5 * MiB}}}, 5 * MiB},
		{"log", &report.Report{Part: &report.LogReport{Log: &report.LogView{PeakAllocatedBytes: 7 * MiB}}}, 7 * MiB},
		{"log without allocated", &report.Report{Part: &report.LogReport{Log: &report.LogView{PeakAllocatedBytes: -1}}}, 0},
	}
	for _, tc := range tests {
		if got := Summarize(tc.r, "").PeakBytes; got != tc.want {
			t.Errorf("%s: peak %d, want %d", tc.name, got, tc.want)
		}
	}
}

// MiB is one mebibyte, for readable sizes in tests.
const MiB = 1 << 20

// TestMergeQuantilesByHand merges ranks whose statistics are worked out by hand: percentiles are the sorted
// values at index ⌊(n−1)·p/100⌋, imbalance is max/median − 1, and neither depends on the order of merging.
func TestMergeQuantilesByHand(t *testing.T) {
	const gib = int64(1) << 30
	same := func(n int, v int64) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	tests := []struct {
		name                       string
		reserved                   []int64 // per rank, in rank order
		min, median, p90, p99, max int64
		imbalancePct               float64
		maxRank                    int
	}{
		// Eight copies of one snapshot: every quantile is the value itself, and nothing is unbalanced.
		{"identical", same(8, 40194015232), 40194015232, 40194015232, 40194015232, 40194015232, 40194015232, 0, 0},
		// Sorted: 10 20 30 40 50 60 70 200 GiB; median index floor(7·0.5) = 3 → 40, p90 index floor(7·0.9) = 6 → 70,
		// p99 index floor(7·0.99) = 6 → 70; imbalance 200/40 − 1 = 400 %.
		{"skewed", []int64{70 * gib, 10 * gib, 200 * gib, 40 * gib, 30 * gib, 60 * gib, 20 * gib, 50 * gib},
			10 * gib, 40 * gib, 70 * gib, 70 * gib, 200 * gib, 400, 2},
		// Two ranks: the lower one is the median (index 0), p90 and p99 index floor(0.9) = 0; 30/10 − 1 = 200 %.
		{"two", []int64{30 * gib, 10 * gib}, 10 * gib, 10 * gib, 10 * gib, 10 * gib, 30 * gib, 200, 0},
		// One rank is its own median and maximum.
		{"one", []int64{5 * gib}, 5 * gib, 5 * gib, 5 * gib, 5 * gib, 5 * gib, 0, 0},
		// Nine ranks, one far above: median index 4 → 8, p90 index floor(8·0.9) = 7 → 8, p99 floor(7.92) = 7 → 8;
		// 9/8 − 1 = 12.5 %.
		{"nine", []int64{8, 8, 8, 8, 8, 8, 8, 8, 9}, 8, 8, 8, 8, 9, 12.5, 8},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sums := make([]*RankSummary, len(tc.reserved))
			for r, v := range tc.reserved {
				sums[r] = &RankSummary{Kind: SummaryKind, Version: SummaryVersion, File: fmt.Sprintf("rank%d.pickle", r),
					Rank: r, Iteration: -1, Stage: -1, ReservedBytes: v, AllocatedBytes: v / 2, RequestedBytes: v / 2, PeakBytes: v}
			}
			rev := slices.Clone(sums)
			slices.Reverse(rev)
			for _, order := range [][]*RankSummary{sums, rev} {
				got := mergeAll(Options{}, order).Result()
				for name, s := range map[string]MetricStats{"reserved": got.Reserved, "peak": got.Peak} {
					if s.Min != tc.min || s.Median != tc.median || s.P90 != tc.p90 || s.P99 != tc.p99 || s.Max != tc.max || s.MaxRank != tc.maxRank {
						t.Errorf("%s: min %d median %d p90 %d p99 %d max %d@%d, want %d %d %d %d %d@%d", name, s.Min, s.Median, s.P90,
							s.P99, s.Max, s.MaxRank, tc.min, tc.median, tc.p90, tc.p99, tc.max, tc.maxRank)
					}
				}
				if got.ImbalancePct != tc.imbalancePct || got.PeakImbalancePct != tc.imbalancePct {
					t.Errorf("imbalance reserved %v peak %v, want %v", got.ImbalancePct, got.PeakImbalancePct, tc.imbalancePct)
				}
				if got.Allocated.Median != tc.median/2 {
					t.Errorf("allocated median %d, want %d", got.Allocated.Median, tc.median/2)
				}
			}
		})
	}
}

// TestMergeQuantilesBetweenExtremes checks the invariant min ≤ median ≤ p90 ≤ max and imbalance ≥ 0 over many
// random rank sets, including sizes of several thousand ranks and values that differ by a byte.
func TestMergeQuantilesBetweenExtremes(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	for trial := range 200 {
		n := 1 + rng.IntN(64)
		if trial%20 == 0 {
			n = 5000 + rng.IntN(5000)
		}
		base := int64(1+rng.IntN(80)) << 30
		m := New(Options{})
		for r := range n {
			v := base + int64(rng.IntN(3)) // values a byte apart: a bucketed sketch rounds them past the max
			m.Add(&RankSummary{Rank: r, Iteration: 1, Stage: -1, ReservedBytes: v, PeakBytes: v})
		}
		c := m.Result()
		s := c.Reserved
		if !(s.Min <= s.Median && s.Median <= s.P90 && s.P90 <= s.P99 && s.P99 <= s.Max) || c.ImbalancePct < 0 || c.PeakImbalancePct < 0 {
			t.Fatalf("%d ranks: min %d median %d p90 %d max %d imbalance %v", n, s.Min, s.Median, s.P90, s.Max, c.ImbalancePct)
		}
	}
}

// TestImbalanceUnnamedRank: when the paths name no rank, the imbalance finding does not call the largest "rank -1".
func TestImbalanceUnnamedRank(t *testing.T) {
	m := New(Options{})
	for i, v := range []int64{10, 10, 30} {
		m.Add(&RankSummary{File: fmt.Sprintf("copy%d.pickle", i), Rank: -1, Iteration: -1, Stage: -1, ReservedBytes: v << 30})
	}
	c := m.Result()
	if c.ImbalancePct != 200 {
		t.Errorf("imbalance %v, want 30/10 − 1 = 200 %%", c.ImbalancePct)
	}
	found := false
	for _, r := range c.Recommendations {
		if r.ID == "rank-imbalance" {
			found = true
			if strings.Contains(r.Evidence, "-1") {
				t.Errorf("evidence names rank -1: %s", r.Evidence)
			}
		}
	}
	if !found {
		t.Error("no rank-imbalance finding at 200 %")
	}
}
