package plots

import (
	"errors"
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Series is one named sequence of byte values over a chart's X positions.
type Series struct {
	Name   string
	Values []float64 // bytes
	Color  color.Color
}

// TimeChart is memory over time: areas stacked bottom-up (e.g. live bytes per category), lines drawn over them
// (e.g. total allocated and reserved), and the peak marked.
type TimeChart struct {
	Title   string
	XLabel  string // e.g. "time since first event (s)" or "trace event"
	X       []float64
	Stacked []Series
	Lines   []Series
	// PeakIndex is the index into X of the peak to mark, -1 for none; PeakValue its bytes.
	PeakIndex int
	PeakValue float64
	PeakLabel string
	// Marks are phase boundaries drawn as thin vertical lines at X positions, e.g. each iteration's forward,
	// backward and optimizer starts; the legend names each Kind once.
	Marks []Mark
}

// Mark is one vertical boundary line.
type Mark struct {
	X     float64
	Kind  string // legend label, e.g. "backward starts"
	Color color.Color
}

// MemoryOverTime draws c to path as PNG, with the legend in a column to the right of the plot.
func MemoryOverTime(path string, c TimeChart) error {
	n := len(c.X)
	if n == 0 {
		return errors.New("memory timeline " + c.Title + ": no points")
	}
	for _, s := range append(append([]Series(nil), c.Stacked...), c.Lines...) {
		if len(s.Values) != n {
			return fmt.Errorf("memory timeline %s: series %q has %d values for %d points", c.Title, s.Name, len(s.Values), n)
		}
	}
	var maxV float64
	for _, s := range c.Lines {
		for _, v := range s.Values {
			maxV = math.Max(maxV, v)
		}
	}
	sum := make([]float64, n)
	for _, s := range c.Stacked {
		for i, v := range s.Values {
			sum[i] += v
			maxV = math.Max(maxV, sum[i])
		}
	}
	maxV = math.Max(maxV, c.PeakValue)
	unit := UnitFor(maxV)

	return render(path, 1050, 520, c.Title, func(dc draw.Canvas) error {
		plotArea, legendArea := splitLegend(dc, 210)
		p := memoryPlot(unit)
		p.X.Label.Text = c.XLabel
		p.Add(plotter.NewGrid())
		var legend []legendItem

		areas, err := stackedAreas(c.X, c.Stacked, unit.Bytes)
		if err != nil {
			return fmt.Errorf("memory timeline %s: %w", c.Title, err)
		}
		for _, a := range areas {
			p.Add(a)
		}
		for _, s := range c.Stacked {
			legend = append(legend, legendItem{label: s.Name, box: s.Color})
		}
		for _, s := range c.Lines {
			style := draw.LineStyle{Color: s.Color, Width: 2}
			pieces, err := chunkedLine(c.X, s.Values, unit.Bytes, style)
			if err != nil {
				return fmt.Errorf("memory timeline %s: %w", c.Title, err)
			}
			p.Add(pieces...)
			legend = append(legend, legendItem{label: s.Name, line: &style})
		}
		seen := map[string]bool{}
		for _, m := range c.Marks {
			p.Add(&boundaryMark{x: m.X, color: m.Color})
			if !seen[m.Kind] {
				seen[m.Kind] = true
				legend = append(legend, legendItem{label: m.Kind, line: &draw.LineStyle{Color: m.Color, Width: 1}})
			}
		}
		if c.PeakIndex >= 0 && c.PeakIndex < n {
			p.Add(&peakMark{x: c.X[c.PeakIndex], y: c.PeakValue / unit.Bytes, label: c.PeakLabel})
			legend = append(legend, legendItem{label: "peak", line: &draw.LineStyle{Color: ColorPeak, Width: 1, Dashes: []vg.Length{4, 3}}})
		}
		p.Y.Min = 0
		p.Y.Max = math.Max(p.Y.Max*1.12, 1e-9) // headroom for the peak label
		p.Draw(plotArea)
		drawLegendColumn(legendArea, legend)
		return nil
	})
}

// peakMark is a dashed vertical line at the peak with a dot and a label, kept inside the plot area.
type peakMark struct {
	x, y  float64
	label string
}

func (m *peakMark) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	x, y := trX(m.x), trY(m.y)
	c.StrokeLine2(draw.LineStyle{Color: ColorPeak, Width: 1, Dashes: []vg.Length{4, 3}}, x, c.Min.Y, x, c.Max.Y)
	c.DrawGlyph(draw.GlyphStyle{Color: ColorPeak, Radius: 4, Shape: draw.CircleGlyph{}}, vg.Point{X: x, Y: y})
	// The label sits in the headroom above the data (MemoryOverTime leaves 12 % of the axis free), beside the
	// dashed line, so it never hides a series: an opaque box next to the peak covered the reserved line there.
	sty := textStyle(10)
	sty.Color = ColorPeak
	sty.YAlign = draw.YTop
	at := vg.Point{X: x + 5, Y: c.Max.Y - 2}
	if x > (c.Min.X+c.Max.X)/2 {
		sty.XAlign = draw.XRight
		at.X = x - 5
	}
	c.FillText(sty, at, m.label)
}

func (m *peakMark) DataRange() (xmin, xmax, ymin, ymax float64) { return m.x, m.x, m.y, m.y }

// boundaryMark is a thin vertical line across the plot area at a phase boundary.
type boundaryMark struct {
	x     float64
	color color.Color
}

func (m *boundaryMark) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	x := trX(m.x)
	c.StrokeLine2(draw.LineStyle{Color: m.color, Width: 0.8}, x, c.Min.Y, x, c.Max.Y)
}

func (m *boundaryMark) DataRange() (xmin, xmax, ymin, ymax float64) {
	return m.x, m.x, 0, 0 // the y axis starts at 0 anyway
}

// legendItem is a legend row: a filled box or a line.
type legendItem struct {
	label string
	box   color.Color
	line  *draw.LineStyle
}

// drawLegendColumn lists items top-down in c; gonum's legend would sit on top of the data.
func drawLegendColumn(c draw.Canvas, items []legendItem) {
	sty := textStyle(10)
	y := c.Max.Y - 20
	x := c.Min.X + 8
	width := c.Max.X - x - 24
	for _, it := range items {
		if y < c.Min.Y+8 {
			break
		}
		switch {
		case it.line != nil:
			c.StrokeLine2(*it.line, x, y, x+14, y)
		case it.box != nil:
			c.FillPolygon(it.box, []vg.Point{{X: x, Y: y - 5}, {X: x + 14, Y: y - 5}, {X: x + 14, Y: y + 5}, {X: x, Y: y + 5}})
		}
		c.FillText(sty, vg.Point{X: x + 20, Y: y}, fitText(sty, it.label, width))
		y -= 16
	}
}
