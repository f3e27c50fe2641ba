package results

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/memscan/memscan/internal/compare"
	"github.com/memscan/memscan/internal/plots"
	"github.com/memscan/memscan/internal/units"
)

// compareChartRows bounds the rows drawn per compare chart (largest changes first).
const compareChartRows = 15

// CompareFilesOptions tune WriteCompareFiles.
type CompareFilesOptions struct {
	// Rows bounds each table of compare.md, as CompareMarkdownOptions.Rows.
	Rows  int
	Plots bool
}

// WriteCompareFiles writes compare.md, compare.json and, with opt.Plots, the charts of every diff into dir.
// Charts that cannot be drawn do not stop the reports: chartErrs holds one error per diff whose charts failed,
// for the caller to warn about, and compare.md embeds only the charts that exist.
func WriteCompareFiles(dir string, c *compare.Comparison, opt CompareFilesOptions) (chartErrs []error, err error) {
	images := map[int][]string{}
	if opt.Plots {
		for i := range c.Diffs {
			files, err := writeCompareCharts(dir, i, &c.Diffs[i])
			if err != nil {
				chartErrs = append(chartErrs, err)
			}
			images[i] = files
		}
	}
	md := CompareMarkdownOptions{Rows: opt.Rows, Images: images}
	if err := WriteFile(filepath.Join(dir, FileCompareMarkdown), func(w io.Writer) error { return WriteCompareMarkdown(w, c, md) }); err != nil {
		return chartErrs, err
	}
	return chartErrs, WriteFile(filepath.Join(dir, FileCompareJSON), func(w io.Writer) error { return units.WriteJSON(w, c) })
}

// writeCompareCharts draws compare_categories.png and compare_sites.png for diff i (suffixed _<i+1> after the
// first), at the peak when both inputs have one, and returns the names of the files drawn.
func writeCompareCharts(dir string, i int, d *compare.Diff) ([]string, error) {
	suffix := ""
	if i > 0 {
		suffix = fmt.Sprintf("_%d", i+1)
	}
	var files []string
	var errs []error
	cats, sites, when := compareChartTables(d)
	for _, c := range []struct {
		file, title string
		t           compare.Table
		site        bool
	}{
		{"compare_categories" + suffix + ".png", "Live memory by category" + when, cats, false},
		{"compare_sites" + suffix + ".png", "Live memory by creation site" + when + " (largest changes)", sites, true},
	} {
		ch := compareChart(c.title, d, c.t, c.site)
		if len(ch.Labels) == 0 {
			continue
		}
		if err := plots.CompareBars(filepath.Join(dir, c.file), ch); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.file, err))
			continue
		}
		files = append(files, c.file)
	}
	return files, errors.Join(errs...)
}

// compareChartTables are the tables the compare charts draw and when they were measured: the peak is what a run
// must fit, so its change is charted when both sides have one, else the dump's.
func compareChartTables(d *compare.Diff) (cats, sites compare.Table, when string) {
	if d.PeakCategories != nil && d.PeakSites != nil {
		return *d.PeakCategories, *d.PeakSites, " at the peak"
	}
	return d.Categories, d.Sites, " at the dump"
}

// compareChart maps one table of a diff to before/after bars: the first compareChartRows rows, leaving out rows
// that are zero on both sides; a site row carries its category in the label.
func compareChart(title string, d *compare.Diff, t compare.Table, site bool) plots.CompareChart {
	ch := plots.CompareChart{Title: title, BeforeName: Stem(d.Before), AfterName: Stem(d.After)}
	for j, r := range t.Rows {
		if j == compareChartRows {
			break
		}
		if r.Before == 0 && r.After == 0 {
			continue
		}
		label := r.Name
		if site && r.Category != "" {
			label = r.Name + " [" + r.Category + "]"
		}
		ch.Labels = append(ch.Labels, label)
		ch.Before = append(ch.Before, float64(r.Before))
		ch.After = append(ch.After, float64(r.After))
	}
	return ch
}
