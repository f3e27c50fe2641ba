package plots

import (
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"
)

// stackedAreas returns the filled areas of stacked series as polygons to add in the returned order: each layer
// is drawn from zero up to its cumulative top, largest first, so that the next one paints over its lower part.
// The result looks the same as filling each band between its base and top, but it is much cheaper to
// rasterise: the rasteriser keeps each pixel row's cells in a list sorted by x and searches it from the left
// for every new cell, so a band whose spiky base and top both run left to right costs time proportional to
// the plot width for every cell (seconds for a few thousand points). A top traced right to left only ever
// prepends, and the base along zero is a single row.
func stackedAreas(x []float64, stacked []Series, scale float64) ([]*plotter.Polygon, error) {
	n := len(x)
	tops := make([][]float64, len(stacked))
	base := make([]float64, n)
	for k, s := range stacked {
		top := make([]float64, n)
		for i := range n {
			top[i] = base[i] + s.Values[i]
		}
		tops[k], base = top, top
	}
	out := make([]*plotter.Polygon, 0, len(stacked))
	for k := len(stacked) - 1; k >= 0; k-- {
		pts := make(plotter.XYs, 0, n+2)
		for i := n - 1; i >= 0; i-- {
			pts = append(pts, plotter.XY{X: x[i], Y: tops[k][i] / scale})
		}
		pts = append(pts, plotter.XY{X: x[0], Y: 0}, plotter.XY{X: x[n-1], Y: 0})
		poly, err := plotter.NewPolygon(pts)
		if err != nil {
			return nil, err
		}
		poly.Color = stacked[k].Color
		poly.LineStyle.Width = 0
		out = append(out, poly)
	}
	return out, nil
}

// lineChunk is how many points one stroke of a long line covers (at least 3, so that pieces advance).
const lineChunk = 32

// chunkedLine returns a series as consecutive strokes of about lineChunk points. A stroke outlines the line
// forward and then backward, so one stroke over thousands of spiky points fills every pixel row with cells
// across the whole width and each new cell searches them all (the same quadratic cost as above); short strokes
// keep each row's list short. Consecutive pieces share a whole segment, so every inner vertex of the series is
// an inner vertex of some piece and gets its round join, and the pieces meet like one line.
func chunkedLine(x, values []float64, scale float64, style draw.LineStyle) ([]plot.Plotter, error) {
	n := len(x)
	var out []plot.Plotter
	for lo := 0; ; lo += lineChunk - 2 {
		hi := min(n, lo+lineChunk)
		pts := make(plotter.XYs, hi-lo)
		for i := lo; i < hi; i++ {
			pts[i-lo] = plotter.XY{X: x[i], Y: values[i] / scale}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.LineStyle = style
		out = append(out, l)
		if hi == n {
			return out, nil
		}
	}
}
