package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFlagUsages(t *testing.T) {
	c := newCmdLine("x", helpDoc{}, &bytes.Buffer{})
	var s string
	var b bool
	var n int
	c.StringVar(&s, "name", "results", "a string")
	c.BoolVarP(&b, "quiet", "q", false, "a switch")
	c.IntVar(&n, "jobs", 4, "a number")
	c.IntVar(&n, "rank", -1, "may be negative")
	c.IntVar(&n, "zero", 0, "no default shown")
	c.describeDefault("jobs", "one per CPU")
	c.retire("silent", "quiet")
	want := `  -h, --help          show this help
      --jobs int      a number (default one per CPU)
      --name string   a string (default "results")
  -q, --quiet         a switch
      --rank int      may be negative (default -1)
      --zero int      no default shown
`
	if got := flagUsages(c.FlagSet); got != want {
		t.Errorf("flagUsages:\n%s\nwant:\n%s", got, want)
	}
}

func TestOrList(t *testing.T) {
	for in, want := range map[string]string{"": "", "a": "a", "a,b": "a or b", "a,b,c": "a, b or c"} {
		var values []string
		if in != "" {
			values = strings.Split(in, ",")
		}
		if got := orList(values); got != want {
			t.Errorf("orList(%q) = %q, want %q", values, got, want)
		}
	}
}

// TestMergeNoWriteRetired checks that merge --no-write, the old spelling of --no-files, still works, with a note
// on stderr, and that the help lists only the new spelling.
func TestMergeNoWriteRetired(t *testing.T) {
	dir := t.TempDir()
	writeSummaries(t, dir, 4)
	out := filepath.Join(dir, "results")
	code, oldOut, stderr := runCLI(t, "merge", "--no-write", "--out", out, "--format", "json", filepath.Join(dir, "ranks"))
	if code != exitOK || stderr != "memscan: warning: Flag --no-write has been deprecated, use --no-files instead\n" {
		t.Fatalf("merge --no-write: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("merge --no-write wrote %s (%v)", out, err)
	}
	_, newOut, _ := runCLI(t, "merge", "--no-files", "--format", "json", filepath.Join(dir, "ranks"))
	if oldOut != newOut || !json.Valid([]byte(oldOut)) {
		t.Errorf("--no-write printed %d bytes, --no-files %d", len(oldOut), len(newOut))
	}
	if _, help, _ := runCLI(t, "merge", "--help"); strings.Contains(help, "no-write") {
		t.Error("merge --help still lists --no-write")
	}
}

// TestAnalyzeDashORetired checks that analyze -o, the old shorthand of --out (export's -o is its output file),
// still works, with a note on stderr, and that the help no longer lists it.
func TestAnalyzeDashORetired(t *testing.T) {
	out := filepath.Join(t.TempDir(), "results")
	code, _, stderr := runCLI(t, "analyze", "-o", out, "--quiet", "--no-plots", "--progress", "never", fixture(t, goldenFixtures["example"]))
	if code != exitOK || stderr != "memscan: warning: Flag shorthand -o has been deprecated, use --out instead\n" {
		t.Fatalf("analyze -o: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "latest", "summary.json")); err != nil {
		t.Errorf("analyze -o did not write into %s: %v", out, err)
	}
	if _, help, _ := runCLI(t, "analyze", "--help"); strings.Contains(help, "-o,") {
		t.Error("analyze --help still lists -o")
	}
}
