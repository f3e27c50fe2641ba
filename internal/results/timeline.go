package results

import (
	"fmt"

	"github.com/memscan/memscan/internal/plots"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/report"
)

// This file renders the report of a torch.profiler memory timeline.

// memoryTimeline writes the text report's section of a torch.profiler memory timeline: its categories and peak
// are this section's "at the peak" table, so the generic category list is not written.
func (t *textWriter) memoryTimeline(v *report.TimelineView) {
	t.section("torch.profiler memory timeline")
	t.printf("  %s form, %d points", v.Form, v.Points)
	if v.Events > 0 {
		t.printf(" from %d events", v.Events)
	}
	if v.EndUS > v.StartUS {
		t.printf(", %.3f s", float64(v.EndUS-v.StartUS)/1e6)
	}
	t.printf("\n  peak %s (%s bytes) at point %d", units.Bytes(v.PeakBytes), GroupDigits(v.PeakBytes), v.PeakIndex)
	if v.PeakTimeUS != 0 {
		t.printf(", %.3f s after the start", float64(v.PeakTimeUS-v.StartUS)/1e6)
	}
	t.printf("; %s at the end\n", units.Bytes(v.FinalBytes))
	if len(v.PeakComposition) > 0 {
		t.printf("\n  at the peak:\n")
		// The profiler's own category names, with memscan's name for each (what compare and merge line up).
		tb := newTable([]align{alignLeft, alignLeft, alignRight, alignRight, alignRight}, "category", "memscan category", "size", "bytes", "share")
		for _, c := range v.PeakComposition {
			tb.add(c.Name, v.MemscanName(c.Name), units.Bytes(c.Bytes), GroupDigits(c.Bytes), units.Percent(c.Bytes, v.PeakBytes))
		}
		tb.write(t.w, 4)
	}
	if len(v.CategoryMax) > 0 {
		t.printf("\n  each category's own maximum:\n")
		tb := newTable([]align{alignLeft, alignRight, alignRight}, "category", "size", "bytes")
		for _, c := range v.CategoryMax {
			tb.add(c.Name, units.Bytes(c.Bytes), GroupDigits(c.Bytes))
		}
		tb.write(t.w, 4)
	}
}

// memoryTimeline writes the Markdown findings and tables of a torch.profiler memory timeline; its categories
// are what each held at the peak.
func (m *mdWriter) memoryTimeline(r *report.Report, v *report.TimelineView) {
	s := fmt.Sprintf("The profiler timeline peaks at **%s**", units.Bytes(v.PeakBytes))
	if v.PeakTimeUS != 0 {
		s += fmt.Sprintf(", %.3f s after the start", float64(v.PeakTimeUS-v.StartUS)/1e6)
	}
	if len(v.PeakComposition) > 0 {
		c := v.PeakComposition[0]
		s += fmt.Sprintf("; %s holds %s of it", mdText(c.Name), units.Percent(c.Bytes, v.PeakBytes))
	}
	m.findings(r, []string{s + "."})
	m.inputRecommendations(r.Recommendations)
	m.categories("Live at the peak by category", r.Categories)
}

// timelineCharts maps a profiler timeline to its charts: its categories at the peak and memory_timeline.png
// stacked by profiler category.
func timelineCharts(r *report.Report, v *report.TimelineView) []chartJob {
	jobs := categoryCharts(r, ChartCategories, "", "alive at the peak", "block")
	if v.Series != nil && len(v.Series.TimesUS) > 0 {
		// The profiler's export names no device; the rank, when the path gives it, tells files apart.
		title := "Memory timeline by category (torch.profiler): " + titleFile(r.File)
		if r.Rank >= 0 {
			title += fmt.Sprintf(", rank %d", r.Rank)
		}
		jobs = append(jobs, newChartJob(ChartTimeline, title, func(path string) error {
			s := v.Series
			return plots.ProfilerTimeline(path, title, s.TimesUS, s.Categories, s.Bytes, s.PeakIndex)
		}))
	}
	return jobs
}
