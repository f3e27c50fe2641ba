package results

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/units"
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
func WriteMarkdown(w io.Writer, run *analyze.Run, opts MarkdownOptions) error {
	bw := bufio.NewWriter(w)
	m := &mdWriter{w: bw, opts: opts}
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

func (m *mdWriter) printf(format string, args ...any) { fmt.Fprintf(m.w, format, args...) }

func (m *mdWriter) run(run *analyze.Run) {
	m.printf("# memscan findings\n\n")
	tool := run.Tool
	if tool == "" {
		tool = "memscan"
	}
	m.printf("Written by %s. %d input(s) analyzed", tool, len(run.Inputs))
	if len(run.Failures) > 0 {
		m.printf(", %d failed", len(run.Failures))
	}
	m.printf(". The full text report is `analysis_report.txt`; machine-readable numbers are in `summary.json` " +
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

func (m *mdWriter) report(r *analyze.Report, plots []PlotFile, several bool) {
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

	m.printf("**Findings**\n\n")
	for _, f := range findings(r) {
		m.printf("- %s\n", f)
	}

	if r.HasAllocatorTotals() {
		m.totals(r)
	}

	if len(r.Recommendations) > 0 {
		m.printf("\n**Recommendations**\n\n")
		m.recommendations(r.Recommendations)
	}
	m.tables(r)

	if len(plots) > 0 {
		m.printf("\n**Charts**\n\n")
		for _, p := range plots {
			m.printf("![%s](%s)\n\n", mdText(p.Title), mdLink(p.Path))
		}
	}
}

func (m *mdWriter) totals(r *analyze.Report) {
	m.printf("\n| measure | size | bytes |\n|---|---:|---:|\n")
	for _, row := range []struct {
		name string
		v    int64
	}{
		{"reserved", r.ReservedBytes},
		{"allocated", r.AllocatedBytes},
		{"requested", r.RequestedBytes},
		{"internal free", r.InternalFreeBytes},
		{"external free", r.ExternalFreeBytes},
		{"largest free block", r.LargestFreeBlockBytes},
	} {
		m.printf("| %s | %s | %s |\n", row.name, units.Bytes(row.v), strconv.FormatInt(row.v, 10))
	}
}

func (m *mdWriter) recommendations(recs []analyze.Recommendation) {
	for _, rec := range recs {
		m.printf("- **%s** (%s, `%s`): %s. Evidence: %s (measured %s, threshold %s).\n",
			mdText(rec.Title), mdText(rec.Severity), rec.ID, mdText(strings.TrimSuffix(rec.Advice, ".")), mdText(rec.Evidence),
			analyze.FormatMeasure(rec.Value, rec.Unit), analyze.FormatMeasure(rec.Threshold, rec.Unit))
	}
}

// tables are the main per-input tables: categories, top allocations, the live set at the peak, OOMs, warnings.
func (m *mdWriter) tables(r *analyze.Report) {
	// With a trace the live set at the peak comes first; the dump's tables follow, labelled.
	dump := ""
	if p := r.Peak; p != nil && len(p.Categories) > 0 && r.Kind() != analyze.KindTimeline {
		where := ""
		if w := peakWhere(p); w != "" {
			where = ", " + w
		}
		m.printf("\n**Live at the peak** (%s on device %d, event %d%s)\n\n| category | size | share |\n|---|---:|---:|\n",
			units.Bytes(p.Bytes), p.Device, p.EventIndex, where)
		for _, c := range p.Categories {
			m.printf("| %s | %s | %s |\n", mdCell(c.Name), units.Bytes(c.Bytes), units.Percent(c.Bytes, p.Bytes))
		}
		if len(p.Sites) > 0 {
			n := limit(len(p.Sites), m.opts.Top)
			m.printf("\n**Top %d sites at the peak**\n\n| size | count | category | site |\n|---:|---:|---|---|\n", n)
			for _, st := range p.Sites[:n] {
				m.printf("| %s | %d | %s | `%s` |\n", units.Bytes(st.Bytes), st.Count, mdCell(st.Category), mdCell(mdCode(orDash(st.Site))))
			}
		}
		dump = " at the dump"
	}
	if len(r.Categories) > 0 {
		sum := categorySum(r.Categories)
		title := "Memory by category" + dump
		if r.Kind() == analyze.KindTimeline {
			title = "Live at the peak by category"
		}
		m.printf("\n**%s**\n\n| category | size | share | count |\n|---|---:|---:|---:|\n", title)
		for _, c := range r.Categories {
			m.printf("| %s | %s | %s | %s |\n", mdCell(c.Name), units.Bytes(c.Bytes), units.Percent(c.Bytes, sum), countOrDash(c.Count))
		}
	}

	if len(r.Top) > 0 {
		n := limit(len(r.Top), m.opts.Top)
		groups := groupAllocations(r.Top, n)
		if len(groups) == n { // nothing repeats: no count column
			m.printf("\n**Top %d allocations%s**\n\n| # | size | category | site |\n|---:|---:|---|---|\n", n, dump)
			for _, g := range groups {
				m.printf("| %d | %s | %s | `%s` |\n", g.Rank, units.Bytes(g.Size), mdCell(g.Category), mdCell(mdCode(orDash(g.Site))))
			}
		} else {
			m.printf("\n**Top %d allocations%s** (identical ones on one row)\n\n| # | size | count | category | site |\n|---:|---:|---:|---|---|\n", n, dump)
			for _, g := range groups {
				m.printf("| %d | %s | %s | %s | `%s` |\n", g.Rank, units.Bytes(g.Size), countLabel(g.Count), mdCell(g.Category), mdCell(mdCode(orDash(g.Site))))
			}
		}
	}

	m.allocatorReplay(&r.SnapshotReport)

	if len(r.OOMs) > 0 {
		m.printf("\n**Out-of-memory events**\n\n| device | event | requested | device free | site |\n|---:|---:|---:|---:|---|\n")
		for _, o := range r.OOMs {
			m.printf("| %d | %d | %s | %s | `%s` |\n", o.Device, o.EventIndex, units.Bytes(o.RequestedBytes), units.Bytes(o.DeviceFreeBytes), mdCell(mdCode(orDash(o.Site))))
		}
	}

	if len(r.Warnings) > 0 {
		m.printf("\n**Warnings**\n\n")
		for _, w := range r.Warnings {
			m.printf("- %s\n", mdText(w))
		}
	}
}

// findings are the few sentences a reader needs first, each with its number.
func findings(r *analyze.Report) []string {
	var out []string
	if r.HasAllocatorTotals() {
		out = allocatorFindings(r)
		out = append(out, replayFindings(&r.SnapshotReport)...)
	}
	if p := tracerPrimary(r); p != nil {
		out = append(out, fmt.Sprintf("The tracer recorded a peak of **%s** on %s; the listed tensors account for %s (%s), %s is not attributable.",
			units.Bytes(p.PeakBytes), mdText(p.Device), units.Bytes(p.ListedBytes), units.Percent(p.ListedBytes, p.PeakBytes), units.Bytes(p.GapBytes)))
		if len(p.Phases) > 0 {
			ph := p.Phases[0]
			out = append(out, fmt.Sprintf("Phase **%s** holds the most: %s (%.1f %% of listed).", mdText(ph.Name), units.Bytes(ph.Bytes), ph.SharePct))
		}
		if len(p.Modules) > 0 {
			out = append(out, moduleFinding(p.Modules[0]))
		}
	}
	if v := r.MemoryTimeline; v != nil {
		s := fmt.Sprintf("The profiler timeline peaks at **%s**", units.Bytes(v.PeakBytes))
		if v.PeakTimeUS != 0 {
			s += fmt.Sprintf(", %.3f s after the start", float64(v.PeakTimeUS-v.StartUS)/1e6)
		}
		if len(v.PeakComposition) > 0 {
			c := v.PeakComposition[0]
			s += fmt.Sprintf("; %s holds %s of it", mdText(c.Name), units.Percent(c.Bytes, v.PeakBytes))
		}
		out = append(out, s+".")
	}
	if v := r.Log; v != nil {
		s := fmt.Sprintf("The %s log has %d memory records; peak allocated **%s**, peak reserved %s", mdText(v.Dialect), v.Records,
			bytesOrDash(v.PeakAllocatedBytes), bytesOrDash(v.PeakReservedBytes))
		if v.PeakRank >= 0 {
			s += fmt.Sprintf(" (rank %d)", v.PeakRank)
		}
		out = append(out, s+".")
		if v.TheoryGapPct != nil {
			out = append(out, fmt.Sprintf("The measured peak is %+.1f %% off the log's theoretical estimate.", *v.TheoryGapPct))
		}
	}
	if n := len(r.Recommendations); n > 0 {
		out = append(out, fmt.Sprintf("%d recommendation(s) below.", n))
	}
	return out
}

// moduleFinding names the module group holding the most; only a pattern that merged repeated layers says how many.
func moduleFinding(m analyze.ModuleStat) string {
	switch {
	case m.Pattern == analyze.UnknownModule:
		return fmt.Sprintf("%s of listed memory (%.1f %%) was created outside any module's forward (module `%s`).", units.Bytes(m.Bytes), m.SharePct, mdCode(m.Pattern))
	case m.MergedModules > 1:
		return fmt.Sprintf("Module `%s` holds %s (%.1f %% of listed, %d modules merged).", mdCode(m.Pattern), units.Bytes(m.Bytes), m.SharePct, m.MergedModules)
	}
	return fmt.Sprintf("Module `%s` holds %s (%.1f %% of listed).", mdCode(m.Pattern), units.Bytes(m.Bytes), m.SharePct)
}

// allocatorFindings are the headline numbers of an allocator snapshot.
func allocatorFindings(r *analyze.Report) []string {
	var out []string
	out = append(out, fmt.Sprintf("PyTorch reserved **%s** and tensors asked for **%s**: %.1f %% efficiency.",
		units.Bytes(r.ReservedBytes), units.Bytes(r.RequestedBytes), r.EfficiencyPct))
	if free := r.ExternalFreeBytes + r.InternalFreeBytes; free > 0 && r.ReservedBytes > 0 {
		out = append(out, fmt.Sprintf("%s (%s of reserved) is cached but not in use: %s in free blocks, %s rounding inside allocations; the largest free block is %s.",
			units.Bytes(free), units.Percent(free, r.ReservedBytes), units.Bytes(r.ExternalFreeBytes), units.Bytes(r.InternalFreeBytes), units.Bytes(r.LargestFreeBlockBytes)))
	}
	dump := ""
	if p := r.Peak; p != nil {
		s := fmt.Sprintf("The trace peaks at **%s** allocated on device %d (event %d", units.Bytes(p.Bytes), p.Device, p.EventIndex)
		if p.TimeUS != 0 {
			s += ", " + FormatTimeUS(p.TimeUS)
		}
		if w := peakWhere(p); w != "" {
			s += ", " + w
		}
		s += ")"
		if len(p.Categories) > 0 {
			c := p.Categories[0]
			s += fmt.Sprintf("; the largest category there is **%s** with %s (%s)", mdText(c.Name), units.Bytes(c.Bytes), units.Percent(c.Bytes, p.Bytes))
		}
		out = append(out, s+".")
		dump = " at the dump"
	}
	if len(r.Categories) > 0 {
		sum := categorySum(r.Categories)
		c := r.Categories[0]
		for _, x := range r.Categories[1:] {
			if x.Bytes > c.Bytes {
				c = x
			}
		}
		out = append(out, fmt.Sprintf("The largest category%s is **%s** with %s (%s of categorized memory, %d allocations).",
			dump, mdText(c.Name), units.Bytes(c.Bytes), units.Percent(c.Bytes, sum), c.Count))
	}
	if len(r.Top) > 0 {
		a := r.Top[0]
		out = append(out, fmt.Sprintf("The largest single allocation%s is %s (%s) from `%s`.", dump, units.Bytes(a.Size), mdText(a.Category), mdCode(orDash(a.Site))))
	}
	if n := len(r.OOMs); n > 0 {
		o := r.OOMs[0]
		out = append(out, fmt.Sprintf("**%d out-of-memory event(s)**; the first asked for %s with %s free on device %d.",
			n, units.Bytes(o.RequestedBytes), units.Bytes(o.DeviceFreeBytes), o.Device))
	}
	if n := len(r.LeakSuspects); n > 0 {
		l := r.LeakSuspects[0]
		out = append(out, fmt.Sprintf("%d site(s) grew in every iteration after the first (%s); the first, `%s`, went from %s to %s, %s per iteration.",
			n, mdText(l.MarkerKind), mdCode(l.Site), units.Bytes(l.FirstBytes), units.Bytes(l.LastBytes), units.Bytes(l.PerIterationBytes)))
	}
	return out
}

func (m *mdWriter) cross(run *analyze.Run) {
	c := run.Cross
	v := newCrossView(c)
	m.printf("\n## Across inputs\n")
	if v.Snapshots > 1 {
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

// mdCell escapes the table separator, which even code spans do not protect.
func mdCell(s string) string {
	return strings.ReplaceAll(s, "|", "\\|")
}

// mdLink escapes what would end or break a relative link target.
func mdLink(p string) string {
	return strings.NewReplacer(" ", "%20", "(", "%28", ")", "%29").Replace(p)
}
