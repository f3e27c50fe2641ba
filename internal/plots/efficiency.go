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
	// PeakAllocated and PeakReserved are allocated and reserved memory at a trace's peak, 0 without a trace. With
	// them the gauge judges the peak (allocated / reserved there), and the unused memory at the dump is called
	// cached free: the trace shows the peak used the cache, so it was not wasted.
	PeakAllocated, PeakReserved float64
}

// Efficiency thresholds: the bands of the gauge at the dump (below 95 % is poor, 95–98 % good, above 98 %
// excellent) and at a trace's peak, where a cache sized for the peak is doing its job and 85 % is good.
var (
	dumpBands = gaugeBands{poor: 95, good: 98, low: "poor"}
	peakBands = gaugeBands{poor: 85, good: 95, low: "reserved well above the peak"}
)

// gaugeBands are where a gauge's verdict turns good and excellent, and what it says below.
type gaugeBands struct {
	poor, good float64
	low        string
}

// Efficiency draws reserved, allocated, requested and wasted memory as bars next to an efficiency gauge.
func Efficiency(path, title string, d EfficiencyData) error {
	return render(path, defaultWidth, 420, title, func(dc draw.Canvas) error {
		cs := tiles(dc, 1, 2)
		drawEfficiencyBars(cs[0][0], d)
		if d.PeakReserved > 0 {
			drawGauge(cs[0][1], "Efficiency at the peak (allocated / reserved)", d.PeakAllocated*100/d.PeakReserved, peakBands)
			return nil
		}
		drawGauge(cs[0][1], "Memory efficiency (requested / reserved)", d.EfficiencyPct, dumpBands)
		return nil
	})
}

func drawEfficiencyBars(c draw.Canvas, d EfficiencyData) {
	vals := []float64{d.Reserved, d.Allocated, d.Requested, d.Wasted}
	names := []string{"reserved", "allocated", "requested", "wasted"}
	cols := []color.Color{ColorReserved, ColorAllocated, ColorRequested, ColorWaste}
	title := "Reserved vs used"
	if d.PeakReserved > 0 {
		names[3], title = "cached free", "At the dump"
		cols[3] = ColorFree // the peak used this cache: not waste
	}
	unit := UnitFor(math.Max(d.Reserved, math.Max(d.Allocated, d.Wasted)))
	p := newPlot(title)
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
func drawGauge(c draw.Canvas, heading string, pct float64, bands gaugeBands) {
	head := textStyle(13)
	head.XAlign = draw.XCenter
	head.YAlign = draw.YTop
	cw := c.Max.X - c.Min.X
	ch := c.Max.Y - c.Min.Y
	c.FillText(head, vg.Point{X: c.Min.X + cw/2, Y: c.Max.Y - 4}, heading)

	big := textStyle(40)
	big.Font = font.From(boldFont, 40)
	big.XAlign = draw.XCenter
	verdict, col := bands.low, color.Color(ColorWaste)
	switch {
	case pct >= bands.good:
		verdict, col = "excellent", ColorAllocated
	case pct >= bands.poor:
		verdict, col = "good", color.RGBA{0xe0, 0xa1, 0x1b, 0xff}
	}
	big.Color = col
	c.FillText(big, vg.Point{X: c.Min.X + cw/2, Y: c.Min.Y + ch*0.68}, fmt.Sprintf("%.1f %%", pct))
	sub := textStyle(12)
	sub.XAlign = draw.XCenter
	c.FillText(sub, vg.Point{X: c.Min.X + cw/2, Y: c.Min.Y + ch*0.53}, verdict)

	// The track covers 80–100 %, where the verdicts differ, or the whole range when the value is below it.
	lo, hi := 80.0, 100.0
	ticks := []float64{80, 85, 90, 95, 98, hi}
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
	track := []struct {
		from, to float64
		c        color.Color
	}{
		{lo, bands.poor, color.RGBA{0xf4, 0xc7, 0xc3, 0xff}},
		{bands.poor, bands.good, color.RGBA{0xfc, 0xe8, 0xb2, 0xff}},
		{bands.good, hi, color.RGBA{0xb7, 0xe1, 0xcd, 0xff}},
	}
	for _, b := range track {
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
