package results

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/merge"
	"github.com/memscan/memscan/internal/units"
)

// crossRankCategories is how many categories the text report lists, the rest summed in one line.
const crossRankCategories = 64

// WriteCrossRankText renders memscan merge's cross-rank report as plain text. maxRows bounds each list (the
// per-rank table, the outliers, the repeated ranks; 0 = all); the rows shown are the first in rank order, the
// outliers the largest gaps, and a line says how many more the report files hold.
func WriteCrossRankText(w io.Writer, c *merge.CrossRank, maxRows int) error {
	w = printable(w)
	var b strings.Builder
	rs := c.RankSet
	switch {
	case len(c.Iterations) > 1:
		fmt.Fprintf(&b, "Cross-rank memory report: %d summaries from %d iterations (%s); merge one with --iteration N%s\n\n",
			c.Ranks, len(c.Iterations), merge.IterationList(c.Iterations), merge.UnknownIterationHint(c.Iterations))
	case rs.Distinct+rs.Unnamed != c.Ranks:
		fmt.Fprintf(&b, "Cross-rank memory report: %d summaries of %d ranks\n\n", c.Ranks, rs.Distinct+rs.Unnamed)
	default:
		fmt.Fprintf(&b, "Cross-rank memory report: %d ranks\n\n", c.Ranks)
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "metric\tmin\tmedian\tp90\tp99\tmax\tmax rank\tsum\t\n")
	for _, m := range []struct {
		name string
		s    merge.MetricStats
	}{{"reserved", c.Reserved}, {"allocated", c.Allocated}, {"peak", c.Peak}} {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", m.name, units.Bytes(m.s.Min), units.Bytes(m.s.Median),
			units.Bytes(m.s.P90), units.Bytes(m.s.P99), units.Bytes(m.s.Max), known(m.s.MaxRank), units.Bytes(m.s.Sum))
	}
	tw.Flush()
	fmt.Fprintf(&b, "\nimbalance (max/median − 1): reserved %.1f%%, peak %.1f%%; efficiency (requested/reserved) %.1f%%\n",
		c.ImbalancePct, c.PeakImbalancePct, c.EfficiencyPct)
	fmt.Fprintf(&b, "free inside reserved: internal %s, external %s; OOM events: %d on %d ranks\n",
		units.Bytes(c.InternalFreeBytes), units.Bytes(c.ExternalFreeBytes), c.OOMs, c.OOMRanks)
	writeRankSet(&b, rs, maxRows)
	of := fmt.Sprintf("%d ranks", c.Ranks)
	if rs.Distinct+rs.Unnamed != c.Ranks {
		of = fmt.Sprintf("%d summaries", c.Ranks) // a rank given twice is judged twice
	}
	writeOutliers(&b, "reserved", c.Outliers, of, maxRows)
	writeOutliers(&b, "peak", c.PeakOutliers, of, maxRows)
	if len(c.Stages) > 0 {
		b.WriteString("\nPer pipeline stage:\n")
		tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "stage\tranks\tmean reserved\tmin reserved\tmax reserved\tmax peak\tOOMs\t\n")
		for _, s := range c.Stages {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\t%d\t\n", s.Stage, s.Ranks, units.Bytes(s.MeanReserved),
				units.Bytes(s.MinReserved), units.Bytes(s.MaxReserved), units.Bytes(s.MaxPeak), s.OOMs)
		}
		tw.Flush()
	}
	if len(c.Categories) > 0 {
		b.WriteString("\nCategories (live bytes summed over ranks):\n")
		for _, cs := range merge.TopCategories(c.Categories, crossRankCategories) {
			fmt.Fprintf(&b, "  %-28s %10s  %d allocations\n", oneLine(cs.Name), units.Bytes(cs.Bytes), cs.Count)
		}
	}
	if len(c.Recommendations) > 0 {
		b.WriteString("\nFindings:\n")
		for _, r := range c.Recommendations {
			fmt.Fprintf(&b, "  [%s] %s: %s. %s\n", r.Severity, r.Title, r.Evidence, r.Advice)
		}
	}
	b.WriteString("\nPer rank:\n")
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "rank\titer\tstage\treserved\tallocated\tpeak\teff%%\tOOMs\t  file\n")
	rows := c.Rows[:shown(len(c.Rows), maxRows)]
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%d\t  %s\n", known(r.Rank), known(r.Iteration), known(r.Stage), units.Bytes(r.ReservedBytes),
			units.Bytes(r.AllocatedBytes), units.Bytes(r.PeakBytes), r.EfficiencyPct, r.OOMs, oneLine(r.File))
	}
	tw.Flush()
	if len(rows) < len(c.Rows) {
		fmt.Fprintf(&b, "… %d more ranks (all rows are in the report files)\n", len(c.Rows)-len(rows))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// shown is how many of n entries a list prints under maxRows (0 = all).
func shown(n, maxRows int) int {
	if maxRows > 0 && n > maxRows {
		return maxRows
	}
	return n
}

// writeRankSet says which ranks the summaries cover: the world checked against, the ranks missing, repeated,
// or coming from several runs.
func writeRankSet(b *strings.Builder, rs merge.RankSet, maxRows int) {
	if rs.World == 0 {
		if rs.Unnamed > 0 {
			fmt.Fprintf(b, "\nRank set: the %d summaries name no rank; nothing to check\n", rs.Unnamed)
		}
		return
	}
	from := "the highest rank + 1"
	if rs.WorldGiven {
		from = "--world"
	}
	fmt.Fprintf(b, "\nRank set: world %d (%s); %d distinct ranks", rs.World, from, rs.Distinct)
	if rs.Unnamed > 0 {
		fmt.Fprintf(b, ", %d summaries naming no rank", rs.Unnamed)
	}
	switch {
	case rs.MissingRanks > 0:
		fmt.Fprintf(b, "; %d missing: %s\n", rs.MissingRanks, merge.RangeList(rs.Missing, maxRows))
	default:
		b.WriteString("; none missing\n")
	}
	if len(rs.Duplicates) > 0 {
		fmt.Fprintf(b, "  given more than once (%d ranks):\n", len(rs.Duplicates))
		for _, d := range rs.Duplicates[:shown(len(rs.Duplicates), maxRows)] {
			it := ""
			if d.Iteration >= 0 {
				it = fmt.Sprintf(" of iteration %d", d.Iteration)
			}
			fmt.Fprintf(b, "    rank %d%s ×%d: %s\n", d.Rank, it, len(d.Files), oneLine(d.Where()))
		}
		if n := shown(len(rs.Duplicates), maxRows); n < len(rs.Duplicates) {
			fmt.Fprintf(b, "    … %d more (all in the report files)\n", len(rs.Duplicates)-n)
		}
	}
	if len(rs.Runs) > 1 {
		fmt.Fprintf(b, "  from %d runs: %s\n", len(rs.Runs), merge.RunList(rs.Runs, maxRows))
	}
}

// writeOutliers lists the outliers by one measure, the largest gaps first.
func writeOutliers(b *strings.Builder, measure string, out []merge.Outlier, of string, maxRows int) {
	if len(out) == 0 {
		return
	}
	n := shown(len(out), maxRows)
	fmt.Fprintf(b, "\nOutlier ranks by %s: %d of %s are more than %.0f%% above the median of their stage and iteration", measure, len(out), of, findings.OutlierPct)
	if n < len(out) {
		fmt.Fprintf(b, " (the %d largest shown; all in the report files)", n)
	}
	b.WriteString(":\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "rank\tstage\t%s\tabove\tgroup median\tgroup\t  file\n", measure)
	for _, o := range out[:n] {
		fmt.Fprintf(tw, "%s\t%s\t%s\t+%.1f%%\t%s\t%d ranks\t  %s\n", known(o.Rank), known(o.Stage), units.Bytes(o.Bytes), o.AbovePct,
			units.Bytes(o.MedianBytes), o.GroupRanks, oneLine(o.File))
	}
	tw.Flush()
}

// known renders a rank, iteration or stage, "-" when unknown (negative).
func known(v int) string {
	if v < 0 {
		return "-"
	}
	return strconv.Itoa(v)
}
