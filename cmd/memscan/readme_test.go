package main

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/testutil"
)

// readmeStandIns are the committed files that stand in for the placeholder names the README's examples use, so
// that those examples run too; a name not here and not in the repository skips its command.
var readmeStandIns = map[string]string{
	"snapshot.pickle":              "testdata/example/rank0_memory_snapshot.pickle",
	"rank0_memory_snapshot.pickle": "testdata/example/rank0_memory_snapshot.pickle",
	"big.pickle":                   "testdata/example/rank0_memory_snapshot.pickle",
	"tracer_rank0.json":            "tracer/testdata/small_rank0.json",
	"tracer_rank1.json":            "tracer/testdata/run_r1_small.json",
	"train.log":                    "trainlog/testdata/megatron.log",
	"cfg.json":                     "testdata/static/llama3-8b-fsdp8.json",
}

// readmeCommands returns the memscan command lines of README.md's sh blocks (the binary's name dropped), with
// trailing comments and a shell continuation (&& …, | …, > …) cut off.
func readmeCommands(t *testing.T, root string) [][]string {
	t.Helper()
	f, err := os.Open(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]string
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "```sh"):
			in = true
			continue
		case strings.HasPrefix(line, "```"):
			in = false
		}
		if !in {
			continue
		}
		var args []string
		switch {
		case strings.HasPrefix(line, "go run ./cmd/memscan "):
			args = shellWords(strings.TrimPrefix(line, "go run ./cmd/memscan "))
		case strings.HasPrefix(line, "memscan "):
			args = shellWords(strings.TrimPrefix(line, "memscan "))
		default:
			continue
		}
		cut := len(args)
		for i, a := range args {
			if a == "#" || a == "&&" || a == "|" || a == ">" {
				cut = i
				break
			}
		}
		if slices.Contains(args[:cut], "\\") {
			continue // continued on the next line with the user's own paths
		}
		out = append(out, args[:cut])
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// shellWords splits a command line as sh would for the quoting the README uses (single and double quotes).
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	quote, word := byte(0), false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, word = c, true
		case c == ' ' || c == '\t':
			if word {
				out = append(out, cur.String())
				cur.Reset()
				word = false
			}
		default:
			cur.WriteByte(c)
			word = true
		}
	}
	if word {
		out = append(out, cur.String())
	}
	return out
}

// TestREADMECommands runs every memscan command of the README whose inputs exist in the repository (or have a
// stand-in), each in an empty working directory: the flags, settings and files the README shows must work.
func TestREADMECommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every README command")
	}
	root := testutil.RepoRoot(t)
	cmds := readmeCommands(t, root)
	if len(cmds) < 10 {
		t.Fatalf("found %d memscan commands in README.md; the parser missed the sh blocks", len(cmds))
	}
	ran := 0
	for _, args := range cmds {
		args, ok := resolveReadmeArgs(root, args)
		if !ok {
			t.Logf("skipped (names a file of the user's): memscan %s", strings.Join(args, " "))
			continue
		}
		ran++
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Chdir(t.TempDir())
			code, _, stderr := runCLI(t, args...)
			if code != exitOK {
				t.Errorf("memscan %s: exit %d\n%s", strings.Join(args, " "), code, stderr)
			}
		})
	}
	if ran < 15 {
		t.Errorf("ran %d README commands; expected at least 15", ran)
	}
}

// inputExt are the extensions of the input files the README's examples name.
var inputExt = map[string]bool{".pickle": true, ".pkl": true, ".json": true, ".yaml": true, ".yml": true, ".log": true, ".gz": true}

// resolveReadmeArgs makes each input argument an absolute path into the repository (through readmeStandIns for
// placeholders); ok is false when an input exists nowhere. Arguments of -o/--out are outputs and stay relative
// (to the test's empty working directory).
func resolveReadmeArgs(root string, args []string) ([]string, bool) {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if strings.HasPrefix(a, "-") || i > 0 && (args[i-1] == "-o" || args[i-1] == "--out" || args[i-1] == "--save-corrections") {
			continue
		}
		if s, ok := readmeStandIns[a]; ok {
			a = s
		}
		if !strings.Contains(a, "/") && !inputExt[filepath.Ext(a)] {
			continue // a command, a preset, a size or a setting
		}
		p := filepath.Join(root, filepath.FromSlash(a))
		if _, err := os.Stat(p); err != nil {
			return args, false
		}
		out[i] = p
	}
	return out, true
}
