package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/memscan/memscan/internal/merge"
)

// TestSummariesMerge: --summaries writes valid summaries, per to a folder, that merge as the ranks 0..n−1 of one
// run and iteration with nothing missing or repeated, early stages holding more.
func TestSummariesMerge(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run([]string{"--summaries", "40", "--per-dir", "16", "--stages", "4", "--dir", dir}, &out, &out); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "task*", "*.summary.msgpack"))
	if err != nil || len(files) != 40 {
		t.Fatalf("%d files (%v)", len(files), err)
	}
	if tasks, _ := filepath.Glob(filepath.Join(dir, "task*")); len(tasks) != 3 {
		t.Errorf("%d task folders, want 3 (16, 16, 8)", len(tasks))
	}
	c, failures, err := merge.MergeFiles(context.Background(), files, merge.FilesOptions{Options: merge.Options{Stages: 4}, Jobs: 2, Iterations: merge.AllIterations})
	if err != nil || len(failures) > 0 {
		t.Fatal(err, failures)
	}
	rs := c.RankSet
	if c.Ranks != 40 || rs.Distinct != 40 || rs.MissingRanks != 0 || len(rs.Duplicates) != 0 || len(rs.Runs) != 0 || len(c.Iterations) != 0 {
		t.Errorf("%d ranks, rank set %+v", c.Ranks, rs)
	}
	if len(c.Stages) != 4 || c.Stages[0].MeanReserved <= c.Stages[3].MeanReserved {
		t.Errorf("stages %+v: the first should hold more", c.Stages)
	}
}
