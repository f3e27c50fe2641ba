package results

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/gen"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/snapshot"
)

// TestPageTimelinesBudget: a timeline that does not fit the page's budget is left out with a note that names
// memscan view, one that fits is embedded and takes its size from the budget, and a served page embeds none.
func TestPageTimelinesBudget(t *testing.T) {
	r := genReport(t, 2, 4000, analyze.Options{})
	r.File = "gen.pickle"
	p := r.Part.(*report.SnapshotReport)

	budget := 1 << 20
	tls, note, err := pageTimelines(0, r, p, &budget, pageOptions{}, nil)
	if err != nil || len(tls) != 1 || note != "" {
		t.Fatalf("with room: %d timelines, note %q, %v", len(tls), note, err)
	}
	if used := 1<<20 - budget; used != len(tls[0].Blob)+len(tls[0].Meta) || used == 0 {
		t.Errorf("the budget went down by %d for a timeline of %d bytes", used, len(tls[0].Blob)+len(tls[0].Meta))
	}
	small := 100
	tls, note, err = pageTimelines(0, r, p, &small, pageOptions{}, nil)
	if err != nil || len(tls) != 0 || !strings.Contains(note, "memscan view gen.pickle") || small != 100 {
		t.Errorf("without room: %d timelines, note %q, budget %d, %v", len(tls), note, small, err)
	}
	tls, _, err = pageTimelines(0, r, p, &small, pageOptions{served: true}, nil)
	if err != nil || len(tls) != 1 || tls[0].Blob != "" || tls[0].Src != "timeline/0/0" {
		t.Errorf("served: %+v, %v", tls, err)
	}
}

func TestRankFindings(t *testing.T) {
	recs := []findings.Finding{
		{ID: "a", Unit: findings.Percent, Value: 99},
		{ID: "b", Unit: findings.Bytes, Value: 1 << 20},
		{ID: "c", Unit: findings.Ratio, Value: 3},
		{ID: "d", Unit: findings.Bytes, Value: 5 << 30},
	}
	var got []string
	for _, r := range rankFindings(recs) {
		got = append(got, string(r.ID))
	}
	if strings.Join(got, "") != "dbac" {
		t.Errorf("ranked %v, want d b (bytes, most first) then a c in their order", got)
	}
	if recs[0].ID != "a" {
		t.Error("rankFindings reordered its input")
	}
}

func TestFoldTextFits(t *testing.T) {
	long := strings.Repeat("word ", 60) + strings.Repeat("x", 150)
	for _, w := range []int{30, 80} {
		for _, line := range foldText(long, w) {
			if n := len([]rune(line)); n > w {
				t.Errorf("width %d: a line of %d runes", w, n)
			}
		}
	}
}

// TestPageDataPerEvent bounds the embedded timeline's size per trace event on a generated snapshot (Python stacks,
// as memscan-gen writes the 1.5M-event benchmark file): at most maxBlobPerEvent bytes, so that a 1.5M-event
// trace's page stays under 10 MB with its charts (bench/page.sh measures the real file and its load time).
func TestPageDataPerEvent(t *testing.T) {
	const events, maxBlobPerEvent = 150_000, 5.2
	r := genReport(t, 1, events, analyze.Options{})
	d := &r.Part.(*report.SnapshotReport).Details[0]
	tl, err := newPageTimeline(0, r.Part.(*report.SnapshotReport), d)
	if err != nil {
		t.Fatal(err)
	}
	per := float64(len(tl.Blob)+len(tl.Meta)) / float64(d.Events)
	t.Logf("%d events, %d blocks: %d bytes of data and %d of names, %.2f bytes per event", d.Events, len(d.Start), len(tl.Blob), len(tl.Meta), per)
	if per > maxBlobPerEvent {
		t.Errorf("%.2f bytes per event embedded, at most %.1f", per, maxBlobPerEvent)
	}
}

// TestSummaryFitsWidth: the console summary of a run with long paths, an OOM and long findings stays within
// SummaryWidth columns, and leads with the cross-input table.
func TestSummaryFitsWidth(t *testing.T) {
	run := htmlSampleRun()
	for _, r := range run.Inputs {
		r.File = "/very/long/path/to/a/training/job/outputs/memory_snapshot/" + strings.Repeat("deep/", 8) + r.File
		r.Recommendations = append(r.Recommendations, findings.Finding{ID: "x", Severity: "warning",
			Title: strings.Repeat("a long finding title ", 8), Advice: strings.Repeat("advice that goes on ", 20), Unit: findings.Bytes, Value: 1 << 30})
	}
	run.Cross = analyze.CrossInputs(run.Inputs)
	var buf bytes.Buffer
	if err := WriteSummary(&buf, run); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, line := range strings.Split(out, "\n") {
		if n := len([]rune(line)); n > SummaryWidth {
			t.Errorf("a line of %d columns: %q", n, line)
		}
	}
	if a, p := strings.Index(out, "Across 2 inputs"), strings.Index(out, "Peak "); a < 0 || p < a {
		t.Errorf("the cross-input table does not come first:\n%s", out)
	}
	if i := strings.Index(out, "a long finding"); i < 0 || i > strings.Index(out, "At the dump") {
		t.Errorf("the findings do not come before the totals at the dump:\n%s", out)
	}
}

// TestPageNotesTracesWithoutDetail: a trace the analysis kept only downsampled gets a note naming memscan view.
func TestPageNotesTracesWithoutDetail(t *testing.T) {
	r := genReport(t, 2, 3000, analyze.Options{MaxTimelineDetailEvents: 10})
	r.File = "big.pickle"
	budget := 1 << 20
	tls, note, err := pageTimelines(0, r, r.Part.(*report.SnapshotReport), &budget, pageOptions{}, nil)
	if err != nil || len(tls) != 0 || !strings.Contains(note, "memscan view big.pickle") {
		t.Errorf("%d timelines, note %q, %v", len(tls), note, err)
	}
}

// genReport analyzes a generated snapshot of the given size (Python stacks, as memscan-gen writes the benchmark
// file).
func genReport(t *testing.T, seed int64, entries int, opts analyze.Options) *report.Report {
	t.Helper()
	var buf bytes.Buffer
	if _, err := gen.Write(&buf, gen.Config{Seed: seed, Entries: entries, Stacks: gen.StacksPython, ShareStack: true}); err != nil {
		t.Fatal(err)
	}
	s, err := snapshot.DecodePickle(context.Background(), "gen", bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	r, err := analyze.AnalyzeSnapshot(context.Background(), s, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
