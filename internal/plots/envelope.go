package plots

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// EnvelopeChart is memory over a trace drawn from per-bucket extremes, one bucket about a pixel column wide:
// the category stack at each bucket's highest moment (so its top is the true maximum), allocated as a min–max
// band with a line on the maximum, reserved and the what-if as steps, phase bands with labelled iterations, the
// peak and the OOMs marked. Bucket k spans X[k]..X[k+1].
type EnvelopeChart struct {
	Title, XLabel string
	// IntegerX labels the x axis with whole numbers (event indexes).
	IntegerX bool
	X        []float64 // len = buckets + 1
	Stacked  []Series  // per bucket
	// AllocMin and AllocMax bound allocated memory in each bucket; ReservedMax and ReservedEnd are reserved
	// memory's highest and last value there, WhatIfEnd the what-if's (empty without one).
	AllocMin, AllocMax       []float64
	ReservedMax, ReservedEnd []float64
	WhatIfEnd                []float64
	WhatIfLabel              string
	Bands                    []Band
	// Labels are the iterations' names at their starts; drawn left to right, each only where it does not run
	// into the one before.
	Labels []XLabel
	Peak   *XLabel // at X, the value Y
	OOMs   []XLabel
}

// Band is a shaded x range, e.g. a forward phase.
type Band struct {
	X0, X1 float64
	Kind   string // legend label
	Color  color.Color
}

// XLabel is a text at an x position (and a value, for the peak).
type XLabel struct {
	X, Y float64
	Text string
}

// Colours of the phase bands, light enough for the stack to show through.
var (
	BandForward   = color.NRGBA{0x2c, 0xa0, 0x2c, 0x1c}
	BandBackward  = color.NRGBA{0xff, 0x7f, 0x0e, 0x1c}
	BandOptimizer = color.NRGBA{0x94, 0x67, 0xbd, 0x24}
)

// colorAllocMin draws the least allocated memory of each bucket.
var colorAllocMin = color.Gray{0x55}

// Envelope draws c to path as PNG, the legend in a column to the right of the plot.
func Envelope(path string, c EnvelopeChart) error {
	nb := len(c.X) - 1
	if nb < 1 {
		return errors.New("memory timeline " + c.Title + ": no buckets")
	}
	for _, s := range c.Stacked {
		if len(s.Values) != nb {
			return fmt.Errorf("memory timeline %s: series %q has %d values for %d buckets", c.Title, s.Name, len(s.Values), nb)
		}
	}
	if err := checkLengths("memory timeline "+c.Title, nb, len(c.AllocMin), len(c.AllocMax), len(c.ReservedMax), len(c.ReservedEnd), len(c.WhatIfEnd)); err != nil {
		return err
	}
	var maxV float64
	for _, vs := range [][]float64{c.AllocMax, c.ReservedMax, c.WhatIfEnd} {
		for _, v := range vs {
			maxV = math.Max(maxV, v)
		}
	}
	unit := UnitFor(maxV)
	return render(path, 1050, 520, c.Title, func(dc draw.Canvas) error {
		plotArea, legendArea := splitLegend(dc, 210)
		p := memoryPlot(unit)
		p.X.Label.Text = c.XLabel
		if c.IntegerX {
			p.X.Tick.Marker = integerTicks{}
		}
		p.Add(&envelopeDrawing{c: &c, scale: unit.Bytes, maxV: maxV / unit.Bytes})
		p.Y.Min, p.X.Min, p.X.Max = 0, c.X[0], c.X[nb]
		p.Y.Max = math.Max(maxV/unit.Bytes*1.2, 1e-9) // headroom for three rows of labels
		p.Draw(plotArea)
		var legend []legendItem
		legend = append(legend, legendItem{label: "allocated (max per column)", line: &draw.LineStyle{Color: color.Black, Width: 2}})
		legend = append(legend, legendItem{label: "allocated (min per column)", line: &draw.LineStyle{Color: colorAllocMin, Width: 1}})
		legend = append(legend, legendItem{label: "reserved", line: &draw.LineStyle{Color: ColorReserved, Width: 2}})
		if len(c.WhatIfEnd) > 0 {
			legend = append(legend, legendItem{label: c.WhatIfLabel, line: &draw.LineStyle{Color: ColorCorrected, Width: 2, Dashes: []vg.Length{5, 3}}})
		}
		for _, s := range c.Stacked {
			legend = append(legend, legendItem{label: s.Name, box: s.Color})
		}
		seen := map[string]bool{}
		for _, b := range c.Bands {
			if !seen[b.Kind] {
				seen[b.Kind] = true
				r, g, bl, a := b.Color.RGBA()
				if a > 0 { // the legend box shows the band's hue at a readable strength
					r, g, bl = r*0xffff/a, g*0xffff/a, bl*0xffff/a
				}
				legend = append(legend, legendItem{label: b.Kind + " phase", box: color.NRGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), 0x60}})
			}
		}
		if len(c.OOMs) > 0 {
			legend = append(legend, legendItem{label: "out of memory", line: &draw.LineStyle{Color: ColorPeak, Width: 2, Dashes: []vg.Length{4, 3}}})
		}
		drawLegendColumn(legendArea, legend)
		return nil
	})
}

// envelopeDrawing draws the chart's layers in order: bands, stack, reserved, what-if, allocated, marks.
type envelopeDrawing struct {
	c     *EnvelopeChart
	scale float64
	maxV  float64
}

func (d *envelopeDrawing) DataRange() (xmin, xmax, ymin, ymax float64) {
	return d.c.X[0], d.c.X[len(d.c.X)-1], 0, d.maxV
}

func (d *envelopeDrawing) Plot(cv draw.Canvas, p *plot.Plot) {
	c := d.c
	trX, trY := p.Transforms(&cv)
	y := func(v float64) vg.Length { return trY(v / d.scale) }
	// The bands and the stack are painted into the chart's pixels (stackPainter). render draws every chart into an
	// RGBA image, so the painter is always there; a plotter cannot report an error if it were not.
	sp, ok := newStackPainter(cv)
	if !ok {
		return
	}
	for _, b := range bandsAtResolution(c.Bands, trX, cv.Min.X, cv.Max.X) {
		sp.over(b.Color, b.X0, b.X1, cv.Min.Y, cv.Max.Y)
	}
	nb := len(c.X) - 1
	// Each layer's rectangle per bucket, from the layer below's top (cumulative) to its own, painted once.
	below := make([]float64, nb)
	for _, s := range c.Stacked {
		for k, v := range s.Values {
			top := below[k] + max(v, 0)
			sp.rect(s.Color, trX(c.X[k]), trX(c.X[k+1]), y(below[k]), y(top))
			below[k] = top
		}
	}
	sp.finish()
	steps := func(top, end []float64, style draw.LineStyle) {
		var pts []vg.Point
		for k := range nb {
			x0, x1 := trX(c.X[k]), trX(c.X[k+1])
			pts = append(pts, vg.Point{X: x0, Y: y(top[k])})
			if end[k] != top[k] {
				pts = append(pts, vg.Point{X: x0, Y: y(end[k])})
			}
			pts = append(pts, vg.Point{X: x1, Y: y(end[k])})
		}
		// In pieces of lineChunk points sharing a segment, as chunkedLine strokes: one long spiky path costs the
		// rasteriser time in proportion to the plot's width for every cell.
		for lo := 0; lo < len(pts)-1; lo += lineChunk - 2 {
			cv.StrokeLines(style, pts[lo:min(len(pts), lo+lineChunk)])
		}
	}
	steps(c.ReservedMax, c.ReservedEnd, draw.LineStyle{Color: ColorReserved, Width: 1.6})
	if len(c.WhatIfEnd) > 0 {
		steps(c.WhatIfEnd, c.WhatIfEnd, draw.LineStyle{Color: ColorCorrected, Width: 1.6, Dashes: []vg.Length{5, 3}})
	}
	// Allocated on top: the least value of each bucket thin, the most as the outline of the stack, so a spike is
	// a coloured column outlined in black.
	steps(c.AllocMin, c.AllocMin, draw.LineStyle{Color: colorAllocMin, Width: 0.6})
	steps(c.AllocMax, c.AllocMax, draw.LineStyle{Color: color.Black, Width: 0.9})

	sty := textStyle(9)
	sty.Color = color.Gray{0x44}
	sty.YAlign = draw.YTop
	lastEnd := vg.Length(math.Inf(-1))
	for _, l := range c.Labels {
		x := trX(l.X) + 3
		if x < cv.Min.X || x > cv.Max.X-20 || x < lastEnd+4 {
			continue
		}
		cv.FillText(sty, vg.Point{X: x, Y: cv.Max.Y - 2}, l.Text)
		lastEnd = x + sty.Width(l.Text)
	}
	dash := draw.LineStyle{Color: ColorPeak, Width: 1.2, Dashes: []vg.Length{4, 3}}
	red := textStyle(10)
	red.Color = ColorPeak
	red.YAlign = draw.YTop
	// The headroom above the data holds three rows of text: the iterations, the peak, the OOMs; a label beside
	// its mark is aligned away from the nearer edge.
	side := func(x vg.Length) (draw.XAlignment, vg.Length) {
		if x > (cv.Min.X+cv.Max.X)/2 {
			return draw.XRight, x - 5
		}
		return draw.XLeft, x + 5
	}
	for i, o := range c.OOMs {
		x := trX(o.X)
		cv.StrokeLine2(dash, x, cv.Min.Y, x, cv.Max.Y)
		var at vg.Point
		red.XAlign, at.X = side(x)
		at.Y = cv.Max.Y - 28 - vg.Length(12*i)
		cv.FillText(red, at, o.Text)
	}
	if pk := c.Peak; pk != nil {
		x, yy := trX(pk.X), y(pk.Y)
		row := cv.Max.Y - 15
		cv.StrokeLine2(draw.LineStyle{Color: ColorPeak, Width: 0.6}, x, yy, x, row-10)
		cv.DrawGlyph(draw.GlyphStyle{Color: ColorPeak, Radius: 4, Shape: draw.CircleGlyph{}}, vg.Point{X: x, Y: yy})
		var at vg.Point
		red.XAlign, at.X = side(x)
		at.Y = row
		cv.FillText(red, at, pk.Text)
	}
}

// integerTicks labels an axis with whole numbers only (event indexes, iterations), with gonum's placement.
type integerTicks struct{}

func (integerTicks) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for _, t := range (plot.DefaultTicks{}).Ticks(min, max) {
		if t.Value != math.Trunc(t.Value) {
			if t.Label != "" {
				continue // a fractional major tick: dropped rather than labelled 2.5
			}
			out = append(out, t)
			continue
		}
		if t.Label != "" {
			t.Label = strconv.FormatInt(int64(t.Value), 10)
		}
		out = append(out, t)
	}
	return out
}
