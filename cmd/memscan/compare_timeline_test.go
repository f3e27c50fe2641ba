package main

import (
	"encoding/json"
	"testing"

	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/internal/compare"
)

// TestCompareTimelineAgainstSnapshot runs memscan compare on a torch.profiler timeline and a snapshot: the
// timeline's rows must carry memscan's category names (its peak of 3400 B is optimizer state 2000, parameters
// 1000, gradients 400, see snapshot/timeline_test.go), so they pair with the snapshot's categories.
func TestCompareTimelineAgainstSnapshot(t *testing.T) {
	tl := fixture(t, "memtimeline/testdata/small_memory_timeline.json")
	snap := fixture(t, "snapshot/testdata/v21_multi_device.pickle")
	code, stdout, stderr := runCLI(t, "compare", "--no-plots", "--format", "json", "--out", t.TempDir(), tl, snap)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var c compare.Comparison
	if err := json.Unmarshal([]byte(stdout), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Diffs) != 1 {
		t.Fatalf("%d diffs", len(c.Diffs))
	}
	before := map[string]int64{}
	for _, r := range c.Diffs[0].Categories.Rows {
		before[r.Name] = r.Before
	}
	want := map[string]int64{categorize.OptimizerState: 2000, categorize.Parameters: 1000, categorize.Gradient: 400}
	for name, b := range want {
		if before[name] != b {
			t.Errorf("%s before = %d, want %d (rows %v)", name, before[name], b, before)
		}
	}
	for _, profilerName := range []string{"Optimizer state", "Parameter"} {
		if _, ok := before[profilerName]; ok {
			t.Errorf("a row still carries the profiler's name %q", profilerName)
		}
	}
	if tot := c.Diffs[0].Categories.Total.Before; tot != 3400 {
		t.Errorf("timeline total %d, want its peak 3400", tot)
	}
}
