package plots

import (
	"image/color"
	"math"

	"gonum.org/v1/plot/vg"
)

// pixel is the width of one pixel column in points at the charts' resolution.
const pixel = vg.Length(72.0 / dpi)

// bandRect is a band's fill on the canvas, between two x positions in points.
type bandRect struct {
	X0, X1 vg.Length
	Color  color.Color
}

// bandsAtResolution maps bands to the rectangles that fill them on a canvas whose plot spans lo..hi points, with
// trX mapping data x to points. A band at least a pixel column wide is drawn as it is. Bands narrower than that
// (a long training run has tens of thousands of iterations, three phases each, on a thousand columns) are
// gathered per pixel column: all the narrow bands of one colour in a column become one rectangle over the
// column whose opacity is what the anti-aliased rasteriser gives their sum, 1 − Π(1 − αᵢ·coverageᵢ) over the
// bands that change a pixel at all, and equal neighbouring columns are joined. So the picture is the one the rasteriser would have drawn, and the rectangles
// number at most the columns times the colours plus the wide bands, which are at most one per column.
func bandsAtResolution(bands []Band, trX func(float64) vg.Length, lo, hi vg.Length) []bandRect {
	if hi <= lo {
		return nil
	}
	// Columns are the image's own pixel columns (the canvas is in points from the image's left edge).
	first := int(math.Floor(float64(lo / pixel)))
	cols := int(math.Ceil(float64(hi/pixel))) - first
	var out []bandRect
	var colors []color.NRGBA
	var clear [][]float64 // per colour and column: the part of the light that the narrow bands let through
	for _, b := range bands {
		x0, x1 := max(trX(b.X0), lo), min(trX(b.X1), hi)
		if x1 <= x0 {
			continue
		}
		if x1-x0 >= pixel {
			out = append(out, bandRect{X0: x0, X1: x1, Color: b.Color})
			continue
		}
		nc := color.NRGBAModel.Convert(b.Color).(color.NRGBA)
		k := 0
		for k < len(colors) && colors[k] != nc {
			k++
		}
		if k == len(colors) {
			colors = append(colors, nc)
			row := make([]float64, cols)
			for i := range row {
				row[i] = 1
			}
			clear = append(clear, row)
		}
		alpha := float64(nc.A) / 0xff
		// A narrow band touches at most two columns.
		for c := int(math.Floor(float64(x0/pixel))) - first; c < cols; c++ {
			cl, cr := vg.Length(c+first)*pixel, vg.Length(c+first+1)*pixel
			if cl >= x1 {
				break
			}
			// A share below one level of an 8-bit channel is what the rasteriser, which composites each band
			// on its own and truncates, never showed: it stays out, so that a run of tens of thousands of
			// iterations keeps the plain background it always had rather than an even tint of all phases.
			if a := alpha * float64((min(x1, cr)-max(x0, cl))/pixel); a*0xff >= 1 {
				clear[k][c] *= 1 - a
			}
		}
	}
	for k, nc := range colors {
		row := clear[k]
		for c := 0; c < cols; {
			a := uint8(math.Round((1 - row[c]) * 0xff))
			end := c + 1
			for end < cols && uint8(math.Round((1-row[end])*0xff)) == a {
				end++
			}
			if a > 0 {
				x0, x1 := max(vg.Length(c+first)*pixel, lo), min(vg.Length(end+first)*pixel, hi)
				out = append(out, bandRect{X0: x0, X1: x1, Color: color.NRGBA{R: nc.R, G: nc.G, B: nc.B, A: a}})
			}
			c = end
		}
	}
	return out
}
