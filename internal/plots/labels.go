package plots

import (
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// spreadLabels writes a label beside each point without letting two labels overlap: each goes to the first free
// slot above or below its point (a thin leader line joins a moved label to its point); labels that find no slot
// within a few lines are left out rather than drawn over another.
type spreadLabels struct {
	xy     plotter.XYs
	labels []string
}

func (s *spreadLabels) DataRange() (xmin, xmax, ymin, ymax float64) {
	return math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
}

func (s *spreadLabels) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	sty := textStyle(7)
	sty.Font = font.From(sansFont, 7)
	sty.YAlign = draw.YCenter
	h := sty.Height("Xg") + 1
	order := make([]int, len(s.labels))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return s.xy[order[a]].X < s.xy[order[b]].X })
	type box struct{ x0, x1, y0, y1 vg.Length }
	var placed []box
	free := func(b box) bool {
		for _, o := range placed {
			if b.x0 < o.x1 && o.x0 < b.x1 && b.y0 < o.y1 && o.y0 < b.y1 {
				return false
			}
		}
		return b.x1 <= c.Max.X && b.y0 >= c.Min.Y && b.y1 <= c.Max.Y
	}
	leader := draw.LineStyle{Color: color.Gray{0x99}, Width: 0.4}
	for _, i := range order {
		x, y := trX(s.xy[i].X)+5, trY(s.xy[i].Y)
		w := sty.Width(s.labels[i])
		for _, dy := range []vg.Length{0, 1, -1, 2, -2, 3, -3, 4, -4, 5, -5} {
			b := box{x, x + w, y + dy*h - h/2, y + dy*h + h/2}
			if !free(b) {
				continue
			}
			placed = append(placed, b)
			if dy != 0 {
				c.StrokeLine2(leader, x-4, y, x, y+dy*h)
			}
			c.FillText(sty, vg.Point{X: x, Y: y + dy*h}, s.labels[i])
			break
		}
	}
}
