package report

import (
	"cmp"
	"slices"
)

// TimelineView is the analysis of a torch.profiler memory timeline.
type TimelineView struct {
	Form   string `json:"form" msgpack:"form"` // "plot" or "raw"
	Points int    `json:"points" msgpack:"points"`
	Events int    `json:"events,omitempty" msgpack:"events,omitempty"`
	// Categories are the profiler's own names (as in the file); MemscanCategories the same categories under
	// memscan's names (TimelineCategory), index for index. The report's Categories and Peak use memscan's.
	Categories        []string `json:"categories" msgpack:"categories"`
	MemscanCategories []string `json:"memscan_categories" msgpack:"memscan_categories"`
	StartUS           int64    `json:"start_us" msgpack:"start_us"`
	EndUS             int64    `json:"end_us" msgpack:"end_us"`
	// PeakBytes is the highest sum over categories; PeakTimeUS/PeakIndex where it first occurs, and
	// PeakComposition what each category held then (largest first), under the profiler's names.
	PeakBytes       int64          `json:"peak_bytes" msgpack:"peak_bytes"`
	PeakTimeUS      int64          `json:"peak_time_us" msgpack:"peak_time_us"`
	PeakIndex       int            `json:"peak_index" msgpack:"peak_index"`
	PeakComposition []CategoryStat `json:"peak_composition" msgpack:"peak_composition"`
	// CategoryMax is each category's own maximum over the run (they need not coincide with the peak).
	CategoryMax []CategoryStat `json:"category_max" msgpack:"category_max"`
	FinalBytes  int64          `json:"final_bytes" msgpack:"final_bytes"`
	// Series is the timeline downsampled for plotting, peak kept; not in summary.json.
	Series *TimelineSeriesData `json:"-" msgpack:"series,omitempty"`
}

// TimelineSeriesData is per-category bytes at selected points.
type TimelineSeriesData struct {
	TimesUS    []int64   `msgpack:"times_us"`
	Categories []string  `msgpack:"categories"`
	Bytes      [][]int64 `msgpack:"bytes"` // [category][point]
	PeakIndex  int       `msgpack:"peak_index"`
}

// MemscanName is memscan's name for the profiler category name (MemscanCategories, index for index with
// Categories); a name the timeline does not list is its own.
func (v *TimelineView) MemscanName(name string) string {
	for k, c := range v.Categories {
		if c == name && k < len(v.MemscanCategories) {
			return v.MemscanCategories[k]
		}
	}
	return name
}

// CanonicalCategories renames profiler categories to memscan's (MemscanName), summing any that end up with the
// same name, largest first: what compare and merge line up with a snapshot's or tracer's categories.
func (v *TimelineView) CanonicalCategories(cs []CategoryStat) []CategoryStat {
	out := make([]CategoryStat, 0, len(cs))
	at := map[string]int{}
	for _, c := range cs {
		c.Name = v.MemscanName(c.Name)
		if i, ok := at[c.Name]; ok {
			out[i].Bytes += c.Bytes
			out[i].Count += c.Count
			continue
		}
		at[c.Name] = len(out)
		out = append(out, c)
	}
	slices.SortStableFunc(out, func(a, b CategoryStat) int { return cmp.Compare(b.Bytes, a.Bytes) })
	return out
}
