package results

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/internal/browser"
	"github.com/memscan/memscan/internal/gen"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/report"
)

// pageRun analyzes a generated snapshot of entries trace events and writes its run directory (no PNGs: the
// timeline is the page's own); it returns the page's path, summary.json decoded and the run.
func pageRun(t *testing.T, entries int, oom bool) (string, map[string]any, *report.Run) {
	t.Helper()
	snap := filepath.Join(t.TempDir(), "gen.pickle")
	f, err := os.Create(snap)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gen.Write(f, gen.Config{Seed: 5, Entries: entries, Stacks: gen.StacksPython, ShareStack: true, OOM: oom}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return analyzePage(t, snap)
}

// analyzePage analyzes the snapshot at path and writes its run directory without charts; it returns the page's
// path, summary.json decoded and the run.
func analyzePage(t *testing.T, path string) (string, map[string]any, *report.Run) {
	t.Helper()
	ctx := context.Background()
	rep, err := analyze.AnalyzeFile(ctx, path, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	run := &report.Run{Version: report.ReportVersion, Tool: "memscan test", Inputs: []*report.Report{rep}}
	out := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(ctx, out, run, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(out, FileSummary))
	if err != nil {
		t.Fatal(err)
	}
	var sum map[string]any
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(out, FileHTML), sum, run
}

func startBrowser(t *testing.T) *browser.Session {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	s, err := browser.Start(ctx, 1366, 900)
	if errors.Is(err, browser.ErrNoBrowser) {
		t.Skip("no Chromium installed (apt-get install chromium): skipping the interactive page's browser checks")
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

func eval[T any](t *testing.T, s *browser.Session, js string) T {
	t.Helper()
	v, err := chromedp.Run(s.Ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("evaluating %s: %v", js, err)
	}
	return v
}

// TestPageInBrowser loads the page of a generated snapshot in headless Chromium and uses it as a person would:
// it must make no request beyond itself, raise no script error, show the peak on the first screen (the peak the
// page rebuilds from its embedded trace equals summary.json's), show a stack frame when the mouse is over the
// timeline, zoom to a dragged range and reset on double-click.
func TestPageInBrowser(t *testing.T) {
	page, sum, _ := pageRun(t, 30000, true)
	checkPageInBrowser(t, startBrowser(t), page, sum)
}

// TestPageInBrowserRealRuns runs the same checks on the pages of real training and inference snapshots
// (../shared/gpu_runs: an OOM, varying sequence lengths, C++ stacks).
func TestPageInBrowserRealRuns(t *testing.T) {
	dir := testutil.SharedDir(t, "gpu_runs")
	files, err := filepath.Glob(filepath.Join(dir, "*.pickle.gz"))
	if err != nil || len(files) == 0 {
		t.Skipf("no snapshots in %s", dir)
	}
	s := startBrowser(t)
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			page, sum, _ := analyzePage(t, f)
			checkPageInBrowser(t, s, page, sum)
		})
	}
}

// checkPageInBrowser loads page in s and uses it as a person would (see TestPageInBrowser).
func checkPageInBrowser(t *testing.T, s *browser.Session, page string, sum map[string]any) {
	t.Helper()
	before, requested := len(s.Errors()), len(s.Requests())
	url := "file://" + page
	if _, err := s.Load(url); err != nil {
		t.Fatal(err)
	}
	in := sum["inputs"].([]any)[0].(map[string]any)
	wantPeak := int64(in["peak"].(map[string]any)["bytes"].(float64))

	// The answer comes first, inside the first screen, with summary.json's peak.
	box := eval[map[string]float64](t, s, `(() => { const r = document.querySelector('[data-answer=peak]').getBoundingClientRect(); return {top: r.top, bottom: r.bottom, h: window.innerHeight}; })()`)
	if box["bottom"] > box["h"] || box["top"] < 0 {
		t.Errorf("the peak sentence lies at %v–%v, outside the first screen of %v pixels", box["top"], box["bottom"], box["h"])
	}
	if got := eval[string](t, s, `document.querySelector('[data-answer=peak]').dataset.value`); got != strconv.FormatInt(wantPeak, 10) {
		t.Errorf("the page's peak is %s, summary.json's %d", got, wantPeak)
	}
	if got := eval[string](t, s, `document.querySelector('.timeline').dataset.peak`); got != strconv.FormatInt(wantPeak, 10) {
		t.Errorf("the timeline rebuilt a peak of %s from its data, summary.json says %d", got, wantPeak)
	}
	if ooms := in["ooms"].([]any); len(ooms) > 0 && !strings.Contains(eval[string](t, s, `document.querySelector('.answer').textContent`), "OOM on device") {
		t.Error("the OOM is not in the answer")
	}

	// The call tree of the peak: its outermost frames hold the whole peak between them.
	tree := eval[string](t, s, `(() => { const d = document.querySelector('.tl-tree'); d.open = true; d.dispatchEvent(new Event('toggle'));
		const items = d.querySelectorAll(':scope > .tl-treelist > li[data-bytes]');
		let sum = 0; items.forEach(li => sum += Number(li.dataset.bytes));
		return items.length + ' ' + sum + ' ' + (d.querySelector(':scope > .tl-treelist > .more') ? 'more' : 'all'); })()`)
	var items int
	var treeSum int64
	var whole string
	if _, err := fmt.Sscanf(tree, "%d %d %s", &items, &treeSum, &whole); err != nil || items == 0 {
		t.Errorf("the call tree of the peak is empty (%q)", tree)
	} else if whole == "all" && treeSum != wantPeak {
		t.Errorf("the call tree's outermost frames hold %d bytes, the peak is %d", treeSum, wantPeak)
	}

	// Hover over the middle of the plot: the moment and a stack frame of its largest live block appear.
	rect := eval[map[string]float64](t, s, `(() => { const r = document.querySelector('.tl-over').getBoundingClientRect(); return {x: r.left, y: r.top, w: r.width, h: r.height}; })()`)
	if err := chromedp.Do(s.Ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector('.tl-over').scrollIntoView({block: 'center'})`)); err != nil {
		t.Fatal(err)
	}
	rect = eval[map[string]float64](t, s, `(() => { const r = document.querySelector('.tl-over').getBoundingClientRect(); return {x: r.left, y: r.top, w: r.width, h: r.height}; })()`)
	midY := rect["y"] + rect["h"]/2
	at := func(frac float64) float64 { return rect["x"] + 70 + frac*(rect["w"]-82) }
	if err := chromedp.Do(s.Ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, at(0.5), midY), chromedp.Sleep(150*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	frame := eval[string](t, s, `(document.querySelector('.tl-info .frame') || {}).textContent || ''`)
	if !strings.Contains(frame, ".py:") {
		t.Errorf("hovering the timeline shows no stack frame (got %q; panel: %q)", frame, eval[string](t, s, `document.querySelector('.tl-info').textContent`))
	}
	if moment := eval[string](t, s, `document.querySelector('.tl-moment').textContent`); !strings.Contains(moment, "allocated") || !strings.Contains(moment, "reserved") {
		t.Errorf("the hovered moment lacks allocated and reserved: %q", moment)
	}

	// Drag from 30 % to 40 % of the plot: the view narrows to about a tenth of the events.
	events := eval[string](t, s, `document.querySelector('.timeline').dataset.events`)
	n, _ := strconv.Atoi(events)
	drag := chromedp.Steps(
		chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, at(0.3), midY, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, at(0.35), midY, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, at(0.4), midY, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, at(0.4), midY, chromedp.ButtonLeft),
	)
	if err := chromedp.Do(s.Ctx, drag); err != nil {
		t.Fatal(err)
	}
	from, to := viewRange(t, s)
	if span := to - from; span > n/8 || span < n/14 || from < n/4 || from > n*7/20 {
		t.Errorf("after dragging over 30–40 %% of %d events the view shows events %d–%d", n, from, to)
	}
	if err := chromedp.Do(s.Ctx, chromedp.MouseClickXY(at(0.5), midY, chromedp.ClickCount(2))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(s.Ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, at(0.5), midY, chromedp.ButtonLeft, chromedp.ClickCount(2)),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, at(0.5), midY, chromedp.ButtonLeft, chromedp.ClickCount(2))); err != nil {
		t.Fatal(err)
	}
	if from, to := viewRange(t, s); from != 0 || to != n-1 {
		t.Errorf("double-click left the view at events %d–%d, want 0–%d", from, to, n-1)
	}
	// The time axis draws the same events (the generated and real traces have times).
	sel := `document.querySelector('.tl-mode')`
	if eval[bool](t, s, `!`+sel+`.querySelector('option[value=time]').disabled`) {
		eval[bool](t, s, `(() => { const s = `+sel+`; s.value = 'time'; s.dispatchEvent(new Event('change')); return true; })()`)
		if from, to := viewRange(t, s); from != 0 || to != n-1 {
			t.Errorf("on the time axis the view shows events %d–%d, want 0–%d", from, to, n-1)
		}
	}
	// The page asked for nothing but itself (and the data: URIs of its own charts).
	for _, r := range s.Requests()[requested:] {
		if r != url && !strings.HasPrefix(r, "data:") {
			t.Errorf("the page made a request beyond itself: %s", r)
		}
	}
	if errs := s.Errors()[before:]; len(errs) > 0 {
		t.Errorf("script errors: %v", errs)
	}
}

func viewRange(t *testing.T, s *browser.Session) (int, int) {
	t.Helper()
	r := eval[string](t, s, `(() => { const d = document.querySelector('.timeline').dataset; return d.from + ' ' + d.to; })()`)
	var from, to int
	if _, err := fmt.Sscanf(r, "%d %d", &from, &to); err != nil {
		t.Fatalf("view range %q: %v", r, err)
	}
	return from, to
}

// TestServedPage: memscan view's page fetches each timeline from the server that sent it, and rebuilds the same
// peak as summary.json's; an unknown timeline is a 404.
func TestServedPage(t *testing.T) {
	_, sum, run := pageRun(t, 8000, false)
	h, err := PageHandler(run)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h) // loopback only
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/timeline/0/9/meta")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("an unknown device's timeline answered %d", resp.StatusCode)
	}
	for _, q := range []string{"env?from=5&to=1&n=3", "env?from=0&to=10&n=0", "env?from=x", "at?event=-1", "at?event=99999999"} {
		resp, err := srv.Client().Get(srv.URL + "/timeline/0/0/" + q)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 400 {
			t.Errorf("%s answered %d, want 400", q, resp.StatusCode)
		}
	}
	s := startBrowser(t)
	if _, err := s.Load(srv.URL + "/"); err != nil {
		t.Fatal(err)
	}
	want := strconv.FormatInt(int64(sum["inputs"].([]any)[0].(map[string]any)["peak"].(map[string]any)["bytes"].(float64)), 10)
	if got := eval[string](t, s, `document.querySelector('.timeline').dataset.peak`); got != want {
		t.Errorf("the served timeline rebuilt a peak of %s, summary.json says %s", got, want)
	}
	for _, r := range s.Requests() {
		if !strings.HasPrefix(r, srv.URL) && !strings.HasPrefix(r, "data:") {
			t.Errorf("the served page asked another host: %s", r)
		}
	}
	if errs := s.Errors(); len(errs) > 0 {
		t.Errorf("script errors: %v", errs)
	}
}

// TestServedPageRemote: a trace longer than the server sends whole stays on the server, and the same page asks it
// for each zoom and each hovered moment: the peak is marked, hovering shows a stack frame, a drag zooms in and a
// double-click resets, with no script error.
func TestServedPageRemote(t *testing.T) {
	_, sum, run := pageRun(t, 20000, false)
	h, err := pageHandler(run, 1000) // every trace of this run stays on the server
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	s := startBrowser(t)
	if _, err := s.Load(srv.URL + "/"); err != nil {
		t.Fatal(err)
	}
	if !eval[bool](t, s, `!!document.querySelector('.timeline[data-remote]')`) {
		t.Fatal("the page does not leave the trace on the server")
	}
	want := strconv.FormatInt(int64(sum["inputs"].([]any)[0].(map[string]any)["peak"].(map[string]any)["bytes"].(float64)), 10)
	if got := eval[string](t, s, `document.querySelector('.timeline').dataset.peak`); got != want {
		t.Errorf("the remote timeline's peak is %s, summary.json says %s", got, want)
	}
	// The highest column drawn is the peak: the server's buckets keep every column's maximum.
	top := eval[float64](t, s, `Math.max(...document.querySelector('.timeline').view.cols.filter(c => c).map(c => c.amax))`)
	if strconv.FormatInt(int64(top), 10) != want {
		t.Errorf("the highest column is %v, the peak %s", top, want)
	}
	if err := chromedp.Do(s.Ctx, chromedp.Evaluate[chromedp.Void](`document.querySelector('.tl-over').scrollIntoView({block: 'center'})`)); err != nil {
		t.Fatal(err)
	}
	rect := eval[map[string]float64](t, s, `(() => { const r = document.querySelector('.tl-over').getBoundingClientRect(); return {x: r.left, y: r.top, w: r.width, h: r.height}; })()`)
	midY := rect["y"] + rect["h"]/2
	at := func(frac float64) float64 { return rect["x"] + 70 + frac*(rect["w"]-82) }
	if err := chromedp.Do(s.Ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, at(0.5), midY), chromedp.Sleep(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if frame := eval[string](t, s, `(document.querySelector('.tl-info .frame') || {}).textContent || ''`); !strings.Contains(frame, ".py:") {
		t.Errorf("hovering the remote timeline shows no stack frame (%q)", frame)
	}
	n := int(eval[float64](t, s, `document.querySelector('.timeline').view.m.n`))
	if err := chromedp.Do(s.Ctx,
		chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, at(0.3), midY, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, at(0.4), midY, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, at(0.4), midY, chromedp.ButtonLeft),
		chromedp.Sleep(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if from, to := viewRange(t, s); to-from > n/8 || to-from < n/14 {
		t.Errorf("after a drag over a tenth of %d events the remote view shows %d–%d", n, from, to)
	}
	if err := chromedp.Do(s.Ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, at(0.5), midY, chromedp.ButtonLeft, chromedp.ClickCount(2)),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, at(0.5), midY, chromedp.ButtonLeft, chromedp.ClickCount(2)),
		chromedp.Sleep(300*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if from, to := viewRange(t, s); from != 0 || to != n-1 {
		t.Errorf("double-click left the remote view at %d–%d", from, to)
	}
	if errs := s.Errors(); len(errs) > 0 {
		t.Errorf("script errors: %v", errs)
	}
}
