package merge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/memscan/memscan/findings"
)

// percentile is the p-th percentile of v as this test works it out: sort, take index (n−1)·p/100 rounded down.
func percentile(v []int64, p int) int64 {
	s := slices.Sorted(slices.Values(v))
	return s[(len(s)-1)*p/100]
}

// TestMerge100kRanks merges 100,000 generated ranks in 8 pipeline stages and checks p50, p90 and p99 of every
// measure and the outliers by reserved and by peak against values worked out here from the summaries: each
// stage's median by sorting, an outlier being more than 10 % above it (in integers). Rank 99,000 of the last
// stage holds 30 % more than its stage, still below the job's median: it is an outlier of its stage, which the
// global median used to hide; rank 94,092 is 76 % above its stage's median.
func TestMerge100kRanks(t *testing.T) {
	const n, stages = 100000, 8
	sums := syntheticSummaries(n, stages)
	stageOf := func(r int) int { return r / (n / stages) }
	// Stage medians as generated, before the two injected ranks (each is one of 12,500 values; moving it up
	// moves no median, so the outlier test below uses the final values).
	lateMedian := percentile(func() []int64 {
		var v []int64
		for _, s := range sums[7*n/stages:] {
			v = append(v, s.ReservedBytes)
		}
		return v
	}(), 50)
	for _, x := range []struct {
		rank int
		pct  int64
	}{{99000, 130}, {94092, 176}} {
		s := sums[x.rank]
		s.ReservedBytes = lateMedian * x.pct / 100
		s.AllocatedBytes, s.RequestedBytes, s.ExternalFreeBytes = s.ReservedBytes*8/10, s.ReservedBytes*8/10-1<<20, s.ReservedBytes-s.ReservedBytes*8/10
	}
	m := mergeAll(Options{Stages: stages, World: n}, sums)
	if err := m.Err(); err != nil {
		t.Fatal(err)
	}
	got := m.Result()

	measures := []struct {
		name   string
		stats  MetricStats
		metric func(*RankSummary) int64
		out    []Outlier
	}{
		{"reserved", got.Reserved, func(s *RankSummary) int64 { return s.ReservedBytes }, got.Outliers},
		{"allocated", got.Allocated, func(s *RankSummary) int64 { return s.AllocatedBytes }, nil},
		{"peak", got.Peak, func(s *RankSummary) int64 { return s.PeakBytes }, got.PeakOutliers},
	}
	for _, ms := range measures {
		var all []int64
		byStage := map[int][]int64{}
		for _, s := range sums {
			all = append(all, ms.metric(s))
			byStage[stageOf(s.Rank)] = append(byStage[stageOf(s.Rank)], ms.metric(s))
		}
		if ms.stats.Median != percentile(all, 50) || ms.stats.P90 != percentile(all, 90) || ms.stats.P99 != percentile(all, 99) {
			t.Errorf("%s: p50 %d p90 %d p99 %d, want %d %d %d", ms.name, ms.stats.Median, ms.stats.P90, ms.stats.P99,
				percentile(all, 50), percentile(all, 90), percentile(all, 99))
		}
		if ms.out == nil {
			continue
		}
		medians := map[int]int64{}
		for st, v := range byStage {
			medians[st] = percentile(v, 50)
		}
		want := map[int]int64{} // outlier rank → its stage's median
		for _, s := range sums {
			med := medians[stageOf(s.Rank)]
			if ms.metric(s)*100 > med*110 {
				want[s.Rank] = med
			}
		}
		if len(ms.out) != len(want) {
			t.Errorf("%s: %d outliers, want %d", ms.name, len(ms.out), len(want))
		}
		for i, o := range ms.out {
			if med, ok := want[o.Rank]; !ok || o.MedianBytes != med || o.Stage != stageOf(o.Rank) || o.GroupRanks != n/stages {
				t.Errorf("%s: outlier %+v, want the median %d of stage %d", ms.name, o, med, stageOf(o.Rank))
			}
			if i > 0 && o.AbovePct > ms.out[i-1].AbovePct {
				t.Errorf("%s: outliers not by gap, largest first, at %d", ms.name, i)
			}
		}
	}
	above := map[int]float64{}
	for _, o := range got.Outliers {
		above[o.Rank] = o.AbovePct
	}
	if p, v := above[99000], sums[99000].ReservedBytes; p < 29 || p > 31 || v*100 > got.Reserved.Median*110 {
		t.Errorf("rank 99000: %.1f%% above its stage (want about 30), reserved %d vs job median %d", p, v, got.Reserved.Median)
	}
	if p := above[94092]; p < 75 || p > 77 {
		t.Errorf("rank 94092: %.1f%% above its stage, want about 76", p)
	}
	if rs := got.RankSet; rs.World != n || !rs.WorldGiven || rs.Distinct != n || rs.MissingRanks != 0 || len(rs.Duplicates) != 0 {
		t.Errorf("rank set %+v", rs)
	}
}

// rankSetCase is 16 ranks of run A at iteration 5 in which rank 3 is given twice, ranks 10 and 11 are missing, and
// a second run B of the same iteration holds ranks 0-7.
func rankSetCase() []*RankSummary {
	var out []*RankSummary
	add := func(run string, rank int, file string) {
		out = append(out, &RankSummary{Kind: SummaryKind, Version: SummaryVersion, File: file, Source: file + ".summary.msgpack",
			Run: run, Rank: rank, Iteration: 5, Stage: -1, ReservedBytes: 1 << 30, AllocatedBytes: 1 << 29, PeakBytes: 1 << 29})
	}
	for r := range 16 {
		if r != 10 && r != 11 {
			add("A/iteration_*/rank*.pickle", r, fmt.Sprintf("A/iteration_5/rank%d.pickle", r))
		}
	}
	add("A/iteration_*/rank*.pickle", 3, "A/iteration_5/copy/rank3.pickle")
	for r := range 8 {
		add("B/iteration_*/rank*.pickle", r, fmt.Sprintf("B/iteration_5/rank%d.pickle", r))
	}
	return out
}

// TestRankSet: ranks given twice, missing ranks and a second run of the iteration are named, in any merge order.
func TestRankSet(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    Options
		missing []RankRange
	}{
		{"world derived", Options{}, []RankRange{{5, 10, 11}}},
		{"world given", Options{World: 20}, []RankRange{{5, 10, 11}, {5, 16, 19}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sums := rankSetCase()
			rev := slices.Clone(sums)
			slices.Reverse(rev)
			got, back := mergeAll(tc.opts, sums).Result(), mergeAll(tc.opts, rev).Result()
			if !reflect.DeepEqual(got, back) {
				t.Error("the report depends on the merge order")
			}
			rs := got.RankSet
			if !slices.Equal(rs.Missing, tc.missing) {
				t.Errorf("missing %+v, want %+v", rs.Missing, tc.missing)
			}
			wantDup := []Duplicate{{Iteration: 5, Rank: 3, Run: "A/iteration_*/rank*.pickle",
				Sources: []string{"A/iteration_5/copy/rank3.pickle.summary.msgpack", "A/iteration_5/rank3.pickle.summary.msgpack"},
				Files:   []string{"A/iteration_5/copy/rank3.pickle", "A/iteration_5/rank3.pickle"}}}
			if !reflect.DeepEqual(rs.Duplicates, wantDup) {
				t.Errorf("duplicates %+v, want %+v", rs.Duplicates, wantDup)
			}
			wantRuns := []RunCount{{"A/iteration_*/rank*.pickle", 15}, {"B/iteration_*/rank*.pickle", 8}}
			if !slices.Equal(rs.Runs, wantRuns) {
				t.Errorf("runs %+v, want %+v", rs.Runs, wantRuns)
			}
			if rs.Distinct != 14 || got.Ranks != 23 {
				t.Errorf("%d distinct ranks of %d summaries, want 14 of 23", rs.Distinct, got.Ranks)
			}
			ids := map[findings.ID]bool{}
			for _, f := range got.Recommendations {
				ids[f.ID] = true
			}
			for _, id := range []findings.ID{findings.MixedRuns, findings.DuplicateRanks, findings.MissingRanks} {
				if !ids[id] {
					t.Errorf("no %s finding: %v", id, ids)
				}
			}
		})
	}
	// One run alone, complete: nothing to say.
	var clean []*RankSummary
	for _, s := range rankSetCase() {
		if s.Run == "B/iteration_*/rank*.pickle" {
			clean = append(clean, s)
		}
	}
	rs := mergeAll(Options{}, clean).Result().RankSet
	if rs.MissingRanks != 0 || len(rs.Duplicates) != 0 || len(rs.Runs) != 0 || rs.World != 8 || rs.Distinct != 8 {
		t.Errorf("a clean rank set: %+v", rs)
	}
}

// writeCrossRank writes a merge's report as memscan merge writes cross_rank.msgpack.
func writeCrossRank(t *testing.T, path string, c *CrossRank) {
	t.Helper()
	if err := os.WriteFile(path, encode(t, c), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMergeOfMergesEqualsFlat: summaries merged in groups, and the groups' cross-rank reports merged again (two
// levels deep), give exactly the report of merging every summary at once: rows, percentiles, outliers, stages
// derived from the final world, categories, the rank set and the findings. The set has two iterations, a rank
// given twice and a gap, so every part of the report has something in it.
func TestMergeOfMergesEqualsFlat(t *testing.T) {
	dir := t.TempDir()
	sums := syntheticSummaries(4000, 8)[:3990] // the last ten missing: a world the stages do not divide
	for _, s := range sums[:500] {
		c := *s
		c.Iteration, c.File = 2, fmt.Sprintf("iteration_2/rank%d_memory_snapshot.pickle", s.Rank)
		sums = append(sums, &c)
	}
	dup := *sums[7]
	dup.File = "copy/" + dup.File
	sums = append(sums, &dup)
	files := writeSummaryFiles(t, dir, sums[:len(sums)-1])
	dupFile := filepath.Join(dir, "copy.summary.msgpack")
	if err := os.WriteFile(dupFile, encode(t, &dup), 0o644); err != nil {
		t.Fatal(err)
	}
	files = append(files, dupFile)
	slices.Sort(files)

	for _, opts := range []Options{{Stages: 8}, {Stages: 8, World: 4000}, {}} {
		t.Run(fmt.Sprintf("stages %d world %d", opts.Stages, opts.World), func(t *testing.T) {
			fo := FilesOptions{Options: opts, Jobs: 3, Iterations: AllIterations}
			flat, failures, err := MergeFiles(context.Background(), files, fo)
			if err != nil || len(failures) > 0 {
				t.Fatal(err, failures)
			}
			// Level 1: groups of 97 files; level 2: groups of 7 level-1 reports; then the final merge.
			level := files
			for depth, group := range []int{97, 7} {
				var next []string
				for i := 0; i < len(level); i += group {
					part, failures, err := MergeFiles(context.Background(), level[i:min(i+group, len(level))], fo)
					if err != nil || len(failures) > 0 {
						t.Fatal(err, failures)
					}
					p := filepath.Join(dir, fmt.Sprintf("level%d_%04d_cross_rank.msgpack", depth, i))
					writeCrossRank(t, p, part)
					next = append(next, p)
				}
				level = next
			}
			tree, failures, err := MergeFiles(context.Background(), level, fo)
			if err != nil || len(failures) > 0 {
				t.Fatal(err, failures)
			}
			if !reflect.DeepEqual(flat, tree) {
				a, _ := json.Marshal(flat)
				b, _ := json.Marshal(tree)
				t.Fatalf("merge of merges differs from the flat merge (%d vs %d JSON bytes, equal %v)", len(a), len(b), bytes.Equal(a, b))
			}
			if flat.Ranks != len(sums) || len(flat.RankSet.Duplicates) != 1 || len(flat.Iterations) != 2 || len(flat.Categories) == 0 {
				t.Errorf("the set lacks what it is built to have: %d ranks, %+v, iterations %v", flat.Ranks, flat.RankSet.Duplicates, flat.Iterations)
			}
		})
	}
}

// TestMergeOfMergesIterationFilter: a cross-rank report of one iteration merges under --iteration like its
// summaries; one spanning two iterations cannot split its category sums and fails alone, saying so.
func TestMergeOfMergesIterationFilter(t *testing.T) {
	dir := t.TempDir()
	sums := syntheticSummaries(64, 2)
	for _, s := range sums[:32] {
		c := *s
		c.Iteration = 2
		sums = append(sums, &c)
	}
	m1, m2, both := New(Options{}), New(Options{}), New(Options{})
	for _, s := range sums {
		both.Add(s)
		if s.Iteration == 1 {
			m1.Add(s)
		} else {
			m2.Add(s)
		}
	}
	p1, p2, pb := filepath.Join(dir, "it1.msgpack"), filepath.Join(dir, "it2.msgpack"), filepath.Join(dir, "both.msgpack")
	writeCrossRank(t, p1, m1.Result())
	writeCrossRank(t, p2, m2.Result())
	writeCrossRank(t, pb, both.Result())
	it2 := IterationFilter{want: 2}
	got, failures, err := MergeFiles(context.Background(), []string{p1, p2}, FilesOptions{Jobs: 1, Iterations: it2})
	if err != nil || len(failures) > 0 || !reflect.DeepEqual(got, m2.Result()) {
		t.Errorf("iteration 2 of two one-iteration reports: %v %v, equal %v", err, failures, reflect.DeepEqual(got, m2.Result()))
	}
	_, failures, err = MergeFiles(context.Background(), []string{pb}, FilesOptions{Jobs: 1, Iterations: it2})
	if err != nil || len(failures) != 1 {
		t.Fatalf("err %v, failures %v", err, failures)
	}
	if want := "a cross-rank report of iterations 1, 2: its category sums cannot be split by --iteration 2"; !bytes.Contains([]byte(failures[0].Error()), []byte(want)) {
		t.Errorf("failure %v, want %q", failures[0], want)
	}
}

// TestRankSetFindings: each rank-set finding fires on the set it describes and stays silent on a complete one.
// 972 ranks with --stages 8 and no --world: 972 is not a multiple of 8, as when ranks 972-999 of 1,000 are
// missing, which shifts every rank's stage (125 per stage, not 122); given the world, the stages are right and
// the missing ranks are named instead.
func TestRankSetFindings(t *testing.T) {
	ranks := func(n int) []*RankSummary {
		var out []*RankSummary
		for r := range n {
			out = append(out, &RankSummary{Kind: SummaryKind, Version: SummaryVersion, File: fmt.Sprintf("rank%d.pickle", r),
				Run: "rank*.pickle", Rank: r, Iteration: 1, Stage: -1, ReservedBytes: 1 << 30})
		}
		return out
	}
	withCopy := append(ranks(8), &RankSummary{Kind: SummaryKind, Version: SummaryVersion, File: "copy/rank3.pickle", Run: "rank*.pickle", Rank: 3, Iteration: 1, Stage: -1, ReservedBytes: 1 << 30})
	otherRun := append(ranks(8), &RankSummary{Kind: SummaryKind, Version: SummaryVersion, File: "b/rank3.pickle", Run: "b/rank*.pickle", Rank: 3, Iteration: 1, Stage: -1, ReservedBytes: 1 << 30})
	gap := slices.Delete(ranks(8), 2, 3)
	tests := []struct {
		name string
		opts Options
		sums []*RankSummary
		want []findings.ID
	}{
		{"complete", Options{Stages: 8}, ranks(1000), nil},
		{"complete, world given", Options{Stages: 8, World: 1000}, ranks(1000), nil},
		{"last ranks missing, no world", Options{Stages: 8}, ranks(972), []findings.ID{findings.StagesWithoutWorld}},
		{"last ranks missing, world given", Options{Stages: 8, World: 1000}, ranks(972), []findings.ID{findings.MissingRanks}},
		{"a gap", Options{}, gap, []findings.ID{findings.MissingRanks}},
		{"a copy", Options{}, withCopy, []findings.ID{findings.DuplicateRanks}},
		{"another run", Options{}, otherRun, []findings.ID{findings.MixedRuns}},
	}
	rankSet := []findings.ID{findings.StagesWithoutWorld, findings.MissingRanks, findings.DuplicateRanks, findings.MixedRuns}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []findings.ID
			for _, f := range mergeAll(tc.opts, tc.sums).Result().Recommendations {
				if slices.Contains(rankSet, f.ID) {
					got = append(got, f.ID)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("findings %v, want %v", got, tc.want)
			}
		})
	}
}
