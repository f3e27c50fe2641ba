package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInputsThroughLinks runs analyze and merge on inputs reached through symbolic links: a rank folder that is
// a link, a results root's latest, and folders holding broken links named like inputs, which must make the run
// partial (exit 3) and be named, never be skipped in silence.
func TestInputsThroughLinks(t *testing.T) {
	dir := t.TempDir()
	snap, err := os.ReadFile(fixture(t, "testdata/example/rank0_memory_snapshot.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	storage := filepath.Join(dir, "storage", "rank0")
	if err := os.MkdirAll(storage, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(storage, "rank0_memory_snapshot.pickle"), snap, 0o644); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(dir, "iteration_1")
	if err := os.Symlink(storage, linked); err != nil {
		t.Fatal(err)
	}
	withBroken := filepath.Join(dir, "with_broken")
	if err := os.MkdirAll(withBroken, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(storage, filepath.Join(withBroken, "rank0")); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(withBroken, "rank1_memory_snapshot.pickle")
	if err := os.Symlink(filepath.Join(dir, "lost.pickle"), broken); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "results")

	code, _, stderr := runCLI(t, "analyze", "--quiet", "--no-plots", "--out", out, linked)
	if code != exitOK {
		t.Fatalf("analyze of a linked folder: exit %d, stderr %s", code, stderr)
	}
	code, _, stderr = runCLI(t, "analyze", "--quiet", "--no-plots", "--out", out, withBroken)
	if code != exitPartial || !strings.Contains(stderr, "memscan: "+broken+": cannot read: no such file or directory") {
		t.Errorf("analyze with a broken link: exit %d, want %d naming %s; stderr:\n%s", code, exitPartial, broken, stderr)
	}

	// merge reads the whole report of the latest run through the link.
	code, _, stderr = runCLI(t, "merge", "--no-files", filepath.Join(out, "latest"))
	if code != exitOK {
		t.Errorf("merge of results/latest: exit %d, stderr %s", code, stderr)
	}
	brokenSummary := filepath.Join(out, "latest", "rank9.msgpack")
	if err := os.Symlink(filepath.Join(dir, "lost.msgpack"), brokenSummary); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI(t, "merge", "--no-files", filepath.Join(out, "latest"))
	if code != exitPartial || !strings.Contains(stderr, "memscan: merge: "+brokenSummary+": stat: no such file or directory") {
		t.Errorf("merge with a broken summary link: exit %d, want %d naming it; stderr:\n%s", code, exitPartial, stderr)
	}
}
