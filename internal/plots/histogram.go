package plots

import (
	"errors"
	"image/color"
	"math"
	"strconv"

	"github.com/memscan/memscan/internal/units"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Histogram is one panel of pre-bucketed counts: Labels name the buckets ("1 MiB–2 MiB"), Counts how many
// blocks fell in each, Bytes (optional) their total size, drawn above each bar.
type Histogram struct {
	Title  string
	Labels []string
	Counts []float64
	Bytes  []float64
	Color  color.Color
}

// Histograms draws the panels stacked vertically as one PNG, so their size buckets line up when the callers use
// the same buckets.
func Histograms(path, title string, panels ...Histogram) error {
	if len(panels) == 0 {
		return errors.New("histogram " + title + ": no panels")
	}
	for _, p := range panels {
		if err := checkLengths("histogram "+p.Title, len(p.Labels), len(p.Counts), len(p.Bytes)); err != nil {
			return err
		}
	}
	w := vg.Length(defaultWidth)
	h := vg.Length(40 + 300*len(panels))
	return render(path, w, h, title, func(dc draw.Canvas) error {
		cs := tiles(dc, len(panels), 1)
		for i, p := range panels {
			drawHistogram(cs[i][0], p)
		}
		return nil
	})
}

func drawHistogram(c draw.Canvas, h Histogram) {
	p := newPlot(h.Title)
	p.Y.Label.Text = "blocks"
	p.X.Label.Text = "block size"
	col := h.Color
	if col == nil {
		col = ColorAllocated
	}
	bp := &barsPlotter{label: textStyle(8)}
	var maxC float64
	for i, n := range h.Counts {
		note := ""
		if n > 0 {
			note = strconv.FormatFloat(n, 'f', -1, 64)
			// With many buckets only the count fits above a bar.
			if h.Bytes != nil && len(h.Counts) <= 16 {
				note += " / " + units.Bytes(int64(h.Bytes[i]))
			}
		}
		bp.bars = append(bp.bars, bar{pos: float64(i), value: n, color: col, note: note})
		maxC = math.Max(maxC, n)
	}
	p.Add(bp)
	p.Y.Min = 0
	p.Y.Max = math.Max(maxC*1.18, 1)
	p.Y.Tick.Marker = countTicks{}
	if len(h.Labels) > 0 {
		p.NominalX(h.Labels...)
		p.X.Tick.Label.Font.Size = 8
		if len(h.Labels) > 12 {
			// Many buckets: slant the labels so neighbours do not overlap.
			p.X.Tick.Label.Rotation = math.Pi / 4
			p.X.Tick.Label.XAlign = draw.XRight
			p.X.Tick.Label.YAlign = draw.YTop
		}
	} else {
		p.HideX()
		p.X.Label.Text = "no blocks"
	}
	p.Draw(c)
}

// countTicks keeps count axes to whole numbers.
type countTicks struct{}

func (countTicks) Ticks(min, max float64) []plot.Tick {
	var out []plot.Tick
	for _, t := range (plot.DefaultTicks{}).Ticks(min, max) {
		if t.Value != math.Trunc(t.Value) {
			continue
		}
		if t.Label != "" {
			t.Label = strconv.FormatFloat(t.Value, 'f', 0, 64)
		}
		out = append(out, t)
	}
	return out
}
