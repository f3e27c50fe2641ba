package plots

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"sort"

	"github.com/memscan/memscan/internal/units"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Slice is one wedge of a pie.
type Slice struct {
	Label string
	Value float64 // bytes
	Color color.Color
}

// PiePanel is one pie with its own title and legend.
type PiePanel struct {
	Title  string
	Slices []Slice
}

// maxPieSlices keeps a pie readable; smaller slices are merged into "other".
const maxPieSlices = 10

// Pies draws the panels side by side as one PNG. Each pie has a legend with sizes and shares; wedges of at
// least 4 % carry their share.
func Pies(path, title string, panels ...PiePanel) error {
	if len(panels) == 0 {
		return errors.New("pie chart " + title + ": no panels")
	}
	w := vg.Length(560 * len(panels))
	h := vg.Length(420)
	return render(path, w, h, title, func(dc draw.Canvas) error {
		cs := tiles(dc, 1, len(panels))
		for i, p := range panels {
			drawPie(cs[0][i], p)
		}
		return nil
	})
}

func drawPie(c draw.Canvas, p PiePanel) {
	head := textStyle(13)
	head.XAlign = draw.XCenter
	head.YAlign = draw.YTop
	head.Font = font.From(boldFont, 13)
	cw := c.Max.X - c.Min.X
	c.FillText(head, vg.Point{X: c.Min.X + cw/2, Y: c.Max.Y}, fitText(head, p.Title, cw))
	body := draw.Crop(c, 0, 0, 0, -24)

	slices := mergeSmall(p.Slices)
	var total float64
	for _, s := range slices {
		total += s.Value
	}
	bw := body.Max.X - body.Min.X
	bh := body.Max.Y - body.Min.Y
	pieW := bw * 0.5
	r := vg.Length(math.Min(float64(pieW), float64(bh))/2) - 8
	center := vg.Point{X: body.Min.X + pieW/2, Y: body.Min.Y + bh/2}
	if total <= 0 || r <= 0 {
		sty := textStyle(11)
		sty.XAlign = draw.XCenter
		c.FillText(sty, center, "no memory in this view")
		return
	}
	start := math.Pi / 2 // twelve o'clock, then clockwise like most pie charts
	label := textStyle(10)
	label.XAlign = draw.XCenter
	label.Color = color.White
	for _, s := range slices {
		if s.Value <= 0 {
			continue
		}
		angle := -2 * math.Pi * s.Value / total
		var path vg.Path
		path.Move(center)
		path.Line(vg.Point{X: center.X + r*vg.Length(math.Cos(start)), Y: center.Y + r*vg.Length(math.Sin(start))})
		path.Arc(center, r, start, angle)
		path.Close()
		c.SetColor(s.Color)
		c.Fill(path)
		c.SetColor(color.White)
		c.SetLineWidth(1)
		c.Stroke(path)
		if share := s.Value / total; share >= 0.04 {
			mid := start + angle/2
			at := vg.Point{X: center.X + r*0.65*vg.Length(math.Cos(mid)), Y: center.Y + r*0.65*vg.Length(math.Sin(mid))}
			c.FillText(label, at, fmt.Sprintf("%.0f%%", share*100))
		}
		start += angle
	}

	// Legend to the right of the pie: colour box, label, size and share.
	leg := textStyle(10)
	lineH := vg.Length(17)
	x := body.Min.X + pieW + 6
	y := center.Y + lineH*vg.Length(len(slices))/2
	width := bw - pieW - 24
	for _, s := range slices {
		box := []vg.Point{{X: x, Y: y - 5}, {X: x + 10, Y: y - 5}, {X: x + 10, Y: y + 5}, {X: x, Y: y + 5}}
		c.FillPolygon(s.Color, box)
		txt := fmt.Sprintf("%s  %s (%s)", s.Label, units.Bytes(int64(s.Value)), units.Percent(int64(s.Value), int64(total)))
		c.FillText(leg, vg.Point{X: x + 15, Y: y}, fitText(leg, txt, width))
		y -= lineH
	}
}

// mergeSmall keeps the largest slices and folds the rest into one grey "other" slice.
func mergeSmall(in []Slice) []Slice {
	if len(in) <= maxPieSlices {
		return in
	}
	sorted := append([]Slice(nil), in...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Value > sorted[j].Value })
	out := sorted[: maxPieSlices-1 : maxPieSlices-1]
	other := Slice{Label: fmt.Sprintf("other (%d)", len(in)-(maxPieSlices-1)), Color: ColorOther}
	for _, s := range sorted[maxPieSlices-1:] {
		other.Value += s.Value
	}
	return append(out, other)
}
