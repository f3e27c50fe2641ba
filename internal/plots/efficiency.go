package plots

import (
	"fmt"
	"image/color"
	"math"

	"github.com/memscan/memscan/internal/units"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// EfficiencyData are the allocator totals behind the efficiency chart, in bytes.
type EfficiencyData struct {
	Reserved  float64
	Allocated float64
	Requested float64
	// Wasted is reserved memory that no tensor asked for: rounding inside blocks plus cached free blocks.
	Wasted        float64
	EfficiencyPct float64 // requested / reserved × 100
}

// Efficiency thresholds: the bands of the gauge (below 95 % is poor, 95–98 % good, above 98 % excellent).
const (
	efficiencyPoor = 95.0
	efficiencyGood = 98.0
)

// Efficiency draws reserved, allocated, requested and wasted memory as bars next to an efficiency gauge.
func Efficiency(path, title string, d EfficiencyData) error {
	return render(path, defaultWidth, 420, title, func(dc draw.Canvas) error {
		cs := tiles(dc, 1, 2)
		drawEfficiencyBars(cs[0][0], d)
		drawGauge(cs[0][1], d.EfficiencyPct)
		return nil
	})
}

func drawEfficiencyBars(c draw.Canvas, d EfficiencyData) {
	vals := []float64{d.Reserved, d.Allocated, d.Requested, d.Wasted}
	names := []string{"reserved", "allocated", "requested", "wasted"}
	cols := []color.Color{ColorReserved, ColorAllocated, ColorRequested, ColorWaste}
	unit := UnitFor(math.Max(d.Reserved, math.Max(d.Allocated, d.Wasted)))
	p := newPlot("Reserved vs used")
	p.Y.Label.Text = unit.Name
	p.Y.Tick.Marker = byteTicks{}
	bp := &barsPlotter{label: textStyle(10)}
	var maxV float64
	for i, v := range vals {
		bp.bars = append(bp.bars, bar{pos: float64(i), value: v / unit.Bytes, color: cols[i], note: units.Bytes(int64(v))})
		maxV = math.Max(maxV, v/unit.Bytes)
	}
	p.Add(bp)
	p.NominalX(names...)
	p.Y.Min = 0
	p.Y.Max = math.Max(maxV*1.15, 1e-9)
	p.Draw(c)
}

// drawGauge draws a horizontal 0–100 % track with the poor/good/excellent bands and a needle at pct.
func drawGauge(c draw.Canvas, pct float64) {
	head := textStyle(13)
	head.XAlign = draw.XCenter
	head.YAlign = draw.YTop
	cw := c.Max.X - c.Min.X
	ch := c.Max.Y - c.Min.Y
	c.FillText(head, vg.Point{X: c.Min.X + cw/2, Y: c.Max.Y - 4}, "Memory efficiency (requested / reserved)")

	big := textStyle(40)
	big.Font = font.From(boldFont, 40)
	big.XAlign = draw.XCenter
	verdict, col := "poor", color.Color(ColorWaste)
	switch {
	case pct >= efficiencyGood:
		verdict, col = "excellent", ColorAllocated
	case pct >= efficiencyPoor:
		verdict, col = "good", color.RGBA{0xe0, 0xa1, 0x1b, 0xff}
	}
	big.Color = col
	c.FillText(big, vg.Point{X: c.Min.X + cw/2, Y: c.Min.Y + ch*0.68}, fmt.Sprintf("%.1f %%", pct))
	sub := textStyle(12)
	sub.XAlign = draw.XCenter
	c.FillText(sub, vg.Point{X: c.Min.X + cw/2, Y: c.Min.Y + ch*0.53}, verdict)

	// The track covers 80–100 %, where the verdicts differ, or the whole range when the value is below it.
	lo, hi := 80.0, 100.0
	ticks := []float64{80, 85, 90, efficiencyPoor, efficiencyGood, hi}
	if pct < lo {
		lo = 0
		ticks = []float64{0, 25, 50, 75, hi}
	}
	x0, x1 := c.Min.X+20, c.Max.X-20
	y0, y1 := c.Min.Y+ch*0.28, c.Min.Y+ch*0.38
	xAt := func(v float64) vg.Length {
		v = math.Max(lo, math.Min(hi, v))
		return x0 + (x1-x0)*vg.Length((v-lo)/(hi-lo))
	}
	bands := []struct {
		from, to float64
		c        color.Color
	}{
		{lo, efficiencyPoor, color.RGBA{0xf4, 0xc7, 0xc3, 0xff}},
		{efficiencyPoor, efficiencyGood, color.RGBA{0xfc, 0xe8, 0xb2, 0xff}},
		{efficiencyGood, hi, color.RGBA{0xb7, 0xe1, 0xcd, 0xff}},
	}
	for _, b := range bands {
		a, z := xAt(b.from), xAt(b.to)
		c.FillPolygon(b.c, []vg.Point{{X: a, Y: y0}, {X: z, Y: y0}, {X: z, Y: y1}, {X: a, Y: y1}})
	}
	needle := draw.LineStyle{Color: color.Black, Width: 3}
	nx := xAt(pct)
	c.StrokeLine2(needle, nx, y0-6, nx, y1+6)
	tick := textStyle(9)
	tick.XAlign = draw.XCenter
	tick.YAlign = draw.YTop
	for _, v := range ticks {
		c.FillText(tick, vg.Point{X: xAt(v), Y: y0 - 8}, fmt.Sprintf("%.0f%%", v))
	}
}
