package results

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/merge"
	"github.com/memscan/memscan/report"
)

// hostile holds what a terminal acts on (ESC starting a clear-screen, a C1 CSI, a bell, invalid UTF-8) and a
// line break followed by text made to look like a report line.
const hostile = "evil\x1b[2J\u009b31m\a\xff\nFAKE: all memory freed"

// checkInert fails when out holds a control character other than newline and tab, a C1 control or invalid
// UTF-8, or a line starting with the injected text.
func checkInert(t *testing.T, what string, out []byte) {
	t.Helper()
	if !bytes.Equal(out, []byte(strings.ToValidUTF8(string(out), "?"))) {
		t.Errorf("%s holds invalid UTF-8", what)
	}
	for _, r := range string(out) {
		if r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r < 0xa0 {
			t.Errorf("%s holds control character %U", what, r)
			break
		}
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(strings.TrimLeft(line, " |`-*#"), "FAKE") {
			t.Errorf("%s has an injected line %q", what, line)
		}
	}
	if !bytes.Contains(out, []byte(`\x1b[2J`)) {
		t.Errorf("%s does not show the ESC escaped", what)
	}
}

// TestHostileNamesEscaped: file, category and site names from the inputs reach the text and Markdown reports
// and the cross-rank text with ESC, C1 controls, bells, invalid bytes and line breaks escaped. They used to reach
// the terminal raw: a file name could clear the screen or add lines of its own.
func TestHostileNamesEscaped(t *testing.T) {
	run := htmlSampleRun()
	for _, r := range run.Inputs {
		r.File = hostile + ".pickle"
		r.Categories = append(r.Categories, report.CategoryStat{Name: hostile, Bytes: 1, Count: 1})
		r.Sites[0].Site = hostile
		r.Top[0].Site = hostile
		r.Warnings = append(r.Warnings, hostile)
	}
	run.Failures = []report.Failure{{File: hostile, Error: "cannot read"}}
	var text, md bytes.Buffer
	if err := WriteText(&text, run, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	checkInert(t, "the text report", text.Bytes())
	if err := WriteMarkdown(&md, run, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	checkInert(t, "README.md", md.Bytes())

	m := merge.New(merge.Options{})
	for r := range 3 {
		m.Add(&merge.RankSummary{Kind: merge.SummaryKind, Version: merge.SummaryVersion, Rank: r, Iteration: 1, Stage: -1,
			File: fmt.Sprintf("%s%d", hostile, r), ReservedBytes: int64(r+1) << 30, AllocatedBytes: 1 << 29, PeakBytes: 1 << 29,
			Categories: []report.CategoryStat{{Name: hostile, Bytes: 1 << 20, Count: 1}}})
	}
	var cross bytes.Buffer
	if err := WriteCrossRankText(&cross, m.Result(), 0); err != nil {
		t.Fatal(err)
	}
	checkInert(t, "the cross-rank text", cross.Bytes())
}
