package plots

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"slices"

	"github.com/memscan/memscan/internal/units"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// StackedBarChart is groups of stacked byte bars, e.g. the predicted memory per GPU by component, drawn in the
// style of every memscan chart: bold title, sans-serif text, grid, byte axis in a readable unit, legend in a
// column to the right (never over the bars).
type StackedBarChart struct {
	Title  string
	Groups []string
	// Series are stacked bottom-up; Values are bytes indexed like Groups; a nil Color takes the palette's next.
	Series []Series
	// Limit draws a dashed horizontal line (e.g. the usable GPU memory), 0 for none; LimitLabel names it.
	Limit      float64
	LimitLabel string
	// Measured marks a measured total on each group's bar (0: none), e.g. the peak a calibration measured;
	// MeasuredLabel names it in the legend.
	Measured      []float64
	MeasuredLabel string
}

// stackPalette colours stacked components in a fixed order, so a component keeps its colour across charts.
var stackPalette = []color.RGBA{
	{0x4c, 0x72, 0xb0, 0xff}, {0xdd, 0x84, 0x52, 0xff}, {0x55, 0xa8, 0x68, 0xff}, {0xc4, 0x4e, 0x52, 0xff},
	{0x81, 0x72, 0xb3, 0xff}, {0x93, 0x78, 0x60, 0xff}, {0xda, 0x8b, 0xc3, 0xff}, {0x8c, 0x8c, 0x8c, 0xff},
	{0xcc, 0xb9, 0x74, 0xff}, {0x64, 0xb5, 0xcd, 0xff},
}

// ColorMeasuredMark is the marker of a measured value on a predicted bar.
var ColorMeasuredMark = color.RGBA{0x10, 0x10, 0x10, 0xff}

// StackedBars draws c to path as PNG.
func StackedBars(path string, c StackedBarChart) error {
	if len(c.Groups) == 0 || len(c.Series) == 0 {
		return fmt.Errorf("chart %q: no data", c.Title)
	}
	if len(c.Measured) != 0 && len(c.Measured) != len(c.Groups) {
		return fmt.Errorf("chart %q: %d measured values for %d groups", c.Title, len(c.Measured), len(c.Groups))
	}
	totals := make([]float64, len(c.Groups))
	for _, s := range c.Series {
		if len(s.Values) != len(c.Groups) {
			return fmt.Errorf("chart %q: series %q has %d values for %d groups", c.Title, s.Name, len(s.Values), len(c.Groups))
		}
		for k, v := range s.Values {
			totals[k] += math.Max(0, v)
		}
	}
	top := c.Limit
	for k, t := range totals {
		top = math.Max(top, t)
		if len(c.Measured) > 0 {
			top = math.Max(top, c.Measured[k])
		}
	}
	// One bar far above the rest (a strategy that does not shard anything) would flatten every other bar: the
	// axis stops above the others and the limit, and that bar is drawn cut with its total written on it.
	if clip := offScale(totals, c.Limit); clip > 0 {
		top = clip
	}
	unit := UnitFor(top)
	w := vg.Length(math.Max(640, math.Min(1400, 330+110*float64(len(c.Groups)))))
	return render(path, w, 480, c.Title, func(dc draw.Canvas) error {
		plotArea, legendArea := splitLegend(dc, 250)
		p := memoryPlot(unit)
		grid := plotter.NewGrid()
		grid.Vertical.Color = nil // the groups are nominal: only the byte axis gets grid lines
		p.Add(grid)
		p.NominalX(c.Groups...)
		barW := vg.Points(math.Max(18, math.Min(70, 480/float64(len(c.Groups)))))
		var below *plotter.BarChart
		var legend []legendItem
		for i, s := range c.Series {
			vals := make(plotter.Values, len(s.Values))
			for k, v := range s.Values {
				vals[k] = math.Max(0, v) / unit.Bytes
			}
			bc, err := plotter.NewBarChart(vals, barW)
			if err != nil {
				return fmt.Errorf("chart %q: %w", c.Title, err)
			}
			bc.LineStyle.Width = 0
			var col color.Color = stackPalette[i%len(stackPalette)]
			if s.Color != nil {
				col = s.Color
			}
			bc.Color = col
			if below != nil {
				bc.StackOn(below)
			}
			below = bc
			p.Add(bc)
			legend = append(legend, legendItem{label: s.Name, box: col})
		}
		above := slices.Clone(totals)
		for k := range c.Measured {
			above[k] = math.Max(above[k], c.Measured[k])
		}
		for k := range above {
			above[k] = math.Min(above[k], top) // a cut bar's total sits at the top of the axis
		}
		p.Add(&stackTotals{totals: totals, at: above, unit: unit, cut: top})
		if c.Limit > 0 {
			p.Add(&refLine{y: c.Limit / unit.Bytes})
			legend = append(legend, legendItem{label: fmt.Sprintf("%s (%s)", c.LimitLabel, units.Bytes(int64(c.Limit))),
				line: &draw.LineStyle{Color: ColorPeak, Width: 1, Dashes: []vg.Length{4, 3}}})
		}
		if len(c.Measured) > 0 {
			p.Add(&measuredMarks{values: c.Measured, unit: unit, width: barW})
			legend = append(legend, legendItem{label: c.MeasuredLabel, line: &draw.LineStyle{Color: ColorMeasuredMark, Width: 2.5}})
		}
		slantLabels(p, c.Groups, plotArea)
		p.X.Min, p.X.Max = -0.7, float64(len(c.Groups))-0.3 // the outer bars clear the axis and the legend
		p.Y.Min = 0
		p.Y.Max = math.Max(top/unit.Bytes*1.1, 1e-9) // headroom for the totals above the bars
		p.Draw(plotArea)
		drawLegendColumn(legendArea, legend)
		return nil
	})
}

// slantLabels slants the group labels when the widest would run into its neighbours.
func slantLabels(p *plot.Plot, groups []string, area draw.Canvas) {
	var widest vg.Length
	for _, g := range groups {
		widest = max(widest, p.X.Tick.Label.Width(g))
	}
	if spacing := (area.Max.X - area.Min.X - 60) / vg.Length(len(groups)); widest > spacing*0.9 {
		p.X.Tick.Label.Rotation = math.Pi / 4
		p.X.Tick.Label.XAlign = draw.XRight
		p.X.Tick.Label.YAlign = draw.YTop
	}
}

// stackTotals writes each stack's total above it (at, above a measured mark that is higher).
type stackTotals struct {
	totals, at []float64
	unit       Unit
	cut        float64 // totals above it are off the scale
}

func (s *stackTotals) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	sty := textStyle(9)
	sty.XAlign = draw.XCenter
	sty.YAlign = draw.YBottom
	for k, t := range s.totals {
		if t <= 0 {
			continue
		}
		label := units.Bytes(int64(t))
		y := trY(s.at[k]/s.unit.Bytes) + 4
		if t > s.cut {
			label += " (off scale)"
			y = trY(s.cut/s.unit.Bytes) - 14
			// Two white strokes across the bar mark where it is cut.
			x := trX(float64(k))
			for _, dy := range []vg.Length{-30, -24} {
				c.StrokeLine2(draw.LineStyle{Color: color.White, Width: 2.5}, x-40, y+dy-4, x+40, y+dy+4)
			}
		}
		c.FillText(sty, vg.Point{X: trX(float64(k)), Y: y}, label)
	}
}

func (s *stackTotals) DataRange() (xmin, xmax, ymin, ymax float64) {
	return math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
}

// measuredMarks draws a thick horizontal tick across each bar at its measured value (the legend names it; a
// label beside each bar would run into the next).
type measuredMarks struct {
	values []float64
	unit   Unit
	width  vg.Length
}

func (m *measuredMarks) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for k, v := range m.values {
		if v > 0 {
			x, y := trX(float64(k)), trY(v/m.unit.Bytes)
			c.StrokeLine2(draw.LineStyle{Color: ColorMeasuredMark, Width: 2.5}, x-m.width/2-4, y, x+m.width/2+4, y)
		}
	}
}

func (m *measuredMarks) DataRange() (xmin, xmax, ymin, ymax float64) {
	return math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
}

// StaticRooflinePoint is one operator on the roofline.
type StaticRooflinePoint struct {
	Label     string
	Intensity float64 // FLOP per byte
	TFLOPS    float64 // attainable
	Memory    bool    // drawn in the second colour (e.g. decode-phase operators)
}

// StaticRoofline draws the compute and bandwidth roofs (log-log) with the operators on them.
func StaticRoofline(path, title string, peakTFLOPS, bandwidthTBs float64, pts []StaticRooflinePoint) error {
	if peakTFLOPS <= 0 || bandwidthTBs <= 0 {
		return errors.New("roofline: peak and bandwidth must be > 0")
	}
	ridge := peakTFLOPS / bandwidthTBs
	xmin, xmax := math.Min(0.1, ridge/100), ridge*20
	for _, pt := range pts {
		if pt.Intensity > 0 {
			xmin = math.Min(xmin, pt.Intensity/2)
			xmax = math.Max(xmax, pt.Intensity*2)
		}
	}
	p := newPlot("")
	p.Add(plotter.NewGrid())
	var legend []legendItem
	p.X.Label.Text = "arithmetic intensity (FLOP/byte)"
	p.Y.Label.Text = "attainable TFLOP/s"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	var roof plotter.XYs
	for _, x := range []float64{xmin, ridge, xmax} {
		roof = append(roof, plotter.XY{X: x, Y: math.Min(peakTFLOPS, x*bandwidthTBs)})
	}
	line, err := plotter.NewLine(roof)
	if err != nil {
		return fmt.Errorf("roofline: %w", err)
	}
	line.Width = vg.Points(2)
	p.Add(line)
	legend = append(legend, legendItem{label: fmt.Sprintf("roof (ridge %.0f FLOP/B)", ridge), line: &line.LineStyle})
	for k, mem := range []bool{false, true} {
		var xy plotter.XYs
		var labels []string
		for _, pt := range pts {
			if pt.Memory != mem || pt.Intensity <= 0 || pt.TFLOPS <= 0 {
				continue
			}
			xy = append(xy, plotter.XY{X: pt.Intensity, Y: pt.TFLOPS})
			labels = append(labels, pt.Label)
		}
		if len(xy) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return fmt.Errorf("roofline: %w", err)
		}
		sc.GlyphStyle.Color = stackPalette[k+1]
		sc.GlyphStyle.Radius = vg.Points(3.5)
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		p.Add(sc)
		legend = append(legend, legendItem{label: map[bool]string{false: "operators", true: "decode operators"}[mem], box: stackPalette[k+1]})
		p.Add(&spreadLabels{xy: xy, labels: labels})
	}
	ymin := peakTFLOPS
	for _, pt := range pts {
		if pt.TFLOPS > 0 {
			ymin = math.Min(ymin, pt.TFLOPS)
		}
	}
	p.X.Min, p.X.Max = xmin, xmax
	p.Y.Min, p.Y.Max = math.Min(ymin/2, xmin*bandwidthTBs), peakTFLOPS*2
	return render(path, 1000, 540, title, func(dc draw.Canvas) error {
		plotArea, legendArea := splitLegend(dc, 190)
		p.Draw(plotArea)
		drawLegendColumn(legendArea, legend)
		return nil
	})
}

// offScale returns where to cut the value axis of bars when one total dwarfs the others: 1.25 times the largest
// of the others and the limit, when the biggest bar is more than 4 times that; 0 when no cut is needed.
func offScale(totals []float64, limit float64) float64 {
	if len(totals) < 2 {
		return 0
	}
	s := slices.Clone(totals)
	slices.Sort(s)
	rest := math.Max(s[len(s)-2], limit)
	if rest <= 0 || s[len(s)-1] <= 4*rest {
		return 0
	}
	return rest * 1.25
}
