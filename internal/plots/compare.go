package plots

import (
	"cmp"
	"errors"
	"image/color"
	"math"

	"github.com/memscan/memscan/internal/units"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Colours of a comparison: the baseline in grey, growth in red, shrinkage in green.
var (
	ColorBefore = color.RGBA{0xb0, 0xb0, 0xb0, 0xff}
	ColorGrew   = color.RGBA{0xc4, 0x4e, 0x52, 0xff}
	ColorShrank = color.RGBA{0x55, 0xa8, 0x68, 0xff}
)

// CompareChart sets the bytes of each row before and after side by side, e.g. categories or creation sites of
// two runs. Rows are drawn top-down in the given order (callers sort by the size of the change).
type CompareChart struct {
	Title      string
	Labels     []string
	Before     []float64 // bytes
	After      []float64 // bytes
	BeforeName string    // legend, e.g. "baseline"
	AfterName  string
	LabelWidth vg.Length // 0: a third of the width
}

// CompareBars draws c to path as PNG: per row a grey baseline bar above a bar coloured by the direction of the
// change, annotated with the signed difference.
func CompareBars(path string, c CompareChart) error {
	if err := checkLengths("compare chart "+c.Title, len(c.Labels), len(c.Before), len(c.After)); err != nil {
		return err
	}
	if len(c.Labels) == 0 {
		return errors.New("compare chart " + c.Title + ": no rows")
	}
	if len(c.Before) != len(c.Labels) || len(c.After) != len(c.Labels) {
		return errors.New("compare chart " + c.Title + ": before and after need one value per label")
	}
	var maxV float64
	for i := range c.Labels {
		maxV = math.Max(maxV, math.Max(c.Before[i], c.After[i]))
	}
	unit := UnitFor(maxV)
	w := vg.Length(defaultWidth)
	n := len(c.Labels)
	h := vg.Length(max(320, 110+30*n))
	return render(path, w, h, c.Title, func(dc draw.Canvas) error {
		legendH := vg.Length(22)
		area := draw.Crop(dc, 8, -8, legendH+4, -6)
		p := newPlot("")
		p.X.Label.Text = "live memory (" + unit.Name + ")"
		p.X.Tick.Marker = byteTicks{}
		p.X.Min = 0
		names := make([]string, n)
		labelWidth := cmp.Or(c.LabelWidth, w/3)
		for i, l := range c.Labels {
			names[n-1-i] = fitText(p.Y.Tick.Label, l, labelWidth)
		}
		p.Add(&barsPlotter{unit: unit, horizontal: true, width: 0.36, label: textStyle(8), bars: compareBarPairs(c, unit)})
		p.NominalY(names...)
		p.Y.Padding = 0
		p.X.Max = math.Max(p.X.Max*1.35, 1e-9) // room for the notes at the bar ends
		p.Draw(area)
		legend := draw.Crop(dc, 0, 0, 0, -(dc.Max.Y - dc.Min.Y - legendH))
		sty := textStyle(10)
		x := legend.Min.X + 12
		y := (legend.Min.Y + legend.Max.Y) / 2
		for _, it := range []struct {
			label string
			c     color.Color
		}{{cmp.Or(c.BeforeName, "before"), ColorBefore}, {cmp.Or(c.AfterName, "after") + " (grew)", ColorGrew}, {cmp.Or(c.AfterName, "after") + " (shrank)", ColorShrank}} {
			legend.FillPolygon(it.c, []vg.Point{{X: x, Y: y - 5}, {X: x + 12, Y: y - 5}, {X: x + 12, Y: y + 5}, {X: x, Y: y + 5}})
			label := fitText(sty, it.label, 240)
			legend.FillText(sty, vg.Point{X: x + 16, Y: y}, label)
			x += 16 + sty.Width(label) + 20
		}
		return nil
	})
}

// compareBarPairs lays out c's rows top-down: per row the baseline bar just above the row's centre and the after
// bar just below it, coloured by the direction of the change and noted with the signed difference.
func compareBarPairs(c CompareChart, unit Unit) []bar {
	n := len(c.Labels)
	bars := make([]bar, 0, 2*n)
	for i := range c.Labels {
		pos := float64(n - 1 - i)
		b, a := c.Before[i], c.After[i]
		// Only a real change is coloured: an unchanged row keeps the baseline's grey and says so.
		col, change := color.Color(ColorGrew), "+"+units.Bytes(int64(a-b))
		switch {
		case a < b:
			col, change = ColorShrank, "−"+units.Bytes(int64(b-a))
		case a == b:
			col, change = ColorBefore, "unchanged"
		}
		bars = append(bars,
			bar{pos: pos + 0.19, value: b / unit.Bytes, color: ColorBefore, note: units.Bytes(int64(b))},
			bar{pos: pos - 0.19, value: a / unit.Bytes, color: col, note: units.Bytes(int64(a)) + "  (" + change + ")"})
	}
	return bars
}
