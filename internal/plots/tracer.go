package plots

import (
	"errors"
	"fmt"
	"image/color"
	"strconv"

	"github.com/memscan/memscan/internal/units"
)

// Colours of the tracer charts: one for phase bars, one for module patterns and a distinct one for the Unknown
// module group so it is never mistaken for a module.
var (
	tracerPhaseColor   = color.RGBA{0x4c, 0x72, 0xb0, 0xff}
	tracerModuleColor  = color.RGBA{0x2a, 0x9d, 0x8f, 0xff}
	tracerUnknownColor = color.RGBA{0x9e, 0x9e, 0x9e, 0xff}
)

// tracerRankPalette gives neighbouring ranks clearly different colours (a hash of the label may not).
var tracerRankPalette = []color.Color{
	color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0xff, 0x7f, 0x0e, 0xff}, color.RGBA{0x2c, 0xa0, 0x2c, 0xff},
	color.RGBA{0xd6, 0x27, 0x28, 0xff}, color.RGBA{0x94, 0x67, 0xbd, 0xff}, color.RGBA{0x8c, 0x56, 0x4b, 0xff},
	color.RGBA{0xe3, 0x77, 0xc2, 0xff}, color.RGBA{0x7f, 0x7f, 0x7f, 0xff}, color.RGBA{0xbc, 0xbd, 0x22, 0xff},
	color.RGBA{0x17, 0xbe, 0xcf, 0xff},
}

// TracerPhases draws the bytes alive at the peak per creation phase, largest first; shares are of listedBytes.
func TracerPhases(path, title string, names []string, bytes []int64, counts []int, listedBytes int64) error {
	if len(names) != len(bytes) || len(names) != len(counts) {
		return fmt.Errorf("tracer phases %s: %d names, %d byte values, %d counts", title, len(names), len(bytes), len(counts))
	}
	c := BarChart{Title: title, XLabel: "bytes alive at the peak"}
	for i, n := range names {
		c.Labels = append(c.Labels, n)
		c.Values = append(c.Values, float64(bytes[i]))
		c.Colors = append(c.Colors, tracerPhaseColor)
		c.Notes = append(c.Notes, units.Percent(bytes[i], listedBytes)+", "+units.Plural(counts[i], "tensor", "tensors"))
	}
	return Bars(path, c)
}

// TracerModules draws merged module patterns (layers.* ...) by bytes; merged[i] is the number of modules merged
// into pattern i. The pattern named unknown is drawn in grey.
func TracerModules(path, title string, patterns []string, bytes []int64, merged []int, unknown string, listedBytes int64) error {
	if len(patterns) != len(bytes) || len(patterns) != len(merged) {
		return fmt.Errorf("tracer modules %s: %d patterns, %d byte values, %d merge counts", title, len(patterns), len(bytes), len(merged))
	}
	c := BarChart{Title: title, XLabel: "bytes alive at the peak", LabelWidth: 420,
		Legend: []LegendEntry{{Label: "module pattern", Color: tracerModuleColor}, {Label: "no module (" + unknown + ")", Color: tracerUnknownColor}}}
	for i, p := range patterns {
		c.Labels = append(c.Labels, p)
		c.Values = append(c.Values, float64(bytes[i]))
		col := color.Color(tracerModuleColor)
		if p == unknown {
			col = tracerUnknownColor
		}
		c.Colors = append(c.Colors, col)
		note := units.Percent(bytes[i], listedBytes)
		if merged[i] > 1 {
			note += ", " + strconv.Itoa(merged[i]) + " modules merged"
		}
		c.Notes = append(c.Notes, note)
	}
	return Bars(path, c)
}

// TracerModulesByRank compares what each rank holds per module pattern: one group of bars per pattern, one bar
// per rank, so pipeline stages that hold different layers (or an outlier rank) stand out. bytes is
// [pattern][rank].
func TracerModulesByRank(path, title string, patterns, ranks []string, bytes [][]int64) error {
	if len(patterns) == 0 || len(ranks) == 0 {
		return errors.New("tracer modules by rank " + title + ": no data")
	}
	if len(bytes) != len(patterns) {
		return fmt.Errorf("tracer modules by rank %s: %d patterns, %d rows", title, len(patterns), len(bytes))
	}
	series := make([]Series, len(ranks))
	for j, r := range ranks {
		series[j] = Series{Name: r, Color: tracerRankPalette[j%len(tracerRankPalette)]}
	}
	for i, row := range bytes {
		if len(row) != len(ranks) {
			return fmt.Errorf("tracer modules by rank %s: pattern %q has %d values for %d ranks", title, patterns[i], len(row), len(ranks))
		}
		for j, b := range row {
			series[j].Values = append(series[j].Values, float64(b))
		}
	}
	return GroupedBars(path, GroupedBarChart{Title: title, Groups: patterns, Series: series})
}
