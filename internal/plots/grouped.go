package plots

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// GroupedBarChart compares a few measures across groups, e.g. reserved, allocated and peak bytes per rank.
type GroupedBarChart struct {
	Title  string
	Groups []string // one per group, e.g. "rank 0"
	Series []Series // one bar per series in each group; Values indexed like Groups
	// Reference draws a dashed horizontal line (e.g. the median), 0 for none; ReferenceLabel names it.
	Reference      float64
	ReferenceLabel string
}

// GroupedBars draws c to path as PNG; the legend sits in a column to the right.
func GroupedBars(path string, c GroupedBarChart) error {
	if len(c.Groups) == 0 || len(c.Series) == 0 {
		return errors.New("grouped bar chart " + c.Title + ": no data")
	}
	var maxV float64
	for _, s := range c.Series {
		if len(s.Values) != len(c.Groups) {
			return fmt.Errorf("grouped bar chart %s: series %q has %d values for %d groups", c.Title, s.Name, len(s.Values), len(c.Groups))
		}
		for _, v := range s.Values {
			maxV = math.Max(maxV, v)
		}
	}
	unit := UnitFor(maxV)
	w := vg.Length(math.Max(700, math.Min(1800, float64(160+len(c.Groups)*len(c.Series)*14+len(c.Groups)*10))))
	return render(path, w, 480, c.Title, func(dc draw.Canvas) error {
		plotArea, legendArea := splitLegend(dc, 170)
		p := memoryPlot(unit)
		k := float64(len(c.Series))
		width := 0.8 / k
		bp := &barsPlotter{width: width, label: textStyle(8)}
		var legend []legendItem
		for j, s := range c.Series {
			off := (float64(j) - (k-1)/2) * width
			for i, v := range s.Values {
				bp.bars = append(bp.bars, bar{pos: float64(i) + off, value: v / unit.Bytes, color: s.Color})
			}
			legend = append(legend, legendItem{label: s.Name, box: s.Color})
		}
		p.Add(bp)
		if c.Reference > 0 {
			p.Add(&refLine{y: c.Reference / unit.Bytes, label: c.ReferenceLabel})
			legend = append(legend, legendItem{label: c.ReferenceLabel, line: &draw.LineStyle{Color: ColorPeak, Width: 1, Dashes: []vg.Length{4, 3}}})
		}
		p.NominalX(c.Groups...)
		slantLabels(p, c.Groups, plotArea)
		p.Y.Min = 0
		p.Y.Max = math.Max(maxV/unit.Bytes*1.08, 1e-9)
		p.Draw(plotArea)
		drawLegendColumn(legendArea, legend)
		return nil
	})
}

// refLine is a dashed horizontal reference line across the plot.
type refLine struct {
	y     float64
	label string
}

func (r *refLine) Plot(c draw.Canvas, p *plot.Plot) {
	_, trY := p.Transforms(&c)
	y := trY(r.y)
	c.StrokeLine2(draw.LineStyle{Color: ColorPeak, Width: 1, Dashes: []vg.Length{4, 3}}, c.Min.X, y, c.Max.X, y)
}

func (r *refLine) DataRange() (xmin, xmax, ymin, ymax float64) {
	return math.Inf(1), math.Inf(-1), r.y, r.y
}
