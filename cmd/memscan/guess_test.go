package main

import (
	"strings"
	"testing"
)

// TestDidYouMean: each mistake a person makes first gets the name they meant, as one usage error (exit 1), and a
// word far from every name gets no guess.
func TestDidYouMean(t *testing.T) {
	checkCLIErrors(t, []cliErrorCase{
		{"command", []string{"analyse", "x.pickle"}, exitUsage, `unknown command "analyse"; did you mean "analyze"?`},
		{"command start", []string{"calib"}, exitUsage, `unknown command "calib"; did you mean "calibrate"?`},
		{"command typo", []string{"mrege"}, exitUsage, `unknown command "mrege"; did you mean "merge"?`},
		{"command after help", []string{"help", "analyse"}, exitUsage, `unknown command "analyse"; did you mean "analyze"?`},
		{"no close command", []string{"frobnicate"}, exitUsage, `unknown command "frobnicate" (see memscan --help)`},
		{"flag before the command", []string{"--out", "r", "analyze"}, exitUsage, `--out is not a command: flags go after the command`},
		{"flag", []string{"analyze", "--no-plot", "x.pickle"}, exitUsage, `unknown flag: --no-plot; did you mean --no-plots?`},
		{"flag with value", []string{"analyze", "--formt=json", "x.pickle"}, exitUsage, `unknown flag: --formt; did you mean --format?`},
		{"flag start", []string{"analyze", "--summary", "x.pickle"}, exitUsage, `unknown flag: --summary; did you mean --summary-only?`},
		{"flag of merge", []string{"merge", "--stage", "2", "d"}, exitUsage, `unknown flag: --stage; did you mean --stages?`},
		{"flag of static", []string{"static", "--micro-batch", "2"}, exitUsage, `unknown flag: --micro-batch; did you mean --micro-batch-size?`},
		{"flag underscore", []string{"static", "--no_files"}, exitUsage, `unknown flag: --no_files; did you mean --no-files?`},
		{"no close flag", []string{"analyze", "--frobnicate", "x.pickle"}, exitUsage, "unknown flag: --frobnicate (see memscan analyze --help)"},
		{"one dash", []string{"analyze", "-out", "r", "x.pickle"}, exitUsage, "-out: long flags take two dashes: --out"},
		{"one dash help", []string{"compare", "-help"}, exitUsage, "-help: long flags take two dashes: --help"},
		{"allocator setting", []string{"analyze", "--alloc-conf", "expandable_segment:True", "x.pickle"}, exitUsage,
			`--alloc-conf: allocator setting "expandable_segment": unknown setting; did you mean "expandable_segments"?`},
	})
}

// TestVersionAndHelpCommand: memscan --version prints what memscan version prints, and memscan help CMD prints
// what memscan CMD --help prints, for every command.
func TestVersionAndHelpCommand(t *testing.T) {
	code, flag, stderr := runCLI(t, "--version")
	_, word, _ := runCLI(t, "version")
	if code != exitOK || stderr != "" || flag != word || !strings.HasPrefix(flag, "memscan ") {
		t.Errorf("--version: exit %d, stdout %q, stderr %q; version prints %q", code, flag, stderr, word)
	}
	for _, c := range commands() {
		code, viaHelp, stderr := runCLI(t, "help", c.name)
		_, viaFlag, _ := runCLI(t, c.name, "--help")
		if code != exitOK || stderr != "" || viaHelp != viaFlag || !strings.HasPrefix(viaHelp, "Usage: memscan "+c.name) {
			t.Errorf("help %s: exit %d, stderr %q, same as --help: %v", c.name, code, stderr, viaHelp == viaFlag)
		}
	}
	for _, args := range [][]string{{"help"}, {"help", "help"}} {
		_, got, _ := runCLI(t, args...)
		_, want, _ := runCLI(t, "--help")
		if got != want {
			t.Errorf("%q does not print the overview", args)
		}
	}
	checkCLIErrors(t, []cliErrorCase{
		{"help of two", []string{"help", "analyze", "merge"}, exitUsage, "help: want one command, got 2 arguments"},
	})
}
