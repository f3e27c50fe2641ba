package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writingCommandLines are command lines of every command that writes a run directory, each with --out OUT (the
// placeholder for the case's results root).
func writingCommandLines(t *testing.T) map[string][]string {
	t.Helper()
	tmp := t.TempDir()
	writeSummaries(t, tmp, 4)
	example, tracer := fixture(t, goldenFixtures["example"]), fixture(t, goldenFixtures["tracer"])
	return map[string][]string{
		"analyze":   {"analyze", "--progress", "never", "--out", "OUT", example},
		"static":    {"static", "--out", "OUT", "--config", fixture(t, goldenFixtures["llama3"])},
		"calibrate": {"calibrate", "--out", "OUT", "--config", fixture(t, goldenFixtures["llama3"]), "--measured-peak-allocated", "61203283968"},
		"compare":   {"compare", "--out", "OUT", tracer, fixture(t, goldenFixtures["tracer-r1"])},
		"merge":     {"merge", "--out", "OUT", filepath.Join(tmp, "ranks")},
	}
}

// TestNoFilesOnEveryWritingCommand: every command that writes a run directory takes --no-files, prints its report
// and writes nothing; without it the same command line writes one. Every command with --out is in the list.
func TestNoFilesOnEveryWritingCommand(t *testing.T) {
	lines := writingCommandLines(t)
	for _, c := range commands() {
		_, help, _ := runCLI(t, c.name, "--help")
		if _, listed := lines[c.name]; strings.Contains(help, "--out ") != listed {
			t.Errorf("%s: has --out %v, but is listed here %v", c.name, !listed, listed)
		}
	}
	for name, args := range lines {
		t.Run(name, func(t *testing.T) {
			for _, noFiles := range []bool{true, false} {
				out := filepath.Join(t.TempDir(), "results")
				a := make([]string, 0, len(args)+1)
				for _, s := range args {
					if s == "OUT" {
						s = out
					}
					a = append(a, s)
				}
				if noFiles {
					a = append(a, "--no-files")
				}
				code, stdout, stderr := runCLI(t, a...)
				if code != exitOK || stdout == "" {
					t.Fatalf("--no-files %v: exit %d, %d bytes on stdout; stderr %s", noFiles, code, len(stdout), stderr)
				}
				_, err := os.Stat(out)
				if wrote := err == nil; wrote == noFiles || strings.Contains(stderr, "wrote ") == noFiles {
					t.Errorf("--no-files %v: results root exists %v, stderr %q", noFiles, wrote, stderr)
				}
			}
		})
	}
}
