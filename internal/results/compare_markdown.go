package results

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/compare"
	"github.com/memscan/memscan/internal/units"
)

// CompareMarkdownOptions tune WriteCompareMarkdown.
type CompareMarkdownOptions struct {
	// Rows bounds each table (largest changes first); 0 means 25. The totals row always follows, and compare.json
	// holds every row.
	Rows int
	// Images maps a diff index to the chart files (relative paths) to embed under it.
	Images map[int][]string
}

// WriteCompareMarkdown renders the comparison as the compare.md report.
func WriteCompareMarkdown(w io.Writer, c *compare.Comparison, opt CompareMarkdownOptions) error {
	if opt.Rows <= 0 {
		opt.Rows = 25
	}
	bw := bufio.NewWriter(w)
	out := printable(bw) // above the buffer, so that it sees whole strings, never a character cut in two
	p := func(format string, args ...any) { fmt.Fprintf(out, format, args...) }
	p("# memscan compare\n\n")
	p("Baseline: `%s`. Δ is after − baseline; every table's rows add up to its total row (a residual row holds what the inputs' own rows do not cover).\n\n", mdCell(mdCode(c.Baseline)))
	for i, d := range c.Diffs {
		p("## `%s` vs `%s`\n\n", mdCell(mdCode(d.After)), mdCell(mdCode(d.Before)))
		for _, w := range d.Warnings {
			p("- ⚠ %s\n", w)
		}
		if len(d.Warnings) > 0 {
			p("\n")
		}
		p("### Totals\n\n| measure | before | after | Δ | Δ %% |\n|---|---:|---:|---:|---:|\n")
		for _, t := range d.Totals {
			if t.Before == 0 && t.After == 0 {
				continue // e.g. allocator totals of tracer JSON, which has none
			}
			if strings.HasSuffix(t.Name, "_bytes") {
				p("| %s | %s | %s | %s | %s |\n", t.Name, units.Bytes(t.Before), units.Bytes(t.After), units.SignedBytes(t.Delta), deltaPct(t))
			} else {
				p("| %s | %d | %d | %+d | %s |\n", t.Name, t.Before, t.After, t.Delta, deltaPct(t))
			}
		}
		p("| OOM events | %d | %d | %+d | |\n\n", d.OOMs.Before, d.OOMs.After, d.OOMs.Delta)
		if len(d.Findings) > 0 {
			p("### Findings\n\n| finding | before | after |\n|---|---|---|\n")
			side := func(sev findings.Severity, v float64, unit findings.Unit) string {
				if sev == "" {
					return "—"
				}
				return string(sev) + ", " + findings.FormatMeasure(v, unit)
			}
			for _, f := range d.Findings {
				p("| %s | %s | %s |\n", mdText(f.Title), side(f.BeforeSeverity, f.BeforeValue, f.Unit), side(f.AfterSeverity, f.AfterValue, f.Unit))
			}
			p("\n")
		}
		for _, img := range opt.Images[i] {
			p("![%s](%s)\n\n", img, img)
		}
		writeCompareTable(p, "Categories", "category", d.Categories, opt.Rows, false)
		writeCompareTable(p, "Creation sites", "site", d.Sites, opt.Rows, true)
		writeCompareTable(p, "Modules", "module", d.Modules, opt.Rows, false)
		if d.PeakCategories != nil {
			p("### Peak\n\nThe trace peak went from %s to %s (%s), by category and by source line:\n\n", units.Bytes(d.PeakCategories.Total.Before),
				units.Bytes(d.PeakCategories.Total.After), units.SignedBytes(d.PeakCategories.Total.Delta))
			writeCompareTable(p, "Peak by category", "category", *d.PeakCategories, opt.Rows, false)
			writeCompareTable(p, "Peak by source line", "site", *d.PeakSites, opt.Rows, true)
		}
		if s := d.Segments; s != nil {
			p("### Segments\n\n%d segments in both (same device and size, paired in address order); %d new (%s); %d vanished (%s).\n\n",
				s.Common, len(s.New), units.Bytes(s.NewBytes), len(s.Vanished), units.Bytes(s.VanishedBytes))
			for _, part := range []struct {
				title string
				segs  []compare.SegmentID
			}{{"New", s.New}, {"Vanished", s.Vanished}} {
				if len(part.segs) == 0 {
					continue
				}
				p("%s segments (largest first):\n\n| device | address | size | stream |\n|---:|---|---:|---|\n", part.title)
				for j, sg := range part.segs {
					if j == opt.Rows {
						p("| | … %d more in compare.json | | |\n", len(part.segs)-j)
						break
					}
					p("| %d | 0x%x | %s | %d |\n", sg.Device, sg.Address, units.Bytes(sg.Size), sg.Stream)
				}
				p("\n")
			}
		}
	}
	return bw.Flush()
}

func writeCompareTable(p func(string, ...any), title, col string, t compare.Table, n int, withCat bool) {
	if len(t.Rows) == 0 {
		return
	}
	p("### %s\n\nRows add up to %s.\n\n", title, t.Basis)
	if withCat {
		p("| %s | category | before | after | Δ |\n|---|---|---:|---:|---:|\n", col)
	} else {
		p("| %s | before | after | Δ | count |\n|---|---:|---:|---:|---:|\n", col)
	}
	for i, r := range t.Rows {
		if i == n {
			var b, a int64
			for _, x := range t.Rows[i:] {
				b += x.Before
				a += x.After
			}
			if withCat {
				p("| … %d more rows | | %s | %s | %s |\n", len(t.Rows)-i, units.Bytes(b), units.Bytes(a), units.SignedBytes(a-b))
			} else {
				p("| … %d more rows | %s | %s | %s | |\n", len(t.Rows)-i, units.Bytes(b), units.Bytes(a), units.SignedBytes(a-b))
			}
			break
		}
		if withCat {
			p("| `%s` | %s | %s | %s | %s |\n", mdCell(mdCode(r.Name)), r.Category, units.Bytes(r.Before), units.Bytes(r.After), units.SignedBytes(r.Delta))
		} else {
			p("| %s | %s | %s | %s | %d → %d |\n", mdText(r.Name), units.Bytes(r.Before), units.Bytes(r.After), units.SignedBytes(r.Delta), r.BeforeCount, r.AfterCount)
		}
	}
	if withCat {
		p("| **total** | | %s | %s | %s |\n\n", units.Bytes(t.Total.Before), units.Bytes(t.Total.After), units.SignedBytes(t.Total.Delta))
	} else {
		p("| **total** | %s | %s | %s | |\n\n", units.Bytes(t.Total.Before), units.Bytes(t.Total.After), units.SignedBytes(t.Total.Delta))
	}
}

func deltaPct(d compare.Delta) string {
	if d.Before == 0 {
		return ""
	}
	return fmt.Sprintf("%+.1f%%", d.DeltaPct())
}
