package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestReadOnlyWorkingDirectory: where the default --out cannot be written (here /proc/self, read-only even to
// root), a command that prints its report still prints it, with a warning that no files were written; it used
// to print nothing. A run that would print nothing, or an --out given explicitly, stays a usage error.
func TestReadOnlyWorkingDirectory(t *testing.T) {
	example := fixture(t, goldenFixtures["example"])
	summaries := t.TempDir()
	writeSummaries(t, summaries, 2)
	cfg := fixture(t, goldenFixtures["llama3"])
	tracer, tracer1 := fixture(t, goldenFixtures["tracer"]), fixture(t, goldenFixtures["tracer-r1"])
	t.Chdir("/proc/self")
	const warning = "writing no files: the default --out results cannot be created: . is not writable"

	code, stdout, stderr := runCLI(t, "analyze", "--no-plots", "--format", "json", "--quiet", example)
	var doc struct {
		Inputs []json.RawMessage `json:"inputs"`
	}
	if code != exitOK || json.Unmarshal([]byte(stdout), &doc) != nil || len(doc.Inputs) != 1 {
		t.Errorf("analyze --format json --quiet: exit %d, stdout %.80q, stderr %q", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "memscan: warning: analyze: "+warning) {
		t.Errorf("analyze: stderr %q lacks the warning", stderr)
	}
	for _, args := range [][]string{
		{"static", "--config", cfg},
		{"compare", tracer, tracer1},
		{"calibrate", "--config", cfg, "--measured-peak-allocated", "61203283968"},
		{"merge", summaries},
	} {
		code, stdout, stderr := runCLI(t, args...)
		if code != exitOK || stdout == "" || !strings.Contains(stderr, "memscan: warning: "+args[0]+": "+warning) {
			t.Errorf("%s: exit %d, %d bytes on stdout, stderr %q", args[0], code, len(stdout), stderr)
		}
	}
	checkCLIErrors(t, []cliErrorCase{
		{"quiet prints nothing", []string{"analyze", "--quiet", example}, exitUsage, "analyze: --out results: cannot be created: . is not writable"},
		{"out given", []string{"analyze", "--format", "json", "--out", "results", example}, exitUsage, "analyze: --out results: cannot be created"},
	})
}
