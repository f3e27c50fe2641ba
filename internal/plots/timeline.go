package plots

import (
	"fmt"

	"github.com/memscan/memscan/internal/units"
)

// ProfilerTimeline draws a torch.profiler memory timeline stacked by category (memory_timeline.png). bytes is
// [category][point]; times are microseconds and are drawn as seconds since the first point; peakIndex marks the
// peak (-1 for none).
func ProfilerTimeline(path, title string, timesUS []int64, categories []string, bytes [][]int64, peakIndex int) error {
	if len(categories) != len(bytes) {
		return fmt.Errorf("profiler timeline %s: %d categories for %d series", title, len(categories), len(bytes))
	}
	c := TimeChart{Title: title, XLabel: "time since first point (s)", PeakIndex: -1}
	var t0 int64
	if len(timesUS) > 0 {
		t0 = timesUS[0]
	}
	for _, t := range timesUS {
		c.X = append(c.X, float64(t-t0)/1e6)
	}
	total := make([]float64, len(timesUS))
	for k, name := range categories {
		if len(bytes[k]) != len(timesUS) {
			return fmt.Errorf("profiler timeline %s: category %q has %d values for %d times", title, name, len(bytes[k]), len(timesUS))
		}
		var any bool
		vals := make([]float64, len(timesUS))
		for i, b := range bytes[k] {
			// Negative running totals (frees of memory the profiler never saw allocated) would fold the stack.
			vals[i] = float64(max(b, 0))
			total[i] += vals[i]
			any = any || b > 0
		}
		if any {
			c.Stacked = append(c.Stacked, Series{Name: name, Values: vals, Color: CategoryColor(name)})
		}
	}
	if peakIndex >= 0 && peakIndex < len(total) {
		c.PeakIndex, c.PeakValue = peakIndex, total[peakIndex]
		c.PeakLabel = "peak " + units.Bytes(int64(total[peakIndex]))
	}
	return MemoryOverTime(path, c)
}
