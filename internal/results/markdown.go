package results

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/report"
)

// PlotFile is one chart written into the run directory.
type PlotFile struct {
	Path  string // relative to the run directory, slash-separated
	Title string
}

// MarkdownOptions tune the Markdown findings.
type MarkdownOptions struct {
	// Top limits the allocations listed per input (default 10; the text report has the long list).
	Top int
	// InputPlots holds the charts of each input, indexed like run.Inputs; CrossPlots those of the whole run.
	// Nil when rendering for stdout, where relative image links would dangle.
	InputPlots [][]PlotFile
	CrossPlots []PlotFile
}

// WriteMarkdown renders run as README.md findings (and stdout with --format md): the key numbers, the
// recommendations with their evidence, the main tables, and the charts embedded by relative link.
func WriteMarkdown(w io.Writer, run *report.Run, opts MarkdownOptions) error {
	bw := bufio.NewWriter(w)
	m := &mdWriter{w: printable(bw), opts: opts}
	if m.opts.Top <= 0 {
		m.opts.Top = 10
	}
	m.run(run)
	return bw.Flush()
}

type mdWriter struct {
	w    io.Writer
	opts MarkdownOptions
}

func (m *mdWriter) printf(format string, args ...any) { fmt.Fprintf(m.w, format, oneLineArgs(args)...) }

func (m *mdWriter) run(run *report.Run) {
	m.printf("# memscan findings\n\n")
	tool := run.Tool
	if tool == "" {
		tool = "memscan"
	}
	m.printf("Written by %s. %d input(s) analyzed", tool, len(run.Inputs))
	if len(run.Failures) > 0 {
		m.printf(", %d failed", len(run.Failures))
	}
	m.printf(".")
	if hasTrace(run) {
		m.printf(" Open `index.html` in a browser for the interactive timeline (zoom, hover for the live blocks and " +
			"their stacks).")
	}
	m.printf(" The full text report is `analysis_report.txt`; machine-readable numbers are in `summary.json` " +
		"(integer bytes) and `report.msgpack` (the whole report, readable back by memscan).\n")

	if run.Cross != nil {
		m.cross(run)
	}
	if m.opts.InputPlots != nil {
		charted := 0
		for _, ps := range m.opts.InputPlots {
			if len(ps) > 0 {
				charted++
			}
		}
		if charted < len(run.Inputs) && len(run.Inputs) > 1 {
			m.printf("\nCharts were drawn for %d of the %d inputs (the outliers and the largest); every input is in the tables.\n", charted, len(run.Inputs))
		}
	}
	for i, r := range run.Inputs {
		var plots []PlotFile
		if i < len(m.opts.InputPlots) {
			plots = m.opts.InputPlots[i]
		}
		m.report(r, plots, len(run.Inputs) > 1)
	}
	if len(run.Failures) > 0 {
		m.printf("\n## Inputs that could not be analyzed\n\n")
		for _, f := range run.Failures {
			m.printf("- `%s`: %s\n", mdCode(f.File), mdText(f.Error))
		}
	}
}

// report writes one input: its heading and what every kind has, the findings and tables of its kind's part, then
// its warnings and charts.
func (m *mdWriter) report(r *report.Report, plots []PlotFile, several bool) {
	level := "##"
	if several {
		level = "###"
	}
	m.printf("\n%s `%s`\n\n", level, mdCode(r.File))
	format := r.Format
	if r.TorchFormat != "" {
		format += ", torch " + r.TorchFormat
	}
	m.printf("Format %s", format)
	if len(r.Devices) > 0 {
		m.printf("; device(s) %s", intList(r.Devices))
	}
	if r.Rank >= 0 {
		m.printf("; rank %d", r.Rank)
	}
	if r.Iteration >= 0 {
		m.printf("; iteration %d", r.Iteration)
	}
	m.printf(".\n\n")

	switch p := r.Part.(type) {
	case *report.SnapshotReport:
		m.snapshot(r, p)
	case *report.TracerReport:
		m.tracer(r, p)
	case *report.TimelineReport:
		m.memoryTimeline(r, p.MemoryTimeline)
	case *report.LogReport:
		m.trainingLog(r, p.Log)
	}

	if len(r.Warnings) > 0 {
		m.printf("\n**Warnings**\n\n")
		for _, w := range r.Warnings {
			m.printf("- %s\n", mdText(w))
		}
	}

	if len(plots) > 0 {
		m.printf("\n**Charts**\n\n")
		for _, p := range plots {
			m.printf("![%s](%s)\n\n", mdText(p.Title), mdLink(p.Path))
		}
	}
}

// findings writes the few sentences a reader needs first, each with its number, and how many recommendations
// follow them.
func (m *mdWriter) findings(r *report.Report, facts []string) {
	m.printf("**Findings**\n\n")
	for _, f := range facts {
		m.printf("- %s\n", f)
	}
	if n := len(r.Recommendations); n > 0 {
		m.printf("- %d recommendation(s) below.\n", n)
	}
}

// inputRecommendations lists an input's recommendations with their evidence, if it has any.
func (m *mdWriter) inputRecommendations(recs []findings.Finding) {
	if len(recs) > 0 {
		m.printf("\n**Recommendations**\n\n")
		m.recommendations(recs)
	}
}

func (m *mdWriter) recommendations(recs []findings.Finding) {
	for _, rec := range recs {
		m.printf("- **%s** (%s, `%s`): %s. Evidence: %s (measured %s, threshold %s).\n",
			mdText(rec.Title), mdText(string(rec.Severity)), rec.ID, mdText(strings.TrimSuffix(rec.Advice, ".")), mdText(rec.Evidence),
			findings.FormatMeasure(rec.Value, rec.Unit), findings.FormatMeasure(rec.Threshold, rec.Unit))
	}
}

// categories is the table of an input's categories under title, with each one's share of their sum.
func (m *mdWriter) categories(title string, cs []report.CategoryStat) {
	if len(cs) == 0 {
		return
	}
	sum := categorySum(cs)
	m.printf("\n**%s**\n\n| category | size | share | count |\n|---|---:|---:|---:|\n", title)
	for _, c := range cs {
		m.printf("| %s | %s | %s | %s |\n", mdCell(c.Name), units.Bytes(c.Bytes), units.Percent(c.Bytes, sum), countOrDash(c.Count))
	}
}

// topAllocations is the table of the largest allocations, identical ones on one row; dump is " at the dump" when
// the live set at a trace's peak was listed before it.
func (m *mdWriter) topAllocations(top []report.Allocation, dump string) {
	if len(top) == 0 {
		return
	}
	n := limit(len(top), m.opts.Top)
	groups := groupAllocations(top, n)
	if len(groups) == n { // nothing repeats: no count column
		m.printf("\n**Top %d allocations%s**\n\n| # | size | category | site |\n|---:|---:|---|---|\n", n, dump)
		for _, g := range groups {
			m.printf("| %d | %s | %s | `%s` |\n", g.Rank, units.Bytes(g.Size), mdCell(g.Category), mdCell(mdCode(orDash(g.Site))))
		}
		return
	}
	m.printf("\n**Top %d allocations%s** (identical ones on one row)\n\n| # | size | count | category | site |\n|---:|---:|---:|---|---|\n", n, dump)
	for _, g := range groups {
		m.printf("| %d | %s | %s | %s | `%s` |\n", g.Rank, units.Bytes(g.Size), countLabel(g.Count), mdCell(g.Category), mdCell(mdCode(orDash(g.Site))))
	}
}

func (m *mdWriter) cross(run *report.Run) {
	c := run.Cross
	v := newCrossView(c)
	m.printf("\n## Across inputs\n")
	if c.NotRankSet != "" {
		m.printf("\nNot compared as ranks: %s.\n", mdCell(c.NotRankSet))
	} else if v.Snapshots > 1 {
		m.printf("\nReserved memory%s: max %s, median %s, imbalance **%.1f %%** (max / median - 1). Allocated: max %s, median %s.\n",
			ImbalanceScope(c), units.Bytes(c.MaxReservedBytes), units.Bytes(c.MedianReservedBytes), c.ImbalancePct, units.Bytes(c.MaxAllocatedBytes), units.Bytes(c.MedianAllocatedBytes))
	}
	if t := c.Tracer; t != nil {
		m.printf("\nTracer peak: max %s (rank %d), median %s, min %s; imbalance **%.1f %%** (max / median - 1).\n",
			units.Bytes(t.MaxPeakBytes), t.MaxPeakRank, units.Bytes(t.MedianPeakBytes), units.Bytes(t.MinPeakBytes), t.ImbalancePct)
	}
	if len(c.OutlierFiles) > 0 {
		m.printf("\nOutliers:\n\n")
		for _, f := range c.OutlierFiles {
			m.printf("- `%s`\n", mdCode(f))
		}
	}
	m.printf("\n|")
	for _, h := range v.Header {
		m.printf(" %s |", h)
	}
	m.printf("\n|")
	for _, a := range v.Aligns {
		if a == alignRight {
			m.printf("---:|")
		} else {
			m.printf("---|")
		}
	}
	m.printf("\n")
	for _, r := range v.Rows {
		m.printf("| `%s` | %s |\n", mdCell(mdCode(r.File)), strings.Join(r.Cells, " | "))
	}
	if len(c.Recommendations) > 0 {
		m.printf("\n**Recommendations across inputs**\n\n")
		m.recommendations(c.Recommendations)
	}
	for _, p := range m.opts.CrossPlots {
		m.printf("\n![%s](%s)\n", mdText(p.Title), mdLink(p.Path))
	}
}

// mdText escapes the characters that would start Markdown markup inside running text.
func mdText(s string) string {
	r := strings.NewReplacer("\\", "\\\\", "*", "\\*", "`", "\\`", "[", "\\[", "]", "\\]", "<", "&lt;", ">", "&gt;", "|", "\\|", "\n", " ")
	return r.Replace(s)
}

// mdCode makes s safe inside a single-backtick code span.
func mdCode(s string) string {
	return strings.NewReplacer("`", "'", "\n", " ").Replace(s)
}

// mdCell escapes the table separator, which even code spans do not protect, and keeps the cell on its line.
func mdCell(s string) string {
	return strings.ReplaceAll(oneLine(s), "|", "\\|")
}

// mdLink escapes what would end or break a relative link target.
func mdLink(p string) string {
	return strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29").Replace(p)
}
