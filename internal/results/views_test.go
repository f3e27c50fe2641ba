package results

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/report"
)

func TestGroupAllocations(t *testing.T) {
	a := report.Allocation{Size: 4 << 20, RequestedSize: 4 << 20, Category: "Optimizer State", State: "active_allocated", Site: "train.py:66:main"}
	b := a
	b.Site = "model.py:45:__init__"
	c := a
	c.RequestedSize-- // same block size, another request: not the same row
	d := a
	d.Device, d.Address = 1, 0x1000 // another device or address: still the same row
	tests := []struct {
		name  string
		top   []report.Allocation
		n     int
		ranks []int
		count []int
	}{
		{"all distinct", []report.Allocation{a, b, c}, 3, []int{1, 2, 3}, []int{1, 1, 1}},
		{"runs and stragglers", []report.Allocation{a, a, b, a, d, c}, 6, []int{1, 3, 6}, []int{4, 1, 1}},
		{"limit applies before grouping", []report.Allocation{a, a, a, b}, 2, []int{1}, []int{2}},
		{"limit above length", []report.Allocation{a}, 50, []int{1}, []int{1}},
		{"empty", nil, 50, nil, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gs := groupAllocations(tc.top, tc.n)
			if len(gs) != len(tc.ranks) {
				t.Fatalf("%d groups, want %d: %+v", len(gs), len(tc.ranks), gs)
			}
			total := 0
			if tc.name == "runs and stragglers" && gs[0].Device != -1 {
				t.Errorf("a group on devices 0 and 1 has device %d, want -1", gs[0].Device)
			}
			for i, g := range gs {
				if g.Rank != tc.ranks[i] || g.Count != tc.count[i] {
					t.Errorf("group %d: rank %d count %d, want %d %d", i, g.Rank, g.Count, tc.ranks[i], tc.count[i])
				}
				total += g.Count
			}
			if want := min(tc.n, len(tc.top)); total != want {
				t.Errorf("groups cover %d allocations, want %d", total, want)
			}
		})
	}
}

// TestRepeatedTopKeepsEveryAllocationInJSON checks the split between the readable report (identical allocations
// on one row with ×N) and summary.json, which keeps one entry per allocation.
func TestRepeatedTopKeepsEveryAllocationInJSON(t *testing.T) {
	run := repeatedRun()
	var txt, js bytes.Buffer
	if err := WriteText(&txt, run, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&js, run); err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Inputs []struct {
			Top []report.Allocation `json:"top"`
		} `json:"inputs"`
	}
	if err := json.Unmarshal(js.Bytes(), &sum); err != nil {
		t.Fatal(err)
	}
	if got, want := len(sum.Inputs[0].Top), len(run.Inputs[0].Top); got != want {
		t.Errorf("summary.json has %d top entries, want one per allocation (%d)", got, want)
	}
	out := txt.String()
	// 1 + 6 + 3 + 1 allocations, 4 distinct rows; the ×6 row starts at position 2, the ×3 row at 2 + 6 = 8.
	for _, want := range []string{"Top 11 allocations at the dump (4 distinct", "  2   4.0 MiB   4 194 304     ×6", "  8   4.0 MiB   4 194 304     ×3"} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q", want)
		}
	}
	if n := strings.Count(out, "train.py:66:main"); n != 2 {
		t.Errorf("train.py:66:main on %d rows, want 2 (×6 and the one with another requested size)", n)
	}
}

// tracerOnlyRun is two tracer inputs, which have a peak and listed bytes but no allocator totals.
func tracerOnlyRun() *report.Run {
	const mib = int64(1) << 20
	mk := func(file string, rank int, peak, listed int64) *report.Report {
		return &report.Report{
			Header: report.Header{File: file, Format: "tracer-json", Rank: rank, Iteration: -1, Devices: []int{0}},
			Part: &report.TracerReport{PeakBytes: peak, ListedBytes: listed, Tracer: &report.TracerView{Rank: rank, Device: "cuda:0", Devices: []report.TracerDeviceView{{Device: "cuda:0", PeakBytes: peak, ListedBytes: listed,
				GapBytes: peak - listed, Tensors: 3,
				Modules: []report.ModuleStat{{Pattern: report.UnknownModule, Bytes: listed / 2, Count: 2, MergedModules: 1, SharePct: 50}}}}}},
		}
	}
	inputs := []*report.Report{mk("tracer_rank0.json", 0, 12*mib+5, 10*mib), mk("tracer_rank1.json", 1, 16*mib+7, 13*mib)}
	run := &report.Run{Version: report.ReportVersion, Tool: "memscan test", Inputs: inputs, Cross: analyze.CrossInputs(inputs)}
	run.Cross.Tracer = analyze.CrossTracer(inputs)
	return run
}

// TestCrossTableTracerOnly checks that a run of tracer files shows what tracer files have (peak, listed bytes)
// in its cross-input table, in every renderer, and not reserved or allocated columns full of 0 B.
func TestCrossTableTracerOnly(t *testing.T) {
	run := tracerOnlyRun()
	page := htmlPage(t, run)
	var txt, md bytes.Buffer
	if err := WriteText(&txt, run, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, run, MarkdownOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string]string{"text": txt.String(), "markdown": md.String(), "html": string(page)} {
		i := strings.Index(doc, "Across inputs")
		if i < 0 {
			t.Fatalf("%s: no cross-input section", name)
		}
		cross := doc[i:]
		if j := strings.Index(cross, "Tracer inputs by rank"); j > 0 {
			cross = cross[:j]
		}
		if j := strings.Index(cross, "<section"); j > 0 { // the page's inputs follow, then its script
			cross = cross[:j]
		}
		for _, bad := range []string{"reserved", "allocated", "efficiency", "0 B", "0.00 %"} {
			if strings.Contains(cross, bad) {
				t.Errorf("%s: the cross-input table of a tracer-only run shows %q:\n%s", name, bad, cross)
			}
		}
		for _, want := range []string{"listed", "12.0 MiB", "16.0 MiB", "10.0 MiB", "13.0 MiB"} {
			if !strings.Contains(cross, want) {
				t.Errorf("%s: the cross-input table lacks %q", name, want)
			}
		}
		// The Unknown group holds tensors created outside any module: it merged nothing.
		if strings.Contains(doc, "modules merged") || strings.Contains(doc, "1 module") {
			t.Errorf("%s: the Unknown module group is described as merged modules", name)
		}
	}
}

// TestTheoreticalNotPrinted checks that Megatron estimates the log does not print (−1) render as "-".
func TestTheoreticalNotPrinted(t *testing.T) {
	run := viewsRun()
	page := htmlPage(t, run)
	var txt bytes.Buffer
	if err := WriteText(&txt, run, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string]string{"text": txt.String(), "html": string(page)} {
		if !strings.Contains(doc, "weight and optimizer 39.1 GiB, activation -, total -") {
			t.Errorf("%s: the theoretical estimate does not show the missing parts as -", name)
		}
		if strings.Contains(doc, "-1 B") || strings.Contains(doc, "-1.0 B") {
			t.Errorf("%s: a missing measure is rendered as a negative byte count", name)
		}
	}
}

// TestRanksChartMeasures checks that the cross-input chart draws only the measures the inputs have, and no chart
// when there is nothing to compare.
func TestRanksChartMeasures(t *testing.T) {
	const mib = int64(1) << 20
	snap := func(file string, rank int) *report.Report {
		return &report.Report{Header: report.Header{File: file, Rank: rank, Iteration: -1},
			Part: &report.SnapshotReport{Totals: report.Totals{ReservedBytes: 100 * mib, AllocatedBytes: 60 * mib}}}
	}
	logWith := func(file string, peak int64) *report.Report {
		return &report.Report{Header: report.Header{File: file, Rank: -1, Iteration: -1}, Part: &report.LogReport{Log: &report.LogView{PeakAllocatedBytes: peak, PeakReservedBytes: -1}}}
	}
	tests := []struct {
		name   string
		inputs []*report.Report
		title  string // "" for no chart
	}{
		{"snapshots", []*report.Report{snap("rank0.pickle", 0), snap("rank1.pickle", 1)}, "Across 2 inputs: reserved and allocated memory"},
		{"tracer files", tracerOnlyRun().Inputs, "Across 2 inputs: peak and listed tensor memory"},
		{"one log prints allocated", []*report.Report{logWith("ds.log", 20<<30), logWith("titan.log", -1)}, ""},
		{"two logs print allocated", []*report.Report{logWith("ds.log", 20<<30), logWith("titan.log", 10<<30)}, "Across 2 inputs: peak memory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := analyze.CrossInputs(tc.inputs)
			c.Tracer = analyze.CrossTracer(tc.inputs)
			j, ok := ranksChart(c)
			if ok != (tc.title != "") || j.file.Title != tc.title {
				t.Errorf("chart %v %q, want %q", ok, j.file.Title, tc.title)
			}
			if ok {
				if err := j.draw(filepath.Join(t.TempDir(), ChartRanks)); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

func TestTitleFile(t *testing.T) {
	long := "kkaitlyn111__cs336-a2-systems__cs336_systems_memory_logs_memory_ctx128_forward.pickle"
	tests := []struct{ path, want string }{
		{"runs/rank0_memory_snapshot.pickle", "rank0_memory_snapshot.pickle"},
		{"data/" + long, // 27 characters each side of the ellipsis
			"kkaitlyn111__cs336-a2-syste…emory_ctx128_forward.pickle"},
	}
	for _, tc := range tests {
		got := titleFile(tc.path)
		if got != tc.want {
			t.Errorf("titleFile(%q) = %q, want %q", tc.path, got, tc.want)
		}
		if n := len([]rune(got)); n > maxTitleFile {
			t.Errorf("titleFile(%q) has %d characters, more than %d", tc.path, n, maxTitleFile)
		}
	}
}

// TestChartsByKind checks which charts each kind of input gets: no allocator overview ("Reserved 0 B") for a
// profiler timeline, whose categories at the peak are the category chart.
func TestChartsByKind(t *testing.T) {
	views := viewsRun().Inputs
	timeline := views[1]
	timeline.Categories = timeline.Part.(*report.TimelineReport).MemoryTimeline.PeakComposition
	tests := []struct {
		name string
		r    *report.Report
		want map[string]bool
	}{
		{"snapshot", singleRun().Inputs[0], map[string]bool{ChartOverview: true, ChartCategories: true, ChartEfficiency: true}},
		{"tracer", views[0], map[string]bool{ChartOverview: true, ChartEfficiency: false}},
		{"timeline", timeline, map[string]bool{ChartOverview: false, ChartCategories: true, ChartEfficiency: false}},
	}
	for _, tc := range tests {
		got := map[string]bool{}
		for _, j := range reportCharts(tc.r) {
			got[j.file.Path] = true
		}
		for chart, want := range tc.want {
			if got[chart] != want {
				t.Errorf("%s: %s drawn %v, want %v", tc.name, chart, got[chart], want)
			}
		}
	}
}

// htmlPage renders run's index.html (without charts) and returns it.
func htmlPage(t *testing.T, run *report.Run) []byte {
	t.Helper()
	dir := t.TempDir()
	if err := WriteHTML(dir, run); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, FileHTML))
	if err != nil {
		t.Fatal(err)
	}
	return page
}

// TestRanksReferenceNamesIteration: with snapshots of two iterations the dashed median line is the median of the
// iteration the imbalance statistics describe (analyze.CrossInputs picks the most unbalanced), and says which;
// for one iteration it stays "median reserved". Iteration 1: {100, 150} MiB (median 100, the lower of two: 50 %);
// iteration 2: {100, 300} MiB (median 100 MiB, 200 %). Every input is a snapshot: four in the first run, two in
// the second.
func TestRanksReferenceNamesIteration(t *testing.T) {
	rep := func(rank, iter int, reserved int64) *report.Report {
		return &report.Report{Header: report.Header{File: fmt.Sprintf("iteration_%d/rank%d.pickle", iter, rank), Rank: rank, Iteration: iter},
			Part: &report.SnapshotReport{Totals: report.Totals{ReservedBytes: reserved}}}
	}
	two := analyze.CrossInputs([]*report.Report{rep(0, 1, 100<<20), rep(1, 1, 150<<20), rep(0, 2, 100<<20), rep(1, 2, 300<<20)})
	if ref, label := ranksReference(two, 4); ref != 100<<20 || label != "median reserved, iteration 2" {
		t.Errorf("two iterations: %v %q", ref, label)
	}
	one := analyze.CrossInputs([]*report.Report{rep(0, 1, 100<<20), rep(1, 1, 150<<20)})
	if ref, label := ranksReference(one, 2); ref != 100<<20 || label != "median reserved" {
		t.Errorf("one iteration: %v %q", ref, label)
	}
}
