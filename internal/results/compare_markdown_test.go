package results

import (
	"bytes"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/compare"
)

// TestCompareMarkdownEscapesPlainCells: plain cells (module patterns, finding titles) are escaped as the
// README escapes them, so a pattern with two wildcards is not read as emphasis; code cells keep their pipes
// inside the cell.
func TestCompareMarkdownEscapesPlainCells(t *testing.T) {
	mods := compare.Table{Basis: "listed_bytes", Total: compare.Delta{Name: "listed_bytes", Before: 3, After: 3},
		Rows: []compare.Delta{{Name: "model.layers.*.mlp.experts.*", Before: 3, After: 3, BeforeCount: 1, AfterCount: 1}}}
	sites := compare.Table{Basis: "listed_bytes", Total: compare.Delta{Name: "listed_bytes", Before: 3, After: 3},
		Rows: []compare.Delta{{Name: "a|b.py:1:f", Category: "Temporary", Before: 3, After: 3}}}
	c := &compare.Comparison{Baseline: "a.json", Diffs: []compare.Diff{{Before: "a.json", After: "b.json", Modules: mods, Sites: sites,
		Findings: []compare.FindingChange{{ID: "x", Title: "<b> grew *twice*", AfterSeverity: "info"}}}}}
	var b bytes.Buffer
	if err := WriteCompareMarkdown(&b, c, CompareMarkdownOptions{Rows: 10}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| model.layers.\\*.mlp.experts.\\* | 3 B | 3 B | 0 B | 1 → 1 |",
		"| &lt;b&gt; grew \\*twice\\* | — | info, ",
		"| `a\\|b.py:1:f` | Temporary |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("compare.md lacks %q:\n%s", want, out)
		}
	}
}
