package results

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/report"
)

// TextOptions tune the text report.
type TextOptions struct {
	// Top limits the allocations and sites listed per input; 0 lists all that the report holds.
	Top int
}

// maxSiteWidth keeps table rows readable; the full site is in summary.json.
const maxSiteWidth = 90

// WriteText renders run as the full plain-text report (analysis_report.txt, and stdout with --verbose): the
// summary of WriteSummary, then every section.
func WriteText(w io.Writer, run *report.Run, opts TextOptions) error {
	bw := bufio.NewWriter(w)
	tw := &textWriter{w: printable(bw), opts: opts}
	tw.summary(run) // the answer first, as on the console
	tw.printf("\n\n")
	tw.run(run)
	return bw.Flush()
}

type textWriter struct {
	w    io.Writer
	opts TextOptions
}

func (t *textWriter) printf(format string, args ...any) {
	fmt.Fprintf(t.w, format, oneLineArgs(args)...)
}

func (t *textWriter) section(title string) {
	t.printf("\n%s\n%s\n", title, strings.Repeat("-", len([]rune(title))))
}

// banner prints title underlined with '=': the report's title and each of its parts (an input, the cross-input
// comparison, the failures).
func (t *textWriter) banner(title string) {
	t.printf("%s\n%s\n", title, strings.Repeat("=", len([]rune(title))))
}

func (t *textWriter) run(run *report.Run) {
	title := "memscan memory analysis"
	if run.Tool != "" {
		title += " (" + run.Tool + ")"
	}
	t.banner(title)
	t.printf("inputs analyzed: %d", len(run.Inputs))
	if len(run.Failures) > 0 {
		t.printf(", failed: %d", len(run.Failures))
	}
	t.printf("\n")
	for i, r := range run.Inputs {
		t.printf("\n\n")
		t.banner(fmt.Sprintf("Input %d of %d: %s", i+1, len(run.Inputs), r.File))
		t.report(r)
	}
	if run.Cross != nil {
		t.printf("\n\n")
		t.banner("Across inputs")
		t.cross(run.Cross)
	}
	if len(run.Failures) > 0 {
		t.printf("\n\n")
		t.banner("Inputs that could not be analyzed")
		for _, f := range run.Failures {
			t.printf("  %s: %s\n", f.File, f.Error)
		}
	}
}

// report writes one input: what every kind has (format, devices, rank, iteration), the sections of its kind's
// part, then its recommendations and warnings.
func (t *textWriter) report(r *report.Report) {
	format := r.Format
	if r.TorchFormat != "" {
		format += " (torch " + r.TorchFormat + ")"
	}
	t.printf("  format:     %s\n", format)
	t.printf("  devices:    %s\n", intList(r.Devices))
	if r.Rank >= 0 {
		t.printf("  rank:       %d\n", r.Rank)
	}
	if r.Iteration >= 0 {
		t.printf("  iteration:  %d\n", r.Iteration)
	}
	switch p := r.Part.(type) {
	case *report.SnapshotReport:
		t.snapshot(r, p)
	case *report.TracerReport:
		t.tracer(r, p)
	case *report.TimelineReport:
		t.memoryTimeline(p.MemoryTimeline)
	case *report.LogReport:
		t.trainingLog(p.Log)
	}
	t.recommendations("Recommendations", r.Recommendations, true)

	if len(r.Warnings) > 0 {
		t.section("Warnings")
		for _, w := range r.Warnings {
			t.printf("  - %s\n", w)
		}
	}
}

// categories lists an input's categories under title, with each one's share of their sum.
func (t *textWriter) categories(title string, cs []report.CategoryStat) {
	if len(cs) == 0 {
		return
	}
	t.section(title)
	sum := categorySum(cs)
	tb := newTable([]align{alignLeft, alignRight, alignRight, alignRight, alignRight}, "category", "size", "bytes", "share", "count")
	for _, c := range cs {
		tb.add(c.Name, units.Bytes(c.Bytes), GroupDigits(c.Bytes), units.Percent(c.Bytes, sum), countOrDash(c.Count))
	}
	tb.write(t.w, 2)
}

// sites lists the largest allocation sites; dump is " at the dump" when a trace peak was listed before them.
func (t *textWriter) sites(sites []report.SiteStat, dump string) {
	if len(sites) == 0 {
		return
	}
	n := limit(len(sites), t.opts.Top)
	t.section(fmt.Sprintf("Top %d allocation sites%s", n, dump))
	t.siteTable(sites[:n], 2)
}

// topAllocations lists the largest allocations, identical ones (same site, size, category and state) on one row
// with their count; # is the position of the group's first allocation in the size order.
func (t *textWriter) topAllocations(top []report.Allocation, dump string) {
	if len(top) == 0 {
		return
	}
	n := limit(len(top), t.opts.Top)
	groups := groupAllocations(top, n)
	title := fmt.Sprintf("Top %d allocations%s", n, dump)
	if len(groups) < n {
		title += fmt.Sprintf(" (%d distinct; identical ones counted ×N)", len(groups))
	}
	t.section(title)
	if len(groups) == n { // nothing repeats: no count column
		tb := newTable([]align{alignRight, alignRight, alignRight, alignLeft, alignLeft, alignLeft}, "#", "size", "requested", "category", "state", "site")
		for _, g := range groups {
			tb.add(strconv.Itoa(g.Rank), units.Bytes(g.Size), GroupDigits(g.RequestedSize), g.Category, g.State, truncate(orDash(g.Site), maxSiteWidth))
		}
		tb.write(t.w, 2)
		return
	}
	tb := newTable([]align{alignRight, alignRight, alignRight, alignRight, alignLeft, alignLeft, alignLeft}, "#", "size", "requested", "count", "category", "state", "site")
	for _, g := range groups {
		tb.add(strconv.Itoa(g.Rank), units.Bytes(g.Size), GroupDigits(g.RequestedSize), countLabel(g.Count), g.Category, g.State, truncate(orDash(g.Site), maxSiteWidth))
	}
	tb.write(t.w, 2)
}

// siteTable lists allocation sites, of the whole snapshot or of the live set at the peak, indented by indent.
func (t *textWriter) siteTable(sites []report.SiteStat, indent int) {
	tb := newTable([]align{alignRight, alignRight, alignLeft, alignLeft}, "size", "count", "category", "site")
	for _, s := range sites {
		tb.add(units.Bytes(s.Bytes), strconv.Itoa(s.Count), s.Category, truncate(orDash(s.Site), maxSiteWidth))
	}
	tb.write(t.w, indent)
}

func (t *textWriter) cross(c *report.Cross) {
	t.section("Per input")
	v := newCrossView(c)
	tb := newTable(v.Aligns, v.Header...)
	for _, r := range v.Rows {
		tb.add(append([]string{truncate(r.File, 60)}, r.Cells...)...)
	}
	tb.write(t.w, 2)
	switch {
	case c.NotRankSet != "":
		t.printf("\n  Not compared as ranks: %s.\n", c.NotRankSet)
	case v.Snapshots > 1:
		t.imbalance(c)
	}
	t.tracerCross(c.Tracer)
	t.recommendations("Recommendations across inputs", c.Recommendations, false)
}

// imbalance compares the allocator totals of the snapshots in a run.
func (t *textWriter) imbalance(c *report.Cross) {
	t.section("Imbalance" + ImbalanceScope(c))
	kv := newTable([]align{alignLeft, alignRight, alignRight}, "measure", "size", "bytes")
	kv.add("max reserved", units.Bytes(c.MaxReservedBytes), GroupDigits(c.MaxReservedBytes))
	kv.add("median reserved", units.Bytes(c.MedianReservedBytes), GroupDigits(c.MedianReservedBytes))
	kv.add("max allocated", units.Bytes(c.MaxAllocatedBytes), GroupDigits(c.MaxAllocatedBytes))
	kv.add("median allocated", units.Bytes(c.MedianAllocatedBytes), GroupDigits(c.MedianAllocatedBytes))
	kv.write(t.w, 2)
	t.printf("  imbalance: %.2f %% (max reserved / median reserved - 1)\n", c.ImbalancePct)
	if len(c.OutlierFiles) > 0 {
		t.printf("  outliers:\n")
		for _, f := range c.OutlierFiles {
			t.printf("    - %s\n", f)
		}
	}
}

func (t *textWriter) recommendations(title string, recs []findings.Finding, always bool) {
	if len(recs) == 0 && !always {
		return
	}
	t.section(title)
	if len(recs) == 0 {
		t.printf("  none: no threshold was crossed\n")
	}
	for i, rec := range recs {
		if i > 0 {
			t.printf("\n")
		}
		t.printf("  %d. [%s] %s (%s)\n", i+1, rec.Severity, rec.Title, rec.ID)
		t.printf("     evidence: %s (measured %s, threshold %s)\n", rec.Evidence, findings.FormatMeasure(rec.Value, rec.Unit), findings.FormatMeasure(rec.Threshold, rec.Unit))
		if rec.Advice != "" {
			t.printf("     advice:   %s\n", rec.Advice)
		}
	}
}

// BucketLabel renders a histogram bucket as "1.0 MiB - 2.0 MiB".
func BucketLabel(b report.SizeBucket) string {
	if b.Hi <= 0 {
		return units.Bytes(b.Lo) + " and up"
	}
	return units.Bytes(b.Lo) + " - " + units.Bytes(b.Hi)
}

func limit(n, top int) int {
	if top > 0 && top < n {
		return top
	}
	return n
}

func intList(xs []int) string {
	if len(xs) == 0 {
		return "-"
	}
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

func intOrDash(x int) string {
	if x < 0 {
		return "-"
	}
	return strconv.Itoa(x)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// formatFloat prints a measured value or threshold as an integer when it is one ("104857600") and otherwise with
// at most two decimals ("12.5").
func formatFloat(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// ImbalanceScope says which iteration the imbalance statistics describe when the snapshots span several (ranks
// are compared within one step), and "" otherwise.
func ImbalanceScope(c *report.Cross) string {
	if c == nil || c.Iterations < 2 {
		return ""
	}
	it := "unnumbered inputs"
	if c.ImbalanceIteration >= 0 {
		it = fmt.Sprintf("iteration %d", c.ImbalanceIteration)
	}
	return fmt.Sprintf(" (%s, the most unbalanced of %d iterations)", it, c.Iterations)
}
