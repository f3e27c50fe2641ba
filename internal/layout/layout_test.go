// Package layout holds no code: its test keeps ARCHITECTURE.md true to the imports, and the house rules that the
// layout exists for (renderers never decode, detectors never estimate, combining reports needs only the model).
package layout

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/testutil"
)

const module = "github.com/memscan/memscan/"

// imports reads every package of the repository and the memscan packages it imports, tests excluded.
func imports(t *testing.T, root string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		if _, ok := out[pkg]; !ok {
			out[pkg] = []string{}
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if strings.HasPrefix(p, module) && !slices.Contains(out[pkg], strings.TrimPrefix(p, module)) {
				out[pkg] = append(out[pkg], strings.TrimPrefix(p, module))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range out {
		slices.Sort(v)
	}
	return out
}

var (
	tableRow = regexp.MustCompile("^\\| `([^`]+)` \\|(.*)\\|$")
	quoted   = regexp.MustCompile("`([^`]+)`")
)

// documented reads the import table between the imports markers of ARCHITECTURE.md.
func documented(t *testing.T, root string) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	begin, end := strings.Index(s, "<!-- imports:begin -->"), strings.Index(s, "<!-- imports:end -->")
	if begin < 0 || end < begin {
		t.Fatal("ARCHITECTURE.md has no imports table between <!-- imports:begin --> and <!-- imports:end -->")
	}
	out := map[string][]string{}
	for _, line := range strings.Split(s[begin:end], "\n") {
		m := tableRow.FindStringSubmatch(strings.TrimSpace(line))
		if m == nil {
			continue
		}
		deps := []string{}
		for _, q := range quoted.FindAllStringSubmatch(m[2], -1) {
			deps = append(deps, q[1])
		}
		slices.Sort(deps)
		out[m[1]] = deps
	}
	return out
}

// TestArchitectureTable: every package and every import arrow of the code is in ARCHITECTURE.md's table, and
// the table names nothing the code does not have.
func TestArchitectureTable(t *testing.T) {
	root := testutil.RepoRoot(t)
	got, doc := imports(t, root), documented(t, root)
	for pkg, deps := range got {
		d, ok := doc[pkg]
		switch {
		case !ok:
			t.Errorf("ARCHITECTURE.md does not list package %s (imports %v)", pkg, deps)
		case !slices.Equal(d, deps):
			t.Errorf("ARCHITECTURE.md says %s imports %v; it imports %v", pkg, d, deps)
		}
	}
	for pkg := range doc {
		if _, ok := got[pkg]; !ok {
			t.Errorf("ARCHITECTURE.md lists %s, which is not a package", pkg)
		}
	}
}

// reach is everything pkg imports, directly or not.
func reach(graph map[string][]string, pkg string) map[string]bool {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(p string) {
		for _, d := range graph[p] {
			if !seen[d] {
				seen[d] = true
				walk(d)
			}
		}
	}
	walk(pkg)
	return seen
}

// TestHouseRules checks the arrows the layout exists for, transitively: no circle; renderers never decode;
// detectors never estimate; merging and comparing reports needs neither the estimator nor the decoders.
func TestHouseRules(t *testing.T) {
	graph := imports(t, testutil.RepoRoot(t))
	for pkg := range graph {
		if reach(graph, pkg)[pkg] {
			t.Errorf("%s imports itself through a circle", pkg)
		}
	}
	decoders := []string{"load", "snapshot", "tracer", "memtimeline", "trainlog", "internal/input"}
	rules := []struct {
		pkg    string
		never  []string
		reason string
	}{
		{"internal/results", []string{"load", "analyze", "internal/pipeline"}, "renderers never decode"},
		{"internal/plots", []string{"report", "load", "analyze"}, "charts are drawn from plain data"},
		{"findings", []string{"static", "internal/calibrate"}, "detectors never estimate"},
		{"internal/detect", []string{"static", "internal/calibrate"}, "detectors never estimate"},
		{"analyze", []string{"static", "internal/calibrate", "internal/results", "internal/plots"}, "analysis neither estimates nor renders"},
		{"internal/merge", append([]string{"static", "analyze", "allocator"}, decoders...), "merging needs only the report model"},
		{"internal/compare", append([]string{"static", "analyze", "allocator"}, decoders...), "comparing needs only the report model"},
		{"report", append([]string{"analyze", "static", "allocator", "internal/categorize"}, decoders...), "the model imports only models"},
		{"internal/export", []string{"analyze", "static", "internal/detect"}, "exports replay, they do not analyze"},
		{"gpu", []string{"static"}, "the GPU catalogue is a leaf"},
	}
	for _, r := range rules {
		got := reach(graph, r.pkg)
		for _, n := range r.never {
			if got[n] {
				t.Errorf("%s reaches %s: %s", r.pkg, n, r.reason)
			}
		}
	}
}
