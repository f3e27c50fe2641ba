package plots

import (
	"errors"
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// LogLine is one measure of one rank over iterations, from a training log. Values below zero are gaps (the line
// did not carry the measure).
type LogLine struct {
	Name   string
	X      []float64
	Values []float64 // bytes
	// Dashed draws the line dashed (e.g. peaks next to current values).
	Dashed bool
	Color  color.Color
}

// LogMemory draws memory measures from a training log over iterations (or record index, per xLabel).
func LogMemory(path, title, xLabel string, lines []LogLine) error {
	if len(lines) == 0 {
		return errors.New("log memory " + title + ": no lines")
	}
	var maxV float64
	points := 0
	for _, l := range lines {
		if len(l.X) != len(l.Values) {
			return fmt.Errorf("log memory %s: line %q has %d x for %d values", title, l.Name, len(l.X), len(l.Values))
		}
		for _, v := range l.Values {
			if v >= 0 {
				maxV = math.Max(maxV, v)
				points++
			}
		}
	}
	if points == 0 {
		return errors.New("log memory " + title + ": no values")
	}
	unit := UnitFor(maxV)
	return render(path, 1050, 520, title, func(dc draw.Canvas) error {
		plotArea, legendArea := splitLegend(dc, 210)
		p := memoryPlot(unit)
		p.X.Label.Text = xLabel
		p.X.Tick.Marker = integerTicks{} // iterations and record indexes are whole numbers
		p.Add(plotter.NewGrid())
		var legend []legendItem
		for _, l := range lines {
			var pts plotter.XYs
			for i, v := range l.Values {
				if v >= 0 {
					pts = append(pts, plotter.XY{X: l.X[i], Y: v / unit.Bytes})
				}
			}
			if len(pts) == 0 {
				continue
			}
			ln, sc, err := plotter.NewLinePoints(pts)
			if err != nil {
				return fmt.Errorf("log memory %s: %w", title, err)
			}
			ln.LineStyle = draw.LineStyle{Color: l.Color, Width: 1.5}
			if l.Dashed {
				ln.LineStyle.Dashes = []vg.Length{5, 3}
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: l.Color, Radius: 2, Shape: draw.CircleGlyph{}}
			p.Add(ln, sc)
			sty := ln.LineStyle
			legend = append(legend, legendItem{label: l.Name, line: &sty})
		}
		p.Y.Min = 0
		p.Y.Max = math.Max(maxV/unit.Bytes*1.08, 1e-9)
		p.Draw(plotArea)
		drawLegendColumn(legendArea, legend)
		return nil
	})
}
