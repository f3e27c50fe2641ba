package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/compare"
)

// TestCompareSameProgramTwoProcesses compares the two H200 recordings of the same training program (the second
// with C++ stacks): their 246 segments sit at other addresses in each process but are the same cudaMallocs, so
// paired by size they are all common (by address all 246 were new and all 246 vanished, 37.4 GiB each way); the
// sites are keyed by function; the peak's change is attributed.
func TestCompareSameProgramTwoProcesses(t *testing.T) {
	dir, _ := h200Runs(t)
	c := compareJSON(t, filepath.Join(dir, "llama1b-bf16-b4-s2048-snap.pickle.gz"), filepath.Join(dir, "llama1b-bf16-b4-s2048-stacksall-snap.pickle.gz"))
	d := c.Diffs[0]
	if s := d.Segments; s == nil || s.Common != 246 || len(s.New) != 0 || len(s.Vanished) != 0 {
		t.Errorf("segments %+v, want the 246 in both", s)
	}
	if c.Granularity != compare.GranularityFunctions || d.PeakSites == nil {
		t.Fatalf("granularity %q, peak sites %v", c.Granularity, d.PeakSites)
	}
	for _, r := range d.Sites.Rows {
		if strings.Contains(r.Name, "train.py:") && r.Name != "train.py:main" {
			t.Errorf("site %q keyed by line", r.Name)
		}
	}
	if code, _, _ := runCLI(t, "compare", "--granularity", "files", "--out", t.TempDir(), "a", "b"); code != exitUsage {
		t.Errorf("--granularity files: exit %d, want a usage error", code)
	}
}

// compareJSON runs memscan compare --format json on the inputs and decodes what it printed.
func compareJSON(t *testing.T, inputs ...string) compare.Comparison {
	t.Helper()
	code, stdout, stderr := runCLI(t, append([]string{"compare", "--out", t.TempDir(), "--no-plots", "--format", "json"}, inputs...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var c compare.Comparison
	if err := json.Unmarshal([]byte(stdout), &c); err != nil {
		t.Fatal(err)
	}
	return c
}
