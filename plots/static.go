package plots

import (
	"errors"
	"fmt"
	"image/color"
	"math"

	"github.com/memscan/memscan/units"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// StaticBar is one stacked series: a label and one byte value per group.
type StaticBar struct {
	Label  string
	Values []float64
}

// staticPalette colours stacked components in a fixed order.
var staticPalette = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
	{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255}, {188, 189, 34, 255},
}

// StaticStackedBar draws groups of stacked byte bars (GiB axis) with an optional horizontal limit line.
func StaticStackedBar(path, title string, groups []string, series []StaticBar, limit float64, limitLabel string) error {
	if len(groups) == 0 || len(series) == 0 {
		return fmt.Errorf("chart %q: no data", title)
	}
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = "GiB"
	p.NominalX(groups...)
	w := vg.Points(math.Max(18, math.Min(60, 500/float64(len(groups)))))
	var below *plotter.BarChart
	top := 0.0
	totals := make([]float64, len(groups))
	for i, s := range series {
		if len(s.Values) != len(groups) {
			return fmt.Errorf("chart %q: series %q has %d values for %d groups", title, s.Label, len(s.Values), len(groups))
		}
		vals := make(plotter.Values, len(s.Values))
		for k, v := range s.Values {
			vals[k] = math.Max(0, v) / (1 << 30)
			totals[k] += vals[k]
		}
		bc, err := plotter.NewBarChart(vals, w)
		if err != nil {
			return fmt.Errorf("chart %q: %w", title, err)
		}
		bc.LineStyle.Width = 0
		bc.Color = staticPalette[i%len(staticPalette)]
		if below != nil {
			bc.StackOn(below)
		}
		below = bc
		p.Add(bc)
		p.Legend.Add(s.Label, bc)
	}
	for _, t := range totals {
		top = math.Max(top, t)
	}
	if limit > 0 {
		l := limit / (1 << 30)
		line, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: l}, {X: float64(len(groups)) - 0.5, Y: l}})
		if err != nil {
			return fmt.Errorf("chart %q: %w", title, err)
		}
		line.Color = color.RGBA{200, 0, 0, 255}
		line.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("%s (%s)", limitLabel, units.Bytes(int64(limit))), line)
		top = math.Max(top, l)
	}
	p.Y.Min, p.Y.Max = 0, top*(1.15+0.06*float64(len(series)+1)) // room for the legend above the bars
	p.Legend.Top = true
	p.Legend.Left = true
	width := vg.Points(math.Max(520, math.Min(1400, 140+90*float64(len(groups)))))
	return staticSave(p, width, vg.Points(460), path)
}

// StaticRooflinePoint is one operator on the roofline.
type StaticRooflinePoint struct {
	Label     string
	Intensity float64 // FLOP per byte
	TFLOPS    float64 // attainable
	Memory    bool    // drawn in the second colour (e.g. decode-phase operators)
}

// StaticRoofline draws the compute and bandwidth roofs (log-log) with the operators on them.
func StaticRoofline(path, title string, peakTFLOPS, bandwidthTBs float64, pts []StaticRooflinePoint) error {
	if peakTFLOPS <= 0 || bandwidthTBs <= 0 {
		return errors.New("roofline: peak and bandwidth must be > 0")
	}
	ridge := peakTFLOPS / bandwidthTBs
	xmin, xmax := math.Min(0.1, ridge/100), ridge*20
	for _, pt := range pts {
		if pt.Intensity > 0 {
			xmin = math.Min(xmin, pt.Intensity/2)
			xmax = math.Max(xmax, pt.Intensity*2)
		}
	}
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "arithmetic intensity (FLOP/byte)"
	p.Y.Label.Text = "attainable TFLOP/s"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	var roof plotter.XYs
	for _, x := range []float64{xmin, ridge, xmax} {
		roof = append(roof, plotter.XY{X: x, Y: math.Min(peakTFLOPS, x*bandwidthTBs)})
	}
	line, err := plotter.NewLine(roof)
	if err != nil {
		return fmt.Errorf("roofline: %w", err)
	}
	line.Width = vg.Points(2)
	p.Add(line)
	p.Legend.Add(fmt.Sprintf("roof (ridge %.0f FLOP/B)", ridge), line)
	for k, mem := range []bool{false, true} {
		var xy plotter.XYs
		var labels []string
		for _, pt := range pts {
			if pt.Memory != mem || pt.Intensity <= 0 || pt.TFLOPS <= 0 {
				continue
			}
			xy = append(xy, plotter.XY{X: pt.Intensity, Y: pt.TFLOPS})
			labels = append(labels, pt.Label)
		}
		if len(xy) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return fmt.Errorf("roofline: %w", err)
		}
		sc.GlyphStyle.Color = staticPalette[k+1]
		sc.GlyphStyle.Radius = vg.Points(3.5)
		sc.GlyphStyle.Shape = draw.CircleGlyph{}
		p.Add(sc)
		p.Legend.Add(map[bool]string{false: "operators", true: "decode operators"}[mem], sc)
		lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xy, Labels: labels})
		if err != nil {
			return fmt.Errorf("roofline: %w", err)
		}
		for i := range lb.TextStyle {
			lb.TextStyle[i].Font.Size = vg.Points(7)
			lb.TextStyle[i].XAlign = draw.XLeft
		}
		lb.Offset = vg.Point{X: vg.Points(4), Y: vg.Points(2)}
		p.Add(lb)
	}
	ymin := peakTFLOPS
	for _, pt := range pts {
		if pt.TFLOPS > 0 {
			ymin = math.Min(ymin, pt.TFLOPS)
		}
	}
	p.X.Min, p.X.Max = xmin, xmax
	p.Y.Min, p.Y.Max = math.Min(ymin/2, xmin*bandwidthTBs), peakTFLOPS*2
	p.Legend.Top = true
	p.Legend.Left = true
	return staticSave(p, vg.Points(820), vg.Points(520), path)
}

// staticSave draws p on a w×h canvas at the package resolution (what p.Save drew) and writes it with writePNG.
func staticSave(p *plot.Plot, w, h vg.Length, path string) error {
	img := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(color.White))
	p.Draw(draw.New(img))
	if _, err := writePNG(path, img.Image()); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
