package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/merge"
	"github.com/memscan/memscan/load"
)

// TestSummaryOnlyThenMerge runs the distributed path end to end: each rank is summarized where it lives
// (--summary-only), then memscan merge joins the summaries. The expected totals are block sums taken straight
// from the decoded fixtures, independently of the analyze package.
func TestSummaryOnlyThenMerge(t *testing.T) {
	dir := t.TempDir()
	sources := []string{"testdata/example/rank0_memory_snapshot.pickle", "snapshot/testdata/v21_multi_device.pickle"}
	var wantReserved int64
	var inputs []string
	for rank, rel := range sources {
		src := fixture(t, rel)
		in, err := load.DecodeFile(t.Context(), src)
		if err != nil {
			t.Fatal(err)
		}
		for _, seg := range in.Snapshot.Segments {
			for _, b := range seg.Blocks {
				wantReserved += b.Size
			}
		}
		dst := filepath.Join(dir, "dump", "iteration_2", "rank"+string(rune('0'+rank))+"_memory_snapshot.pickle")
		copyFile(t, src, dst)
		inputs = append(inputs, dst)
	}

	// Beside each input (no --out).
	code, stdout, stderr := runCLI(t, append([]string{"analyze", "--summary-only", "--progress", "never"}, inputs...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, in := range inputs {
		if _, err := os.Stat(in + summarySuffix); err != nil {
			t.Errorf("summary beside %s: %v", in, err)
		}
	}
	if !strings.Contains(stdout, "rank 1, reserved") {
		t.Errorf("stdout lacks the per-rank line:\n%s", stdout)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "results")); len(entries) != 0 {
		t.Errorf("--summary-only created a run directory")
	}

	// Into --out: names carry iteration and rank so ranks of one iteration do not collide.
	sums := filepath.Join(dir, "summaries")
	if code, _, stderr := runCLI(t, append([]string{"analyze", "--summary-only", "--quiet", "--out", sums}, inputs...)...); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	entries, err := os.ReadDir(sums)
	if err != nil || len(entries) != 2 {
		t.Fatalf("summaries dir: %v, %d files", err, len(entries))
	}
	for i, e := range entries { // the base name already says the rank; only the iteration comes from the folder
		if want := fmt.Sprintf("iter2_rank%d_memory_snapshot.pickle.", i); !strings.HasPrefix(e.Name(), want) || !strings.HasSuffix(e.Name(), summarySuffix) {
			t.Errorf("summary file %q, want %q<digest>%s", e.Name(), want, summarySuffix)
		}
	}

	code, stdout, stderr = runCLI(t, "merge", "--no-files", "--format", "json", sums)
	if code != exitOK {
		t.Fatalf("merge exit %d: %s", code, stderr)
	}
	var c merge.CrossRank
	if err := json.Unmarshal([]byte(stdout), &c); err != nil {
		t.Fatal(err)
	}
	if c.Ranks != 2 || c.Reserved.Sum != wantReserved {
		t.Errorf("merged %d ranks, reserved sum %d; want 2 and %d", c.Ranks, c.Reserved.Sum, wantReserved)
	}
}
