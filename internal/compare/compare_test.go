package compare_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/internal/compare"
	"github.com/memscan/memscan/internal/pipeline"
	"github.com/memscan/memscan/internal/results"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/snapshot"
)

// compareFixture returns two reports built by hand. Before: 1000 allocated bytes in two categories plus 24 bytes
// the categories miss; after: 1500 bytes, a new category, one vanished site.
func compareFixture() (compare.Input, compare.Input) {
	before := &report.Report{
		Header: report.Header{File: "before.pickle", Format: "pickle-v4", Categories: []report.CategoryStat{{Name: "Activation", Bytes: 600, Count: 3}, {Name: "Parameter", Bytes: 400, Count: 1}}, Sites: []report.SiteStat{{Site: "/src/model.py:10:forward", Category: "Activation", Bytes: 600, Count: 3},
			{Site: "/src/init.py:5:build", Category: "Parameter", Bytes: 400, Count: 1}}, Peak: &report.Peak{Device: 0, Bytes: 2000, Categories: []report.CategoryStat{{Name: "Activation", Bytes: 1600}, {Name: "Parameter", Bytes: 400}},
			Sites: []report.SiteStat{{Site: "/src/model.py:10:forward", Category: "Activation", Bytes: 1600}, {Site: "/src/init.py:5:build", Category: "Parameter", Bytes: 400}}}},
		Part: &report.SnapshotReport{Totals: report.Totals{ReservedBytes: 4096, AllocatedBytes: 1024, RequestedBytes: 1000, Segments: 2, Blocks: 5}},
	}
	after := &report.Report{
		Header: report.Header{File: "after.pickle", Format: "pickle-v4", Categories: []report.CategoryStat{{Name: "Activation", Bytes: 700, Count: 4}, {Name: "Parameter", Bytes: 400, Count: 1},
			{Name: "Optimizer", Bytes: 400, Count: 2}}, Sites: []report.SiteStat{{Site: "/src/model.py:10:forward", Category: "Activation", Bytes: 700, Count: 4},
			{Site: "/src/init.py:5:build", Category: "Parameter", Bytes: 400, Count: 1},
			{Site: `C:\src\opt.py:7:step`, Category: "Optimizer", Bytes: 400, Count: 2}}, Peak: &report.Peak{Device: 0, Bytes: 2600, Categories: []report.CategoryStat{{Name: "Activation", Bytes: 1800}, {Name: "Parameter", Bytes: 400}, {Name: "Optimizer", Bytes: 400}},
			Sites: []report.SiteStat{{Site: "/src/model.py:10:forward", Category: "Activation", Bytes: 1800}}}},
		Part: &report.SnapshotReport{Totals: report.Totals{ReservedBytes: 8192, AllocatedBytes: 1500, RequestedBytes: 1400, Segments: 3, Blocks: 6}, OOMs: []report.OOM{{Device: 0}}},
	}
	segB := []compare.SegmentID{{0, 0x1000, 2048, 0}, {0, 0x2000, 2048, 0}}
	segA := []compare.SegmentID{{0, 0x1000, 2048, 0}, {0, 0x2000, 4096, 0}, {1, 0x1000, 2048, 0}}
	return compare.Input{Report: before, Segments: segB}, compare.Input{Report: after, Segments: segA}
}

func TestCompareFixture(t *testing.T) {
	b, a := compareFixture()
	c, err := compare.Compare("memscan test", b, []compare.Input{a})
	if err != nil {
		t.Fatal(err)
	}
	d := c.Diffs[0]
	for _, tab := range []compare.Table{d.Categories, d.Sites, d.Modules, *d.PeakCategories, *d.PeakSites} {
		if err := tab.Check(); err != nil {
			t.Error(err)
		}
	}
	rows := func(tab compare.Table) map[string]compare.Delta {
		m := map[string]compare.Delta{}
		for _, r := range tab.Rows {
			m[r.Name] = r
		}
		return m
	}
	// By hand: allocated 1024 → 1500 (Δ 476); the categories cover 1000 → 1500, so the residual row is 24 → 0.
	cats := rows(d.Categories)
	wantCats := map[string][3]int64{"Activation": {600, 700, 100}, "Parameter": {400, 400, 0}, "Optimizer": {0, 400, 400}, compare.Uncategorized: {24, 0, -24}}
	if len(cats) != len(wantCats) {
		t.Errorf("category rows %v", cats)
	}
	for name, w := range wantCats {
		if r := cats[name]; r.Before != w[0] || r.After != w[1] || r.Delta != w[2] {
			t.Errorf("category %s: %d → %d (Δ %d), want %v", name, r.Before, r.After, r.Delta, w)
		}
	}
	if d.Categories.Total.Delta != 476 || d.Categories.Rows[0].Name != "Optimizer" {
		t.Errorf("total Δ %d, first row %s (want 476 and the largest change, Optimizer)", d.Categories.Total.Delta, d.Categories.Rows[0].Name)
	}
	// Modules group sites by file; the Windows drive colon must not cut the file name.
	if m := rows(d.Modules); m[`C:\src\opt.py`].After != 400 || m["/src/model.py"].Delta != 100 {
		t.Errorf("modules %v", m)
	}
	// Peak 2000 → 2600: activation +200, optimizer +400; after's sites cover only 1800, the rest is residual.
	pc, ps := rows(*d.PeakCategories), rows(*d.PeakSites)
	if pc["Activation"].Delta != 200 || pc["Optimizer"].Delta != 400 || d.PeakCategories.Total.Delta != 600 {
		t.Errorf("peak categories %v", pc)
	}
	// Sites are keyed by function (file and function) by default.
	if ps["/src/model.py:forward"].Delta != 200 || ps[compare.OtherSites].After != 800 || ps["/src/init.py:build"].Delta != -400 {
		t.Errorf("peak sites %v", ps)
	}
	// Segments paired by device and size: one 2048-byte segment of device 0 on both sides, the other vanished; a
	// 4096-byte one and device 1's are new.
	s := d.Segments
	if s.Common != 1 || len(s.New) != 2 || len(s.Vanished) != 1 || s.NewBytes != 6144 || s.VanishedBytes != 2048 || s.New[0].Size != 4096 {
		t.Errorf("segments %+v", s)
	}
	tot := rows(compare.Table{Rows: d.Totals})
	if tot["reserved_bytes"].Delta != 4096 || tot["segments"].Delta != 1 || tot[compare.PeakBytesBasis].Delta != 600 || d.OOMs.Delta != 1 {
		t.Errorf("totals %v", d.Totals)
	}
	var md bytes.Buffer
	if err := results.WriteCompareMarkdown(&md, c, results.CompareMarkdownOptions{Images: map[int][]string{0: {"compare_categories.png"}}}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| Optimizer | 0 B | 400 B | +400 B | 0 → 2 |", "![compare_categories.png](compare_categories.png)",
		"| " + compare.Uncategorized + " | 24 B | 0 B | -24 B |", "1 segments in both"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown lacks %q:\n%s", want, md.String())
		}
	}
}

func TestSiteFile(t *testing.T) {
	for in, want := range map[string]string{
		"/a/b.py:10:forward":        "/a/b.py",
		`C:\x\y.py:3:f`:             `C:\x\y.py`,
		"<no stack recorded>":       "<no stack recorded>",
		"torch/nn/functional.py:1:": "torch/nn/functional.py",
	} {
		if got := compare.SiteFile(in); got != want {
			t.Errorf("SiteFile(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCompareRealSnapshots compares two real snapshots: every table adds up, and the totals are the allocator
// totals summed independently from the decoded blocks.
func TestCompareRealSnapshots(t *testing.T) {
	dir := testutil.SharedDir(t, "real_snapshots")
	ctx := context.Background()
	var ins []compare.Input
	var allocated []int64
	for _, name := range []string{"HugePandaCoder__octree-nca-groupeq__my_snapshot__blob_1e496ac.pickle", "kkaitlyn111__cs336-a2-systems__cs336_systems_memory_logs_memory_ctx128_forward.pickle"} {
		in, err := load.DecodeFile(ctx, filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := analyze.Analyze(ctx, in, analyze.Options{TopN: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		var alloc int64
		for _, seg := range in.Snapshot.Segments {
			for _, b := range seg.Blocks {
				if b.State == snapshot.BlockActiveAllocated {
					alloc += b.Size
				}
			}
		}
		allocated = append(allocated, alloc)
		ins = append(ins, compare.Input{Report: rep, Segments: pipeline.SegmentIDs(in.Snapshot)})
	}
	c, err := compare.Compare("memscan test", ins[0], ins[1:])
	if err != nil {
		t.Fatal(err)
	}
	d := c.Diffs[0]
	for _, tab := range []*compare.Table{&d.Categories, &d.Sites, &d.Modules, d.PeakCategories, d.PeakSites} {
		if tab == nil {
			t.Fatal("a table is missing")
		}
		if err := tab.Check(); err != nil {
			t.Error(err)
		}
	}
	if d.Categories.Total.Before != allocated[0] || d.Categories.Total.After != allocated[1] {
		t.Errorf("category totals %d → %d, blocks sum to %d → %d", d.Categories.Total.Before, d.Categories.Total.After, allocated[0], allocated[1])
	}
	// With every site kept, no residual row is needed.
	for _, r := range d.Sites.Rows {
		if r.Name == compare.OtherSites {
			t.Errorf("residual site row %+v although all sites were kept", r)
		}
	}
	var sumCat int64
	for _, r := range d.Categories.Rows {
		sumCat += r.Delta
	}
	if sumCat != allocated[1]-allocated[0] {
		t.Errorf("category deltas sum to %d, allocated changed by %d", sumCat, allocated[1]-allocated[0])
	}
	if s := d.Segments; s.Common+len(s.Vanished) != len(ins[0].Segments) || s.Common+len(s.New) != len(ins[1].Segments) {
		t.Errorf("segment diff %d common, %d new, %d vanished for %d and %d segments", s.Common, len(s.New), len(s.Vanished), len(ins[0].Segments), len(ins[1].Segments))
	}
}

// TestCompareTracerWithSnapshot: a tracer file (no allocator state; its categories describe 700 listed bytes)
// against a snapshot (1024 allocated bytes, categories covering 1000). Each side's rows add up to its own measure,
// so the residual row is 0 → 24, the snapshot's uncategorized bytes, not −700 for the tracer's whole list.
func TestCompareTracerWithSnapshot(t *testing.T) {
	_, snap := compareFixture()
	snap.Report.Categories = []report.CategoryStat{{Name: "Activation", Bytes: 600, Count: 3}, {Name: "Parameter", Bytes: 400, Count: 1}}
	snap.Report.Part.(*report.SnapshotReport).AllocatedBytes = 1024
	tr := &report.Report{
		Header: report.Header{File: "tracer_rank0.json", Format: "tracer-json", Categories: []report.CategoryStat{{Name: "Activation", Bytes: 500, Count: 2}, {Name: "Gradient", Bytes: 200, Count: 1}}},
		Part:   &report.TracerReport{Tracer: &report.TracerView{}, ListedBytes: 700},
	}
	c, err := compare.Compare("memscan test", compare.Input{Report: tr}, []compare.Input{{Report: snap.Report}})
	if err != nil {
		t.Fatal(err)
	}
	cats := c.Diffs[0].Categories
	if err := cats.Check(); err != nil {
		t.Error(err)
	}
	if cats.Total.Before != 700 || cats.Total.After != 1024 || cats.Basis != "listed_bytes before, allocated_bytes after" {
		t.Errorf("total %d → %d on %q; want 700 → 1024 on listed before, allocated after", cats.Total.Before, cats.Total.After, cats.Basis)
	}
	for _, r := range cats.Rows {
		if r.Name == compare.Uncategorized && (r.Before != 0 || r.After != 24) {
			t.Errorf("residual %d → %d, want 0 → 24", r.Before, r.After)
		}
	}
}

// TestCompareTimelineWithSnapshot: a torch.profiler timeline (peak 3400 B: optimizer state 2000, parameters 1000,
// gradients 400) against a snapshot whose categorizer found the same parts (2000, 1000 and 500 of 3500 allocated
// bytes). The rows must pair up by category, so optimizer state and parameters show no change and gradients
// +100, with no row under a profiler-only name and no residual.
func TestCompareTimelineWithSnapshot(t *testing.T) {
	in, err := load.DecodeFile(context.Background(), filepath.Join("..", "..", "memtimeline", "testdata", "small_memory_timeline.json"))
	if err != nil {
		t.Fatal(err)
	}
	tl, err := analyze.AnalyzeTimeline(context.Background(), in, analyze.RuntimeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	snap := &report.Report{
		Header: report.Header{File: "rank0_memory_snapshot.pickle", Format: "pickle", Categories: []report.CategoryStat{{Name: categorize.OptimizerState, Bytes: 2000}, {Name: categorize.Parameters, Bytes: 1000}, {Name: categorize.Gradient, Bytes: 500}}},
		Part:   &report.SnapshotReport{Totals: report.Totals{AllocatedBytes: 3500}},
	}
	c, err := compare.Compare("memscan test", compare.Input{Report: tl}, []compare.Input{{Report: snap}})
	if err != nil {
		t.Fatal(err)
	}
	cats := c.Diffs[0].Categories
	if err := cats.Check(); err != nil {
		t.Error(err)
	}
	if cats.Total.Before != 3400 || cats.Total.After != 3500 {
		t.Errorf("total %d → %d, want 3400 → 3500", cats.Total.Before, cats.Total.After)
	}
	want := map[string][3]int64{categorize.OptimizerState: {2000, 2000, 0}, categorize.Parameters: {1000, 1000, 0}, categorize.Gradient: {400, 500, 100}}
	for _, r := range cats.Rows {
		w, ok := want[r.Name]
		switch {
		case ok && (r.Before != w[0] || r.After != w[1] || r.Delta != w[2]):
			t.Errorf("%s: %d → %d (%+d), want %d → %d (%+d)", r.Name, r.Before, r.After, r.Delta, w[0], w[1], w[2])
		case !ok && (r.Before != 0 || r.After != 0):
			t.Errorf("unpaired row %+v", r)
		}
		delete(want, r.Name)
	}
	if len(want) > 0 {
		t.Errorf("rows missing: %v", want)
	}
}

// TestCompareGranularity: the same code in two versions of a script — optimizer.step() moved from line 139 to 166,
// the forward split over two lines — is one function on both sides, so nothing moved; keyed by lines, the move
// shows as a site that vanished and one that appeared, each of the whole 4.6 GiB.
func TestCompareGranularity(t *testing.T) {
	const gib = 1 << 30
	state := int64(46 * gib / 10)
	side := func(file string, sites ...report.SiteStat) compare.Input {
		var total int64
		for _, s := range sites {
			total += s.Bytes
		}
		return compare.Input{Report: &report.Report{Header: report.Header{File: file, Format: "pickle-v4", Sites: sites},
			Part: &report.SnapshotReport{Totals: report.Totals{AllocatedBytes: total}}}}
	}
	b := side("v1.pickle", report.SiteStat{Site: "train.py:139:main", Category: "Optimizer State", Bytes: state},
		report.SiteStat{Site: "model.py:40:forward", Category: "Activation", Bytes: 2 * gib})
	a := side("v2.pickle", report.SiteStat{Site: "train.py:166:main", Category: "Optimizer State", Bytes: state},
		report.SiteStat{Site: "model.py:40:forward", Category: "Activation", Bytes: gib}, report.SiteStat{Site: "model.py:41:forward", Category: "Activation", Bytes: gib})
	c, err := compare.Compare("memscan test", b, []compare.Input{a})
	if err != nil {
		t.Fatal(err)
	}
	if c.Granularity != compare.GranularityFunctions {
		t.Errorf("granularity %q", c.Granularity)
	}
	for _, r := range c.Diffs[0].Sites.Rows {
		if r.Delta != 0 {
			t.Errorf("by function, %s changed by %d", r.Name, r.Delta)
		}
	}
	c, err = compare.CompareWith("memscan test", b, []compare.Input{a}, compare.Options{Granularity: compare.GranularityLines})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, r := range c.Diffs[0].Sites.Rows {
		got[r.Name] = r.Delta
	}
	if got["train.py:139:main"] != -state || got["train.py:166:main"] != state || got["model.py:41:forward"] != gib {
		t.Errorf("by line: %v", got)
	}
	if _, err := compare.CompareWith("memscan test", b, []compare.Input{a}, compare.Options{Granularity: "files"}); err == nil {
		t.Error("an unknown granularity was accepted")
	}
	for in, want := range map[string]string{"a.py:10:f": "a.py:f", `C:\x\y.py:3:g`: `C:\x\y.py:g`, "<no stack recorded>": "<no stack recorded>",
		"a.py:x:f": "a.py:x:f", "??:0:at::mm(std::allocator<at::Tensor> >&&)": "??:at::mm(std::allocator<at::Tensor> >&&)"} {
		if got := compare.SiteKey(in, compare.GranularityFunctions); got != want {
			t.Errorf("SiteKey(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCompareSegmentsAcrossProcesses: two processes of the same program place the same cudaMallocs at unrelated
// addresses; paired by device and size they are all common, where addresses would call every one new.
func TestCompareSegmentsAcrossProcesses(t *testing.T) {
	b, a := compareFixture()
	b.Segments = []compare.SegmentID{{0, 0x7f00_0000_0000, 2 << 20, 0}, {0, 0x7f00_0020_0000, 20 << 20, 0}, {0, 0x7f00_0200_0000, 20 << 20, 0}}
	a.Segments = []compare.SegmentID{{0, 0x7e11_0000_0000, 20 << 20, 0}, {0, 0x7e11_0300_0000, 2 << 20, 0}, {0, 0x7e11_0100_0000, 20 << 20, 0}}
	c, err := compare.Compare("memscan test", b, []compare.Input{a})
	if err != nil {
		t.Fatal(err)
	}
	if s := c.Diffs[0].Segments; s.Common != 3 || len(s.New) != 0 || len(s.Vanished) != 0 {
		t.Errorf("segments %+v, want 3 common", s)
	}
	a.Segments = a.Segments[:2]
	c, _ = compare.Compare("memscan test", b, []compare.Input{a})
	if s := c.Diffs[0].Segments; s.Common != 2 || len(s.Vanished) != 1 || s.VanishedBytes != 20<<20 {
		t.Errorf("one 20 MiB segment fewer: %+v", s)
	}
}
