package results

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/report"
)

// SummaryWidth is the width the console summary fits.
const SummaryWidth = 100

// summaryFindings bounds the findings the summary lists per input (the report files list them all).
const summaryFindings = 5

// WriteSummary renders run as the console summary: for each input the answer first (the peak, what held it, the
// OOMs, the findings ranked by the bytes they would save), then the totals at the dump; the cross-input view
// comes first when there are several inputs. Every line fits SummaryWidth columns; the full report is
// analysis_report.txt (WriteText), which starts with the same summary.
func WriteSummary(w io.Writer, run *report.Run) error {
	bw := bufio.NewWriter(w)
	t := &textWriter{w: printable(bw)}
	t.summary(run)
	return bw.Flush()
}

func (t *textWriter) summary(run *report.Run) {
	title := "memscan summary"
	if run.Tool != "" {
		title += " (" + run.Tool + ")"
	}
	t.banner(title)
	if run.Cross != nil {
		t.crossSummary(run.Cross)
	}
	for i, r := range run.Inputs {
		t.printf("\n")
		head := r.File
		if len(run.Inputs) > 1 {
			head = fmt.Sprintf("[%d/%d] %s", i+1, len(run.Inputs), r.File)
		}
		t.printf("%s\n", truncate(head, SummaryWidth))
		t.inputSummary(r)
	}
	if len(run.Failures) > 0 {
		t.printf("\n%d input(s) could not be analyzed:\n", len(run.Failures))
		for _, f := range run.Failures {
			t.wrap("  ", f.File+": "+f.Error)
		}
	}
}

// wrap prints text folded at word boundaries to SummaryWidth columns, the first line after prefix and the rest
// indented as deep; a word longer than a line is cut.
func (t *textWriter) wrap(prefix, text string) {
	for _, line := range foldText(text, SummaryWidth-len([]rune(prefix))) {
		t.printf("%s%s\n", prefix, line)
		prefix = strings.Repeat(" ", len([]rune(prefix)))
	}
}

// foldText splits text into lines of at most width runes at spaces.
func foldText(text string, width int) []string {
	width = max(width, 20)
	var lines []string
	var cur []rune
	for _, word := range strings.Fields(text) {
		w := []rune(word)
		if len(w) > width {
			w = append(w[:width-1], '…')
		}
		if len(cur) > 0 && len(cur)+1+len(w) > width {
			lines = append(lines, string(cur))
			cur = cur[:0]
		}
		if len(cur) > 0 {
			cur = append(cur, ' ')
		}
		cur = append(cur, w...)
	}
	if len(cur) > 0 || len(lines) == 0 {
		lines = append(lines, string(cur))
	}
	return lines
}

// inputSummary writes one input's answer and its totals at the dump.
func (t *textWriter) inputSummary(r *report.Report) {
	a := newAnswer(r)
	if a.Peak != nil {
		t.wrap("  ", peakSentence(a.Peak))
		if a.MaxReserved > 0 {
			t.wrap("  ", fmt.Sprintf("The allocator reserved at most %s over the trace.", units.Bytes(a.MaxReserved)))
		}
		if len(a.Held) > 0 {
			t.wrap("  held by: ", heldLine(a.Held, a.Peak.Bytes, 5)+".")
		}
		if len(a.Components) > 0 {
			t.wrap("  components: ", heldLine(a.Components, a.Peak.Bytes, 5)+".")
		}
	}
	for _, o := range a.OOMs {
		t.wrap("  ", oomSentence(o))
	}
	// What the other kinds measured comes before their findings, as a snapshot's peak does.
	switch p := r.Part.(type) {
	case *report.TracerReport:
		if v := p.Tracer.Primary(); v != nil {
			t.wrap("  ", fmt.Sprintf("Memory tracer: device %s peaked at %s; the listed tensors hold %s.", v.Device, units.Bytes(v.PeakBytes), units.Bytes(v.ListedBytes)))
		}
	case *report.TimelineReport:
		if v := p.MemoryTimeline; v != nil && a.Peak == nil {
			t.wrap("  ", fmt.Sprintf("Profiler timeline: peak %s, %s at the end.", units.Bytes(v.PeakBytes), units.Bytes(v.FinalBytes)))
		}
	case *report.LogReport:
		if v := p.Log; v != nil {
			t.wrap("  ", fmt.Sprintf("Training log (%s): %d memory records; peak allocated %s, peak reserved %s.", v.Dialect, v.Records,
				bytesOrDash(v.PeakAllocatedBytes), bytesOrDash(v.PeakReservedBytes)))
		}
	}
	if len(a.Findings) > 0 {
		t.printf("  findings, by the bytes they would save:\n")
		for i, f := range a.Findings {
			if i == summaryFindings {
				t.printf("    … %d more in analysis_report.txt\n", len(a.Findings)-i)
				break
			}
			title := f.Title
			if s := findingSavingText(f); s != "" {
				title += " (" + s + ")"
			}
			t.wrap(fmt.Sprintf("    %d. ", i+1), "["+string(f.Severity)+"] "+title)
			if f.Advice != "" {
				t.wrap("       ", f.Advice)
			}
		}
	} else if a.Peak != nil || r.Kind() == report.KindSnapshot {
		t.printf("  findings: none, no threshold was crossed\n")
	}
	if p, ok := r.Part.(*report.SnapshotReport); ok {
		t.wrap("  ", dumpSentence(r, p))
	}
	if n := len(r.Warnings); n > 0 {
		t.printf("  %d warning(s) in analysis_report.txt\n", n)
	}
}

// dumpSentence words a snapshot's totals at the dump. The cached free memory is called neither poor nor wasted
// when the trace shows the peak used it: it says how much of it the peak needed.
func dumpSentence(r *report.Report, p *report.SnapshotReport) string {
	s := fmt.Sprintf("At the dump: %s reserved, %s allocated", units.Bytes(p.ReservedBytes), units.Bytes(p.AllocatedBytes))
	if p.ReservedBytes > 0 {
		s += fmt.Sprintf(" (%s of reserved requested)", units.Percent(p.RequestedBytes, p.ReservedBytes))
	}
	if needed := cacheNeededAtPeak(r, p); needed > 0 {
		s += fmt.Sprintf("; %s of the %s cached then was in use at the peak", units.Bytes(needed), units.Bytes(p.ReservedBytes-p.RequestedBytes))
	}
	return s + "."
}

// cacheNeededAtPeak is how much of the memory cached but unused at the dump the trace's peak had in use: the peak
// allocated beyond what was allocated at the dump, at most the cached memory. 0 without a trace peak.
func cacheNeededAtPeak(r *report.Report, p *report.SnapshotReport) int64 {
	if r.Peak == nil {
		return 0
	}
	return max(0, min(r.Peak.Bytes-p.RequestedBytes, p.ReservedBytes-p.RequestedBytes))
}

// crossSummary writes the cross-input table first, the file names cut so it fits, and the cross findings.
func (t *textWriter) crossSummary(c *report.Cross) {
	v := newCrossView(c)
	tb := newTable(v.Aligns, v.Header...)
	// The file column gets what the other columns (each its widest cell or header, two spaces before it) and the
	// indent of two leave.
	rest := 2
	for c := 1; c < len(v.Header); c++ {
		w := len([]rune(v.Header[c]))
		for _, r := range v.Rows {
			w = max(w, len([]rune(r.Cells[c-1])))
		}
		rest += 2 + w
	}
	fileWidth := max(16, SummaryWidth-rest)
	for _, r := range v.Rows {
		tb.add(append([]string{truncateLeft(r.File, fileWidth)}, r.Cells...)...)
	}
	t.printf("\nAcross %d inputs%s:\n", len(c.Rows), ImbalanceScope(c))
	tb.write(t.w, 2)
	switch {
	case c.NotRankSet != "":
		t.wrap("  ", "Not compared as ranks: "+c.NotRankSet+".")
	case v.Snapshots > 1:
		t.wrap("  ", fmt.Sprintf("Reserved: max %s, median %s, imbalance %.2f %%.", units.Bytes(c.MaxReservedBytes), units.Bytes(c.MedianReservedBytes), c.ImbalancePct))
	}
	for i, rec := range rankFindings(c.Recommendations) {
		t.wrap(fmt.Sprintf("  %d. ", i+1), "["+string(rec.Severity)+"] "+rec.Title+": "+rec.Evidence)
	}
}

// truncateLeft keeps the end of s (the distinguishing part of a path) within width runes.
func truncateLeft(s string, width int) string {
	r := []rune(s)
	if len(r) <= width {
		return s
	}
	return "…" + string(r[len(r)-width+1:])
}
