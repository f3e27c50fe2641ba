package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/compare"
	"github.com/memscan/memscan/internal/realsnap"
	"github.com/memscan/memscan/internal/results"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/report"
)

// writeRunDir writes a minimal run directory holding report.msgpack for rep.
func writeRunDir(t *testing.T, dir string, rep *report.Report) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, results.FileMsgpack))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	run := &report.Run{Version: report.ReportVersion, Tool: "memscan test", Inputs: []*report.Report{rep}}
	if err := results.WriteMsgpack(f, run); err != nil {
		t.Fatal(err)
	}
}

func readComparison(t *testing.T, out string) *compare.Comparison {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(out, results.LatestName, "compare.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c compare.Comparison
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

func checkTables(t *testing.T, d compare.Diff) {
	t.Helper()
	tables := []*compare.Table{&d.Categories, &d.Sites, &d.Modules, d.PeakCategories, d.PeakSites}
	for _, tab := range tables {
		if tab == nil {
			continue
		}
		if err := tab.Check(); err != nil {
			t.Error(err)
		}
	}
}

// compareRunDirs writes two run directories under dir whose reports differ by +300 MiB of activations, and
// returns their paths (before, after).
func compareRunDirs(t *testing.T, dir string) (string, string) {
	t.Helper()
	before := &report.Report{
		Header: report.Header{File: "a.pickle", Format: "pickle-v4", Rank: -1, Iteration: -1, Categories: []report.CategoryStat{{Name: "Activation", Bytes: 400 << 20, Count: 4}, {Name: "Parameter", Bytes: 200 << 20, Count: 2}}, Sites: []report.SiteStat{{Site: "model.py:3:forward", Category: "Activation", Bytes: 400 << 20, Count: 4}}},
		Part:   &report.SnapshotReport{Totals: report.Totals{ReservedBytes: 1 << 30, AllocatedBytes: 600 << 20}},
	}
	after := &report.Report{
		Header: report.Header{File: "b.pickle", Format: "pickle-v4", Rank: -1, Iteration: -1, Categories: []report.CategoryStat{{Name: "Activation", Bytes: 700 << 20, Count: 7}, {Name: "Parameter", Bytes: 200 << 20, Count: 2}}, Sites: []report.SiteStat{{Site: "model.py:3:forward", Category: "Activation", Bytes: 700 << 20, Count: 7}}},
		Part:   &report.SnapshotReport{Totals: report.Totals{ReservedBytes: 2 << 30, AllocatedBytes: 900 << 20}},
	}
	b, a := filepath.Join(dir, "before"), filepath.Join(dir, "after")
	writeRunDir(t, b, before)
	writeRunDir(t, a, after)
	return b, a
}

func TestCompareRunDirectories(t *testing.T) {
	tmp := t.TempDir()
	beforeDir, afterDir := compareRunDirs(t, tmp)
	out := filepath.Join(tmp, "results")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"compare", "--out", out, beforeDir, afterDir}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	checkOnlyRun(t, out)
	c := readComparison(t, out)
	d := c.Diffs[0]
	checkTables(t, d)
	// By hand: +300 MiB of activations, parameters unchanged; sites cover only activations, the rest is residual.
	if d.Categories.Total.Delta != 300<<20 || d.Categories.Rows[0].Name != "Activation" || d.Categories.Rows[0].Delta != 300<<20 {
		t.Errorf("categories %+v", d.Categories)
	}
	if d.Segments != nil {
		t.Error("run directories have no segments, but a segment diff was made")
	}
	for _, f := range []string{"compare.md", "compare_categories.png", "compare_sites.png"} {
		if _, err := os.Stat(filepath.Join(out, results.LatestName, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	if !strings.Contains(stdout.String(), "| Activation | 400.0 MiB | 700.0 MiB | +300.0 MiB | 4 → 7 |") {
		t.Errorf("stdout report:\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "wrote ") {
		t.Errorf("stderr %q lacks the run directory", stderr.String())
	}
}

func TestCompareUsageAndInputErrors(t *testing.T) {
	tmp := t.TempDir()
	notRun := filepath.Join(tmp, "plain")
	os.MkdirAll(notRun, 0o755)
	tests := []cliErrorCase{
		{"one input", []string{"compare", "a"}, exitUsage, "want BEFORE AFTER"},
		{"three inputs", []string{"compare", "a", "b", "c"}, exitUsage, "want BEFORE AFTER"},
		{"baseline alone", []string{"compare", "--baseline", "a"}, exitUsage, "at least one other"},
		{"bad format", []string{"compare", "--format", "xml", "a", "b"}, exitUsage, "--format"},
		{"missing file", []string{"compare", "--out", tmp, filepath.Join(tmp, "nope.pickle"), filepath.Join(tmp, "nope2.pickle")}, exitFailed, "nope.pickle"},
		{"not a run dir", []string{"compare", "--out", tmp, notRun, notRun}, exitFailed, "not a memscan run directory"},
	}
	checkCLIErrors(t, tests)
}

// TestCompareRealSnapshots runs the command on real snapshots with --baseline: two diffs, tables that add up,
// the segment diff, and numbered charts for the second diff.
func TestCompareRealSnapshots(t *testing.T) {
	dir := testutil.SharedDir(t, "real_snapshots")
	files := []string{
		filepath.Join(dir, "JasperSolt__EoR_NN__snapshot.pickle"),
		filepath.Join(dir, "Nesta-gitU__discrete_diffusion__memory_snapshot_json.pickle"),
		filepath.Join(dir, "shreyansh26__MLSys-Experiments__model_memory_usage_profile_grad_pkl.pickle"),
	}
	out := filepath.Join(t.TempDir(), "results")
	var stdout, stderr bytes.Buffer
	args := append([]string{"compare", "--out", out, "--format", "json", "--baseline", files[0]}, files[1:]...)
	if code := run(context.Background(), args, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	c := readComparison(t, out)
	if len(c.Diffs) != 2 || c.Baseline != files[0] {
		t.Fatalf("%d diffs against %s", len(c.Diffs), c.Baseline)
	}
	for _, d := range c.Diffs {
		checkTables(t, d)
		if d.Segments == nil || d.PeakCategories == nil {
			t.Errorf("%s: segment diff or peak attribution missing", d.After)
		}
	}
	if _, err := os.Stat(filepath.Join(out, results.LatestName, "compare_sites_2.png")); err != nil {
		t.Error(err)
	}
	var fromStdout compare.Comparison
	if err := json.Unmarshal(stdout.Bytes(), &fromStdout); err != nil || len(fromStdout.Diffs) != 2 {
		t.Errorf("stdout is not the comparison JSON: %v", err)
	}
}

// checkOnlyRun checks that a results root holds one finished run directory and latest: runs are written under a
// hidden staging name and renamed when complete, and nothing of the staging may be left behind.
func checkOnlyRun(t *testing.T, out string) {
	t.Helper()
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 || entries[1].Name() != results.LatestName || strings.HasPrefix(entries[0].Name(), ".") {
		t.Errorf("%s holds %v, want one run directory and latest", out, entries)
	}
}

// TestCompareFragmentingRun compares the healthy H200 training run with the variable-length one: the
// fragmentation finding appears on the after side only, and the totals show the maximum reserved memory the
// traces recorded (PyTorch's max_memory_reserved, runs.json) beside the peaks.
func TestCompareFragmentingRun(t *testing.T) {
	var list []struct {
		Name         string `json:"name"`
		PeakReserved int64  `json:"peak_reserved"`
	}
	dir := realsnap.GPURuns(t, &list)
	healthy, varlen := "llama1b-bf16-b4-s2048-snap", "llama1b-varlen-b4-snap"
	measured := map[string]int64{}
	for _, r := range list {
		measured[r.Name] = r.PeakReserved
	}
	c := compareJSON(t, filepath.Join(dir, healthy+".pickle.gz"), filepath.Join(dir, varlen+".pickle.gz"))
	d := c.Diffs[0]
	rows := 0
	for _, row := range d.Totals {
		if row.Name != "max_reserved_bytes" {
			continue
		}
		rows++
		if row.Before != measured[healthy] || row.After != measured[varlen] || row.Before == 0 {
			t.Errorf("max_reserved_bytes %d → %d, PyTorch measured %d → %d", row.Before, row.After, measured[healthy], measured[varlen])
		}
	}
	if rows != 1 {
		t.Errorf("%d max_reserved_bytes rows in the totals", rows)
	}
	var frag *compare.FindingChange
	for i := range d.Findings {
		if d.Findings[i].ID == "fragmentation" {
			frag = &d.Findings[i]
		}
	}
	if frag == nil || frag.BeforeSeverity != "" || frag.AfterSeverity == "" || frag.AfterValue <= 0 {
		t.Errorf("fragmentation finding %+v, want it on the varlen side only, with its saving", frag)
	}
}
