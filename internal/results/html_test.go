package results

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/plots"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/report"
)

// htmlSampleRun builds a two-input run by hand; the totals obey reserved = requested + internal + external.
func htmlSampleRun() *report.Run {
	mk := func(file string, rank int, requested int64) *report.Report {
		internal, external := int64(7_000_123), int64(2<<30+17)
		return &report.Report{
			Header: report.Header{File: file, Format: "pickle-v4", TorchFormat: "2.1+", Rank: rank, Iteration: 3, Devices: []int{0}, Categories: []report.CategoryStat{{Name: "Activation", Bytes: requested/2 + internal, Count: 7}, {Name: "<Unknown & co>", Bytes: requested - requested/2, Count: 2}}, Sites: []report.SiteStat{{Site: "model.py:10:forward", Category: "Activation", Bytes: requested/2 + internal, Count: 7}}, Top: []report.Allocation{{Size: 123_456_789, RequestedSize: 123_456_000, Category: "Activation", Site: "model.py:10:forward"}}, Peak: &report.Peak{Device: 0, Bytes: requested + 999, EventIndex: 41, Categories: []report.CategoryStat{{Name: "Activation", Bytes: requested + 999}}}, Recommendations: []findings.Finding{{ID: "cache-overhead", Severity: "warning", Title: "Cached free memory is <large>",
				Evidence: "2.0 GiB cached", Advice: "call empty_cache"}}, Warnings: []string{"a <script>alert(1)</script> warning"}},
			Part: &report.SnapshotReport{Totals: report.Totals{
				ReservedBytes: requested + internal + external, AllocatedBytes: requested + internal, RequestedBytes: requested,
				ActiveBytes: requested + internal, InactiveBytes: external, InternalFreeBytes: internal, ExternalFreeBytes: external,
				EfficiencyPct: float64(requested) * 100 / float64(requested+internal+external), LargestFreeBlockBytes: 1 << 30,
				Segments: 12, Blocks: 99,
			}, OOMs: []report.OOM{{Device: 0, EventIndex: 40, RequestedBytes: 3 << 30, DeviceFreeBytes: 1 << 20}}},
		}
	}
	run := &report.Run{Version: report.ReportVersion, Tool: "memscan test", Inputs: []*report.Report{
		mk("iteration_3/rank0_memory_snapshot.pickle", 0, 30<<30+5), mk("iteration_3/rank1_memory_snapshot.pickle", 1, 28<<30+11)}}
	run.Cross = analyze.CrossInputs(run.Inputs)
	return run
}

var (
	sectionRe = regexp.MustCompile(`<section data-input="(\d+)"[^>]*>`)
	// A grouped row (identical top allocations) carries data-count: it stands for that many list entries.
	fieldRe = regexp.MustCompile(`data-field="([^"]+)" data-value="([^"]+)"(?: data-count="(\d+)")?`)
)

// checkHTMLAgainstSummary compares every number tagged in the page with summary.json: totals by key, category
// and top-allocation bytes in order, the peak and the OOM sizes.
func checkHTMLAgainstSummary(t *testing.T, page, summary []byte) {
	t.Helper()
	var sum struct {
		Inputs []map[string]any `json:"inputs"`
		Cross  map[string]any   `json:"cross"`
	}
	if err := json.Unmarshal(summary, &sum); err != nil {
		t.Fatal(err)
	}
	locs := sectionRe.FindAllSubmatchIndex(page, -1)
	if len(locs) != len(sum.Inputs) {
		t.Fatalf("%d input sections in the page, %d inputs in summary.json", len(locs), len(sum.Inputs))
	}
	checked := 0
	for k, loc := range locs {
		i, _ := strconv.Atoi(string(page[loc[2]:loc[3]]))
		end := len(page)
		if k+1 < len(locs) {
			end = locs[k+1][0]
		}
		in := sum.Inputs[i]
		lists := map[string][]float64{}
		for _, c := range in["categories"].([]any) {
			lists["categories.bytes"] = append(lists["categories.bytes"], c.(map[string]any)["bytes"].(float64))
		}
		for _, a := range in["top"].([]any) {
			lists["top.size"] = append(lists["top.size"], a.(map[string]any)["size"].(float64))
		}
		for _, o := range in["ooms"].([]any) {
			lists["ooms.requested_bytes"] = append(lists["ooms.requested_bytes"], o.(map[string]any)["requested_bytes"].(float64))
		}
		seen := map[string]int{}
		for _, m := range fieldRe.FindAllSubmatch(page[loc[0]:end], -1) {
			key, val := string(m[1]), string(m[2])
			count := 1
			if len(m[3]) > 0 {
				count, _ = strconv.Atoi(string(m[3]))
			}
			got, err := strconv.ParseFloat(val, 64)
			if err != nil {
				t.Fatalf("input %d: %s has value %q", i, key, val)
			}
			var want float64
			switch {
			case key == "peak.bytes":
				want = in["peak"].(map[string]any)["bytes"].(float64)
			case lists[key] != nil || strings.Contains(key, "."):
				n := seen[key]
				if n+count > len(lists[key]) {
					t.Fatalf("input %d: more %s values in the page than in summary.json", i, key)
				}
				want = lists[key][n]
				for _, w := range lists[key][n : n+count] {
					if w != want {
						t.Errorf("input %d: a row of %d %s stands for different values %v", i, count, key, lists[key][n:n+count])
					}
				}
			default:
				v, ok := in[key].(float64)
				if !ok {
					t.Fatalf("input %d: summary.json has no number %q", i, key)
				}
				want = v
			}
			seen[key] += count
			if key == "efficiency_pct" {
				if d := got - want; d > 1e-9 || d < -1e-9 {
					t.Errorf("input %d: efficiency %v in the page, %v in summary.json", i, got, want)
				}
			} else if got != want {
				t.Errorf("input %d: %s = %v in the page, %v in summary.json", i, key, got, want)
			}
			checked++
		}
		allocator := in["tracer"] == nil && in["log"] == nil && in["memory_timeline"] == nil
		if allocator && (seen["reserved_bytes"] != 1 || seen["allocated_bytes"] != 1 || seen["requested_bytes"] != 1) {
			t.Errorf("input %d: totals missing from the page (%v)", i, seen)
		}
		if seen["categories.bytes"] != len(lists["categories.bytes"]) {
			t.Errorf("input %d: %d category rows in the page, %d in summary.json", i, seen["categories.bytes"], len(lists["categories.bytes"]))
		}
	}
	if checked == 0 {
		t.Fatal("no numbers checked")
	}
}

func writeRunFiles(t *testing.T, dir string, run *report.Run) (page, summary []byte) {
	t.Helper()
	var js bytes.Buffer
	if err := WriteJSON(&js, run); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(dir, run); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, FileHTML))
	if err != nil {
		t.Fatal(err)
	}
	return page, js.Bytes()
}

func TestWriteHTMLMatchesSummary(t *testing.T) {
	dir := t.TempDir()
	run := htmlSampleRun()
	// One chart per input subdirectory and one cross chart, drawn by the plots package.
	for _, sub := range []string{"", "rank0_iter3", "rank1_iter3"} {
		if sub != "" {
			os.MkdirAll(filepath.Join(dir, sub), 0o755)
		}
		err := plots.Bars(filepath.Join(dir, sub, "chart.png"), plots.BarChart{Title: "t", Labels: []string{"a"}, Values: []float64{1 << 20}})
		if err != nil {
			t.Fatal(err)
		}
	}
	page, summary := writeRunFiles(t, dir, run)
	checkHTMLAgainstSummary(t, page, summary)
	s := string(page)
	for _, bad := range []string{"http://", "https://", "<script src", "<script>alert", "<link", "@import"} {
		if strings.Contains(s, bad) {
			t.Errorf("page contains %q: not self-contained or not escaped", bad)
		}
	}
	// The one script is memscan's viewer (these reports have no trace, so no timeline data).
	if n := strings.Count(s, "<script"); n != 1 {
		t.Errorf("page has %d scripts, want only the viewer's", n)
	}
	// The sample OOM asked for 3 GiB with 1 MiB free: written as PyTorch's message writes them (format_size).
	if !strings.Contains(s, ">3.00 GiB</td><td class=\"num\">1024.00 KiB</td>") {
		t.Error("the OOM's request and free memory are not written as PyTorch writes them")
	}
	if !strings.Contains(s, "&lt;script&gt;") || !strings.Contains(s, "&lt;Unknown &amp; co&gt;") {
		t.Error("report text is not HTML-escaped")
	}
	if n := strings.Count(s, `src="data:image/png;base64,`); n < 1 {
		t.Errorf("%d embedded charts, want at least the cross chart", n)
	}
	// The sample inputs ran on one device each: "device 0", not "devices 0", which reads as none.
	if !strings.Contains(s, " · device 0 · ") || strings.Contains(s, "devices 0") {
		t.Error("a single device is not named as one")
	}
}

// TestWriteHTMLRealSnapshot renders the page of a real snapshot analysis with its charts and checks its numbers.
func TestWriteHTMLRealSnapshot(t *testing.T) {
	shared := testutil.SharedDir(t, "real_snapshots")
	path := filepath.Join(shared, "JasperSolt__EoR_NN__snapshot.pickle")
	ctx := context.Background()
	in, err := load.DecodeFile(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analyze.Analyze(ctx, in, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	run := &report.Run{Version: report.ReportVersion, Tool: "memscan test", Inputs: []*report.Report{rep}}
	dir := t.TempDir()
	set, err := WritePlots(ctx, dir, run, 2)
	if err != nil {
		t.Fatal(err)
	}
	page, summary := writeRunFiles(t, dir, run)
	checkHTMLAgainstSummary(t, page, summary)
	// Every chart is embedded but the timeline PNG, which the interactive timeline replaces on the page.
	want := 0
	for _, f := range set.Inputs[0] {
		if !strings.HasPrefix(f.Path, "memory_timeline") {
			want++
		}
	}
	if got := strings.Count(string(page), `src="data:image/png;base64,`); got != want || !strings.Contains(string(page), `class="timeline"`) {
		t.Errorf("%d charts embedded, want %d of the %d drawn, and the interactive timeline", got, want, len(set.Inputs[0]))
	}
}

// TestHTMLRendersInChromium loads the page in a real headless browser and checks the rendered DOM carries the
// exact reserved bytes, and that a screenshot is produced.
func TestHTMLRendersInChromium(t *testing.T) {
	var browser string
	for _, b := range []string{"/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"} {
		if _, err := os.Stat(b); err == nil {
			browser = b
			break
		}
	}
	if browser == "" {
		t.Skip("no Chromium installed (/usr/bin/chromium): skipping the headless-browser rendering test")
	}
	dir := t.TempDir()
	run := htmlSampleRun()
	writeRunFiles(t, dir, run)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	url := "file://" + filepath.Join(dir, FileHTML)
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + filepath.Join(dir, "profile")}
	dom, err := exec.CommandContext(ctx, browser, append(args, "--dump-dom", url)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom: %v", err)
	}
	// Input 0 reserves requested (30 GiB + 5) + internal 7 000 123 + external (2 GiB + 17) = 34 366 738 513 bytes.
	const want = "34 366 738 513"
	if !strings.Contains(string(dom), want) {
		t.Errorf("rendered DOM lacks the reserved bytes %s", want)
	}
	shot := filepath.Join(dir, "shot.png")
	if out, err := exec.CommandContext(ctx, browser, append(args, "--screenshot="+shot, "--window-size=1366,900", url)...).CombinedOutput(); err != nil {
		t.Fatalf("chromium --screenshot: %v\n%s", err, out)
	}
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 1000 {
		t.Errorf("no screenshot: %v", err)
	}
}

// TestHTMLTopGroupsCountWholeList: the page groups identical allocations over the whole top list, as the text
// report does, and only then caps the rows. 25 distinct allocations followed by 10 identical ones: the group is
// ×10 (capping at htmlRows = 30 first would show ×5).
func TestHTMLTopGroupsCountWholeList(t *testing.T) {
	r := &report.Report{Header: report.Header{File: "rank0.pickle", Rank: 0, Iteration: -1}, Part: &report.SnapshotReport{}}
	for i := range 25 {
		size := int64(100-i) << 20
		r.Top = append(r.Top, report.Allocation{Size: size, RequestedSize: size, Site: fmt.Sprintf("model.py:%d:forward", i), Category: "Activation", State: "active_allocated"})
	}
	for range 10 {
		r.Top = append(r.Top, report.Allocation{Size: 1 << 20, RequestedSize: 1 << 20, Site: "train.py:7:step", Category: "Gradient", State: "active_allocated"})
	}
	dir := t.TempDir()
	if err := WriteHTML(dir, &report.Run{Version: 1, Inputs: []*report.Report{r}}); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, FileHTML))
	if err != nil {
		t.Fatal(err)
	}
	if want := `data-value="1048576" data-count="10"`; !strings.Contains(string(page), want) {
		t.Errorf("page has no row %s", want)
	}
	var text bytes.Buffer
	if err := WriteText(&text, &report.Run{Version: 1, Inputs: []*report.Report{r}}, TextOptions{Top: 50}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "×10") {
		t.Errorf("text report does not count the group ×10:\n%s", text.String())
	}
}
