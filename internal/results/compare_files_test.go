package results

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/compare"
)

func TestCompareChart(t *testing.T) {
	d := &compare.Diff{Before: "/runs/bs4.pickle", After: "/runs/bs8.pickle"}
	var many compare.Table
	for i := range 20 {
		many.Rows = append(many.Rows, compare.Delta{Name: fmt.Sprint("r", i), Before: int64(i), After: int64(2 * i)})
	}
	tests := []struct {
		name       string
		table      compare.Table
		site       bool
		wantLabels []string
		wantBefore []float64
	}{
		// Row 0 is zero on both sides and is left out; rows past the 15th are not drawn.
		{"bounded", many, false, []string{"r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "r13", "r14"},
			[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}},
		{"site labels carry the category", compare.Table{Rows: []compare.Delta{
			{Name: "a.py:1:f", Category: "Activation", Before: 10, After: 5},
			{Name: "b.py:2:g", Before: 0, After: 3},
		}}, true, []string{"a.py:1:f [Activation]", "b.py:2:g"}, []float64{10, 0}},
		{"categories keep their name", compare.Table{Rows: []compare.Delta{{Name: "Optimizer", Category: "x", Before: 1}}},
			false, []string{"Optimizer"}, []float64{1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ch := compareChart("title", d, tc.table, tc.site)
			if !slices.Equal(ch.Labels, tc.wantLabels) || !slices.Equal(ch.Before, tc.wantBefore) {
				t.Errorf("labels %q before %v, want %q %v", ch.Labels, ch.Before, tc.wantLabels, tc.wantBefore)
			}
			if len(ch.After) != len(ch.Labels) || ch.BeforeName != "bs4" || ch.AfterName != "bs8" {
				t.Errorf("after %v, names %q %q", ch.After, ch.BeforeName, ch.AfterName)
			}
		})
	}
}

func TestWriteCompareFiles(t *testing.T) {
	rows := compare.Table{Rows: []compare.Delta{{Name: "Activation", Before: 100, After: 300, Delta: 200}}}
	diff := compare.Diff{Before: "a.pickle", After: "b.pickle", Categories: rows}
	c := &compare.Comparison{Baseline: "a.pickle", Diffs: []compare.Diff{diff, diff}}
	for _, plots := range []bool{false, true} {
		t.Run(fmt.Sprint("plots=", plots), func(t *testing.T) {
			dir := t.TempDir()
			chartErrs, err := WriteCompareFiles(dir, c, CompareFilesOptions{Rows: 5, Plots: plots})
			if err != nil || chartErrs != nil {
				t.Fatal(err, chartErrs)
			}
			md, err := os.ReadFile(filepath.Join(dir, FileCompareMarkdown))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, FileCompareJSON)); err != nil {
				t.Error(err)
			}
			// The second diff's chart gets the _2 suffix; tables without rows (the sites) draw nothing.
			for _, png := range []string{"compare_categories.png", "compare_categories_2.png"} {
				_, err := os.Stat(filepath.Join(dir, png))
				if drawn := err == nil; drawn != plots {
					t.Errorf("%s drawn %v, want %v", png, drawn, plots)
				}
				if embedded := strings.Contains(string(md), "("+png+")"); embedded != plots {
					t.Errorf("compare.md embeds %s: %v, want %v", png, embedded, plots)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "compare_sites.png")); err == nil {
				t.Error("compare_sites.png drawn for a table without rows")
			}
		})
	}
}

// TestCompareChartTables: with a peak on both sides the charts draw the change of the peak; with one on one side
// only, or none, the dump's.
func TestCompareChartTables(t *testing.T) {
	dump := compare.Table{Basis: compare.AllocatedBasis}
	peak := compare.Table{Basis: compare.PeakBytesBasis}
	d := &compare.Diff{Categories: dump, Sites: dump, PeakCategories: &peak, PeakSites: &peak}
	if c, s, when := compareChartTables(d); c.Basis != compare.PeakBytesBasis || s.Basis != compare.PeakBytesBasis || when != " at the peak" {
		t.Errorf("with peaks: %s, %s, %q", c.Basis, s.Basis, when)
	}
	d.PeakCategories, d.PeakSites = nil, nil
	if c, s, when := compareChartTables(d); c.Basis != compare.AllocatedBasis || s.Basis != compare.AllocatedBasis || when != " at the dump" {
		t.Errorf("without peaks: %s, %s, %q", c.Basis, s.Basis, when)
	}
}
