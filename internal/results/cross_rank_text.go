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

// WriteCrossRankText renders memscan merge's cross-rank report as plain text. maxRows bounds the per-rank table (0 = all rows);
// the rows shown are the first in rank order, and the outlier section names the largest ranks regardless.
func WriteCrossRankText(w io.Writer, c *merge.CrossRank, maxRows int) error {
	w = printable(w)
	var b strings.Builder
	if len(c.Iterations) > 1 {
		fmt.Fprintf(&b, "Cross-rank memory report: %d summaries from %d iterations (%s); merge one with --iteration N%s\n\n",
			c.Ranks, len(c.Iterations), merge.IterationList(c.Iterations), merge.UnknownIterationHint(c.Iterations))
	} else {
		fmt.Fprintf(&b, "Cross-rank memory report: %d ranks\n\n", c.Ranks)
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "metric\tmin\tmedian\tp90\tmax\tmax rank\tsum\t\n")
	for _, m := range []struct {
		name string
		s    merge.MetricStats
	}{{"reserved", c.Reserved}, {"allocated", c.Allocated}, {"peak", c.Peak}} {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", m.name, units.Bytes(m.s.Min), units.Bytes(m.s.Median),
			units.Bytes(m.s.P90), units.Bytes(m.s.Max), known(m.s.MaxRank), units.Bytes(m.s.Sum))
	}
	tw.Flush()
	fmt.Fprintf(&b, "\nimbalance (max/median − 1): reserved %.1f%%, peak %.1f%%; efficiency (requested/reserved) %.1f%%\n",
		c.ImbalancePct, c.PeakImbalancePct, c.EfficiencyPct)
	fmt.Fprintf(&b, "free inside reserved: internal %s, external %s; OOM events: %d on %d ranks\n",
		units.Bytes(c.InternalFreeBytes), units.Bytes(c.ExternalFreeBytes), c.OOMs, c.OOMRanks)

	if len(c.Outliers) > 0 {
		fmt.Fprintf(&b, "\nOutlier ranks (reserved more than %.0f%% above the median of %s):\n", findings.OutlierPct, units.Bytes(c.Reserved.Median))
		for _, r := range c.Outliers {
			fmt.Fprintf(&b, "  rank %s  %s  (+%.1f%%)  %s\n", known(r.Rank), units.Bytes(r.ReservedBytes),
				(float64(r.ReservedBytes)/float64(c.Reserved.Median)-1)*100, oneLine(r.File))
		}
	}
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
		for _, cs := range c.Categories {
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
	rows := c.Rows
	if maxRows > 0 && len(rows) > maxRows {
		rows = rows[:maxRows]
	}
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

// known renders a rank, iteration or stage, "-" when unknown (negative).
func known(v int) string {
	if v < 0 {
		return "-"
	}
	return strconv.Itoa(v)
}
