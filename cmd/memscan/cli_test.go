package main

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// helpSections are the sections of every command's --help, in the order they are printed.
var helpSections = []string{"Usage: memscan ", "Flags:\n", "Examples:\n", "Exit status:\n"}

// TestEveryHelpHasAllSections runs `memscan CMD --help` for every command and checks the shared layout: usage,
// flags, examples and exit status in that order, every example a command line of that command, and every exit
// status one of memscan's four with a meaning.
func TestEveryHelpHasAllSections(t *testing.T) {
	exitLine := regexp.MustCompile(`^(    [0-4]|  130)  \S`)
	for _, cmd := range commands() {
		t.Run(cmd.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, cmd.name, "--help")
			if code != exitOK || stderr != "" {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			at := -1
			for _, s := range helpSections {
				i := strings.Index(stdout, s)
				if i <= at {
					t.Fatalf("%q missing or out of order in:\n%s", s, stdout)
				}
				at = i
			}
			if !strings.HasPrefix(stdout, "Usage: memscan "+cmd.name) {
				t.Errorf("help starts %q", stdout[:min(len(stdout), 40)])
			}
			examples := section(stdout, "Examples:\n")
			if len(examples) == 0 {
				t.Error("no examples")
			}
			for _, e := range examples {
				if !strings.HasPrefix(e, "  memscan "+cmd.name) {
					t.Errorf("example %q is not a memscan %s command line", e, cmd.name)
				}
			}
			exits := section(stdout, "Exit status:\n")
			if len(exits) == 0 || !strings.HasPrefix(exits[0], "    0  ") || !strings.HasPrefix(exits[1], "    1  ") {
				t.Errorf("exit status does not start with 0 and 1: %q", exits)
			}
			for _, e := range exits {
				if !exitLine.MatchString(e) {
					t.Errorf("exit status line %q", e)
				}
			}
		})
	}
}

// section returns the lines after header up to the next blank line.
func section(help, header string) []string {
	_, rest, ok := strings.Cut(help, header)
	if !ok {
		return nil
	}
	body, _, _ := strings.Cut(rest, "\n\n")
	return strings.Split(strings.TrimRight(body, "\n"), "\n")
}

// TestHelpExamplesParse parses every example of every --help with that command's flags: a flag an example spells
// wrongly, a retired spelling or a value of the wrong type fails here. Appending --help stops the command after
// parsing, so the example's files need not exist.
func TestHelpExamplesParse(t *testing.T) {
	for _, cmd := range commands() {
		_, help, _ := runCLI(t, cmd.name, "--help")
		for _, e := range section(help, "Examples:\n") {
			args := exampleArgs(e)
			t.Run(strings.Join(args, " "), func(t *testing.T) {
				code, _, stderr := runCLI(t, append(args, "--help")...)
				if code != exitOK || stderr != "" {
					t.Errorf("exit %d, stderr %q", code, stderr)
				}
			})
		}
	}
}

// exampleArgs splits an example command line as a shell would for these simple lines: up to a comment, pipe or
// redirection, with single quotes removed, and without the leading "memscan".
func exampleArgs(line string) []string {
	line, _, _ = strings.Cut(line, " #")
	var args []string
	for _, f := range strings.Fields(line)[1:] {
		if f == "|" || f == ">" || f == "&&" {
			break
		}
		args = append(args, strings.Trim(f, "'"))
	}
	return args
}

func TestExampleArgs(t *testing.T) {
	got := exampleArgs("  memscan analyze 'a/iteration_*/r0.pickle' --quiet > s.json   # note")
	if strings.Join(got, "|") != "analyze|a/iteration_*/r0.pickle|--quiet" {
		t.Errorf("exampleArgs = %q", got)
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

// TestSharedFlagsWordedOnce checks that a shared flag reads the same in every command that has it (--out of
// static, which writes no run directory, aside).
func TestSharedFlagsWordedOnce(t *testing.T) {
	usage := regexp.MustCompile(`(?m)^\s+(?:-\w, )?--(out|format|name|no-plots|no-files|rules)\b[^ ]*(?: \w+)?\s{3,}(.*)$`)
	seen := map[string]map[string][]string{} // flag → wording (defaults and value lists cut) → commands
	for _, cmd := range commands() {
		_, help, _ := runCLI(t, cmd.name, "--help")
		for _, m := range usage.FindAllStringSubmatch(help, -1) {
			flag, text := m[1], m[2]
			if flag == "out" && cmd.name == "static" {
				continue
			}
			text, _, _ = strings.Cut(text, " (default")
			text, _, _ = strings.Cut(text, ":")
			if seen[flag] == nil {
				seen[flag] = map[string][]string{}
			}
			seen[flag][text] = append(seen[flag][text], cmd.name)
		}
	}
	// Each of these flags is shared by at least three commands.
	for _, flag := range []string{"out", "format", "name", "no-plots", "no-files", "rules"} {
		if len(seen[flag]) != 1 {
			t.Errorf("--%s has %d wordings: %v", flag, len(seen[flag]), seen[flag])
		}
		for _, cmds := range seen[flag] {
			if len(cmds) < 3 {
				t.Errorf("--%s found in %v only", flag, cmds)
			}
		}
	}
}

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

// TestParseErrorFormat checks that every command reports a command line it cannot parse in one format.
func TestParseErrorFormat(t *testing.T) {
	for _, cmd := range commands() {
		code, stdout, stderr := runCLI(t, cmd.name, "--no-such-flag")
		want := "memscan: " + cmd.name + ": unknown flag: --no-such-flag (see memscan " + cmd.name + " --help)\n"
		if code != exitUsage || stdout != "" || stderr != want {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %q", cmd.name, code, stdout, stderr, want)
		}
	}
}

// maxFuncLines bounds every function of the CLI: a longer one mixes parsing, options, the library call and
// rendering, which belong in separate steps.
const maxFuncLines = 80

func TestCLIFunctionsAreShort(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			checked++
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFuncLines {
				t.Errorf("%s: %s is %d lines (at most %d)", name, fd.Name.Name, n, maxFuncLines)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d functions found; is the test running in cmd/memscan?", checked)
	}
}
