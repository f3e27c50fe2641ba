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
		legendW := vg.Length(210)
		plotArea := draw.Crop(dc, 0, -legendW, 0, 0)
		legendArea := draw.Crop(dc, dc.Max.X-dc.Min.X-legendW, 0, 0, 0)

		p := newPlot("")
		p.X.Label.Text = c.XLabel
		p.Y.Label.Text = "memory (" + unit.Name + ")"
		p.Y.Tick.Marker = byteTicks{}
		p.Add(plotter.NewGrid())
		var legend []legendItem

		base := make([]float64, n)
		for _, s := range c.Stacked {
			pts := make(plotter.XYs, 0, 2*n)
			top := make([]float64, n)
			for i := range n {
				top[i] = base[i] + s.Values[i]
				pts = append(pts, plotter.XY{X: c.X[i], Y: top[i] / unit.Bytes})
			}
			for i := n - 1; i >= 0; i-- {
				pts = append(pts, plotter.XY{X: c.X[i], Y: base[i] / unit.Bytes})
			}
			poly, err := plotter.NewPolygon(pts)
			if err != nil {
				return fmt.Errorf("memory timeline %s: %w", c.Title, err)
			}
			poly.Color = s.Color
			poly.LineStyle.Width = 0
			p.Add(poly)
			legend = append(legend, legendItem{label: s.Name, box: s.Color})
			base = top
		}
		for _, s := range c.Lines {
			pts := make(plotter.XYs, n)
			for i := range n {
				pts[i] = plotter.XY{X: c.X[i], Y: s.Values[i] / unit.Bytes}
			}
			l, err := plotter.NewLine(pts)
			if err != nil {
				return fmt.Errorf("memory timeline %s: %w", c.Title, err)
			}
			l.LineStyle = draw.LineStyle{Color: s.Color, Width: 2}
			p.Add(l)
			legend = append(legend, legendItem{label: s.Name, line: &l.LineStyle})
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
	sty := textStyle(10)
	sty.Color = ColorPeak
	sty.YAlign = draw.YBottom
	at := vg.Point{X: x + 6, Y: y + 5}
	if x > (c.Min.X+c.Max.X)/2 {
		sty.XAlign = draw.XRight
		at.X = x - 6
	}
	// A white box behind the label keeps it readable over lines and areas.
	box := sty.Rectangle(m.label)
	pad := vg.Length(2)
	c.FillPolygon(color.White, []vg.Point{
		{X: at.X + box.Min.X - pad, Y: at.Y + box.Min.Y - pad}, {X: at.X + box.Max.X + pad, Y: at.Y + box.Min.Y - pad},
		{X: at.X + box.Max.X + pad, Y: at.Y + box.Max.Y + pad}, {X: at.X + box.Min.X - pad, Y: at.Y + box.Max.Y + pad},
	})
	c.FillText(sty, at, m.label)
}

func (m *peakMark) DataRange() (xmin, xmax, ymin, ymax float64) { return m.x, m.x, m.y, m.y }

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
