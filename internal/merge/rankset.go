package merge

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/memscan/memscan/findings"
)

// RankSet is what the summaries merged say about the rank set: the ranks missing, the ranks given more than
// once, and whether one iteration's ranks come from more than one run.
type RankSet struct {
	// World is the number of ranks the set is checked against: Options.World when given (WorldGiven), else the
	// highest rank + 1, 0 when no summary names a rank.
	World      int  `json:"world" msgpack:"world"`
	WorldGiven bool `json:"world_given" msgpack:"world_given"`
	// Distinct counts the distinct ranks of each iteration, summed; Unnamed the summaries whose path named no
	// rank.
	Distinct int `json:"distinct_ranks" msgpack:"distinct_ranks"`
	Unnamed  int `json:"unnamed" msgpack:"unnamed"`
	// Missing lists, per iteration, the ranks below World that no summary names, as ranges; MissingRanks counts
	// them.
	Missing      []RankRange `json:"missing" msgpack:"missing"`
	MissingRanks int         `json:"missing_ranks" msgpack:"missing_ranks"`
	// Duplicates are the ranks that more than one summary of one run and iteration names: the same snapshot
	// summarized twice, or copies of a summary.
	Duplicates []Duplicate `json:"duplicates" msgpack:"duplicates"`
	// Runs is set when a rank of one iteration comes from summaries of different runs (RankSummary.Run): every
	// run of those iterations with its number of summaries.
	Runs []RunCount `json:"runs" msgpack:"runs"`
}

// RankRange is the ranks First to Last of one iteration.
type RankRange struct {
	Iteration int `json:"iteration" msgpack:"iteration"`
	First     int `json:"first" msgpack:"first"`
	Last      int `json:"last" msgpack:"last"`
}

// Duplicate is a rank of one run and iteration named by several summaries: the files they were read from
// (Sources, what to remove) and the snapshots they summarize (Files).
type Duplicate struct {
	Iteration int      `json:"iteration" msgpack:"iteration"`
	Rank      int      `json:"rank" msgpack:"rank"`
	Run       string   `json:"run" msgpack:"run"`
	Sources   []string `json:"sources" msgpack:"sources"`
	Files     []string `json:"files" msgpack:"files"`
}

// RunCount is one run and how many of the summaries merged come from it.
type RunCount struct {
	Run       string `json:"run" msgpack:"run"`
	Summaries int    `json:"summaries" msgpack:"summaries"`
}

// checkRankSet checks rows (sorted by iteration, rank, file) as a rank set.
func checkRankSet(rows []RankRow, opts Options) RankSet {
	rs := RankSet{World: opts.World, WorldGiven: opts.World > 0, Missing: []RankRange{}, Duplicates: []Duplicate{}, Runs: []RunCount{}}
	if !rs.WorldGiven {
		for _, r := range rows {
			rs.World = max(rs.World, r.Rank+1)
		}
	}
	mixed := map[int]bool{} // iterations where one rank comes from several runs
	for i := 0; i < len(rows); {
		it := rows[i].Iteration
		next, named := 0, false // the lowest rank of this iteration not yet seen; whether any rank is named
		for ; i < len(rows) && rows[i].Iteration == it; i++ {
			if rows[i].Rank < 0 {
				rs.Unnamed++
				continue
			}
			// The summaries of one rank: rows i..j−1.
			j := i + 1
			for j < len(rows) && rows[j].Iteration == it && rows[j].Rank == rows[i].Rank {
				j++
			}
			rank := rows[i].Rank
			if rank > next {
				rs.Missing = append(rs.Missing, RankRange{Iteration: it, First: next, Last: rank - 1})
				rs.MissingRanks += rank - next
			}
			next, named = rank+1, true
			rs.Distinct++
			if j-i > 1 {
				if rs.addDuplicates(rows[i:j]) {
					mixed[it] = true
				}
			}
			i = j - 1
		}
		// An iteration whose summaries name no rank at all says nothing about which are missing.
		if named && rs.World > next {
			rs.Missing = append(rs.Missing, RankRange{Iteration: it, First: next, Last: rs.World - 1})
			rs.MissingRanks += rs.World - next
		}
	}
	// addDuplicates walks its runs in map order: put the list in (iteration, rank, run) order once, here, rather
	// than re-sorting it for every repeated rank.
	slices.SortFunc(rs.Duplicates, func(a, b Duplicate) int {
		return cmp.Or(cmp.Compare(a.Iteration, b.Iteration), cmp.Compare(a.Rank, b.Rank), strings.Compare(a.Run, b.Run))
	})
	if len(mixed) > 0 {
		counts := map[string]int{}
		for _, r := range rows {
			if mixed[r.Iteration] {
				counts[r.Run]++
			}
		}
		for run, n := range counts {
			rs.Runs = append(rs.Runs, RunCount{Run: run, Summaries: n})
		}
		slices.SortFunc(rs.Runs, func(a, b RunCount) int { return strings.Compare(a.Run, b.Run) })
	}
	return rs
}

// addDuplicates records the summaries of one rank and iteration (several rows): those of one run are
// duplicates. It reports whether they come from more than one run.
func (rs *RankSet) addDuplicates(same []RankRow) (runs bool) {
	byRun := map[string][]RankRow{}
	for _, r := range same {
		byRun[r.Run] = append(byRun[r.Run], r)
	}
	for run, rows := range byRun {
		if len(rows) > 1 {
			d := Duplicate{Iteration: same[0].Iteration, Rank: same[0].Rank, Run: run}
			for _, r := range rows { // in row order: by file, then source
				d.Sources, d.Files = append(d.Sources, r.Source), append(d.Files, r.File)
			}
			rs.Duplicates = append(rs.Duplicates, d)
		}
	}
	return len(byRun) > 1
}

// Where names the summaries of a repeated rank: the files they were read from, or where those are unknown (a
// summary added in memory) the snapshots they summarize.
func (d Duplicate) Where() string {
	names := slices.Clone(d.Sources)
	for i, s := range names {
		if s == "" {
			names[i] = d.Files[i]
		}
	}
	return strings.Join(names, ", ")
}

// findings words what is wrong with the rank set.
func (rs RankSet) findings(opts Options) []findings.Finding {
	var out []findings.Finding
	if len(rs.Runs) > 1 {
		out = append(out, findings.NewMixedRuns(len(rs.Runs), RunList(rs.Runs, 3)))
	}
	if len(rs.Duplicates) > 0 {
		d := rs.Duplicates[0]
		out = append(out, findings.NewDuplicateRanks(len(rs.Duplicates), fmt.Sprintf("rank %d%s in %s", d.Rank, iterationSuffix(d.Iteration), d.Where())))
	}
	if rs.MissingRanks > 0 {
		out = append(out, findings.NewMissingRanks(rs.MissingRanks, rs.World, RangeList(rs.Missing, 8), rs.WorldGiven))
	}
	if opts.Stages > 0 && !rs.WorldGiven && rs.World > 0 && rs.World%opts.Stages != 0 {
		out = append(out, findings.NewStagesWithoutWorld(rs.World, opts.Stages))
	}
	return out
}

// iterationSuffix is " of iteration N", or "" for a summary whose path named none.
func iterationSuffix(it int) string {
	if it < 0 {
		return ""
	}
	return fmt.Sprintf(" of iteration %d", it)
}

// RangeList renders missing ranks as "972-999, 1005 (iteration 10)", at most limit ranges (0: all) and a count
// of the rest.
func RangeList(ranges []RankRange, limit int) string {
	var parts []string
	several := len(ranges) > 0 && ranges[0].Iteration != ranges[len(ranges)-1].Iteration
	for i, r := range ranges {
		if limit > 0 && i == limit {
			parts = append(parts, fmt.Sprintf("… %d more ranges", len(ranges)-limit))
			break
		}
		s := fmt.Sprint(r.First)
		if r.Last > r.First {
			s += fmt.Sprintf("-%d", r.Last)
		}
		if several {
			s += fmt.Sprintf(" (iteration %s)", IterationList([]int{r.Iteration}))
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// RunList renders runs as "A (8 summaries), B (8 summaries)", at most limit (0: all) and a count of the rest.
func RunList(runs []RunCount, limit int) string {
	var parts []string
	for i, r := range runs {
		if limit > 0 && i == limit {
			parts = append(parts, fmt.Sprintf("… %d more", len(runs)-limit))
			break
		}
		name := r.Run
		if name == "" {
			name = "(run not recorded)"
		}
		parts = append(parts, fmt.Sprintf("%s (%d summaries)", name, r.Summaries))
	}
	return strings.Join(parts, ", ")
}
