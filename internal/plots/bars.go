package plots

import (
	"cmp"
	"errors"
	"image/color"
	"math"

	"github.com/memscan/memscan/internal/units"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// LegendEntry is one coloured box in a legend.
type LegendEntry struct {
	Label string
	Color color.Color
}

// BarChart is a horizontal bar chart of byte values, largest first from the top, each bar labelled with its
// size. Horizontal bars leave room for long labels such as allocation sites.
type BarChart struct {
	Title  string // the figure title, e.g. naming the file and device
	XLabel string // the value axis label; the unit is appended
	Labels []string
	Values []float64 // bytes
	// Colors are per bar; nil draws every bar in ColorAllocated.
	Colors []color.Color
	Legend []LegendEntry
	// Notes are per bar, drawn after the size (e.g. a share "12.5 %"); may be nil.
	Notes []string
	// LabelWidth bounds the label column in points (0: a third of the width).
	LabelWidth vg.Length
	Width      vg.Length // 0: default
	Height     vg.Length // 0: grows with the number of bars
}

// Bars draws c to path as PNG.
func Bars(path string, c BarChart) error {
	if err := checkLengths("bar chart "+c.Title, len(c.Labels), len(c.Values), len(c.Colors), len(c.Notes)); err != nil {
		return err
	}
	if len(c.Values) == 0 {
		return errors.New("bar chart " + c.Title + ": no bars")
	}
	w := cmp.Or(c.Width, defaultWidth)
	h := c.Height
	if h == 0 {
		// 18 points a bar, but a chart of few bars is not stretched into slabs: up to 40 points a bar under 300.
		n := len(c.Values)
		h = vg.Length(max(90+18*n, min(300, 130+40*n)))
	}
	return render(path, w, h, c.Title, func(dc draw.Canvas) error {
		drawBars(draw.Crop(dc, 8, -8, 4, -6), c, w)
		return nil
	})
}

func drawBars(dc draw.Canvas, c BarChart, w vg.Length) {
	// The legend gets its own column on the right: inside the plot it covered the notes of long bars.
	if len(c.Legend) > 0 {
		sty := textStyle(10)
		var legendW vg.Length
		items := make([]legendItem, len(c.Legend))
		for i, e := range c.Legend {
			legendW = max(legendW, sty.Width(e.Label)+40) // box, gap, label, margin
			items[i] = legendItem{label: e.Label, box: e.Color}
		}
		legendW = min(legendW, w/4)
		drawLegendColumn(draw.Crop(dc, dc.Max.X-dc.Min.X-legendW, 0, 0, 0), items)
		dc = draw.Crop(dc, 0, -legendW, 0, 0)
	}
	var maxV float64
	for _, v := range c.Values {
		maxV = math.Max(maxV, v)
	}
	unit := UnitFor(maxV)
	p := newPlot("")
	p.X.Label.Text = c.XLabel + " (" + unit.Name + ")"
	if c.XLabel == "" {
		p.X.Label.Text = unit.Name
	}
	p.X.Tick.Marker = byteTicks{}
	p.X.Min = 0
	n := len(c.Values)
	labelWidth := cmp.Or(c.LabelWidth, w/3)
	names := make([]string, n)
	sty := p.Y.Tick.Label
	for i, l := range c.Labels {
		names[n-1-i] = fitText(sty, l, labelWidth)
	}
	bp := &barsPlotter{unit: unit, horizontal: true, label: textStyle(9)}
	for i, v := range c.Values {
		col := color.Color(ColorAllocated)
		if c.Colors != nil {
			col = c.Colors[i]
		}
		note := units.Bytes(int64(v))
		if c.Notes != nil && c.Notes[i] != "" {
			note += "  " + c.Notes[i]
		}
		bp.bars = append(bp.bars, bar{pos: float64(n - 1 - i), value: v / unit.Bytes, color: col, note: note})
	}
	p.Add(bp)
	p.NominalY(names...)
	p.Y.Padding = 0
	// Leave room right of the longest bar for its note: if the notes need noteW of a data area about areaW wide,
	// the bars may use only (areaW − noteW) of it.
	var noteW vg.Length
	for _, br := range bp.bars {
		noteW = max(noteW, bp.label.Width(br.note)+12)
	}
	areaW := dc.Max.X - dc.Min.X - labelWidth - 30
	share := 0.8
	if areaW > 0 {
		share = math.Max(0.35, 1-float64(noteW/areaW))
	}
	p.X.Max = math.Max(p.X.Max/share, 1e-9)
	p.Draw(dc)
}

// bar is one bar at position pos on the category axis, value in axis units.
type bar struct {
	pos   float64
	value float64
	base  float64 // start value, for stacked bars
	color color.Color
	note  string
}

// barsPlotter draws bars with individual colours (gonum's BarChart has one colour per series).
type barsPlotter struct {
	bars       []bar
	unit       Unit
	horizontal bool
	width      float64 // thickness in category units; 0 means 0.75
	label      text.Style
}

func (b *barsPlotter) thickness() float64 {
	if b.width == 0 {
		return 0.75
	}
	return b.width
}

func (b *barsPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	half := b.thickness() / 2
	for _, br := range b.bars {
		var pts []vg.Point
		var end vg.Point
		if b.horizontal {
			x0, x1 := trX(br.base), trX(br.base+br.value)
			y0, y1 := trY(br.pos-half), trY(br.pos+half)
			pts = []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
			end = vg.Point{X: x1 + 4, Y: (y0 + y1) / 2}
		} else {
			x0, x1 := trX(br.pos-half), trX(br.pos+half)
			y0, y1 := trY(br.base), trY(br.base+br.value)
			pts = []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}}
			end = vg.Point{X: (x0 + x1) / 2, Y: y1 + 3}
		}
		c.FillPolygon(br.color, c.ClipPolygonXY(pts))
		if br.note == "" {
			continue
		}
		sty := b.label
		if !b.horizontal {
			sty.XAlign = draw.XCenter
			sty.YAlign = draw.YBottom
		}
		c.FillText(sty, end, br.note)
	}
}

func (b *barsPlotter) DataRange() (xmin, xmax, ymin, ymax float64) {
	lo, hi := 0.0, 0.0
	pmin, pmax := math.Inf(1), math.Inf(-1)
	for _, br := range b.bars {
		lo = math.Min(lo, br.base)
		hi = math.Max(hi, br.base+br.value)
		pmin = math.Min(pmin, br.pos)
		pmax = math.Max(pmax, br.pos)
	}
	if len(b.bars) == 0 {
		pmin, pmax = 0, 0
	}
	half := b.thickness()/2 + 0.1
	if b.horizontal {
		return lo, hi, pmin - half, pmax + half
	}
	return pmin - half, pmax + half, lo, hi
}
