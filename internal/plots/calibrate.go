package plots

import (
	"errors"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Colours of the calibration charts.
var (
	ColorPredicted = color.RGBA{0x4c, 0x72, 0xb0, 0xff}
	ColorMeasured  = color.RGBA{0x55, 0xa8, 0x68, 0xff}
	ColorCorrected = color.RGBA{0xdd, 0x84, 0x52, 0xff}
)

// CalibrationComponents draws predicted next to measured bytes per component (and per total metric).
func CalibrationComponents(path, title string, names []string, predicted, measured, corrected []float64) error {
	if err := checkLengths("calibration components", len(names), len(predicted), len(measured), len(corrected)); err != nil {
		return err
	}
	series := []Series{{Name: "predicted", Values: predicted, Color: ColorPredicted}}
	if len(corrected) > 0 {
		series = append(series, Series{Name: "corrected", Values: corrected, Color: ColorCorrected})
	}
	series = append(series, Series{Name: "measured", Values: measured, Color: ColorMeasured})
	return GroupedBars(path, GroupedBarChart{Title: title, Groups: names, Series: series})
}

// ScatterRun is one run's predicted (and optionally corrected) and measured value in bytes.
type ScatterRun struct {
	Label     string
	Predicted float64
	Corrected float64 // 0 = none
	Measured  float64
}

// CalibrationScatter draws predicted against measured on log–log axes with the y = x line and ±band (e.g. 0.10)
// lines, so points inside the band are predictions within that relative error.
func CalibrationScatter(path, title string, runs []ScatterRun, band float64) error {
	if len(runs) == 0 {
		return errors.New("calibration scatter " + title + ": no runs")
	}
	lo, hi := math.Inf(1), 0.0
	var raw, corr plotter.XYs
	for _, r := range runs {
		if r.Measured <= 0 || r.Predicted <= 0 {
			continue
		}
		raw = append(raw, plotter.XY{X: r.Measured, Y: r.Predicted})
		lo, hi = math.Min(lo, math.Min(r.Measured, r.Predicted)), math.Max(hi, math.Max(r.Measured, r.Predicted))
		if r.Corrected > 0 {
			corr = append(corr, plotter.XY{X: r.Measured, Y: r.Corrected})
			lo, hi = math.Min(lo, r.Corrected), math.Max(hi, r.Corrected)
		}
	}
	if len(raw) == 0 {
		return errors.New("calibration scatter " + title + ": no positive values")
	}
	unit := UnitFor(hi)
	lo, hi = lo/unit.Bytes/1.3, hi/unit.Bytes*1.3
	scale := func(xys plotter.XYs) plotter.XYs {
		out := make(plotter.XYs, len(xys))
		for i, p := range xys {
			out[i] = plotter.XY{X: p.X / unit.Bytes, Y: p.Y / unit.Bytes}
		}
		return out
	}
	return render(path, 760, 640, title, func(dc draw.Canvas) error {
		p := newPlot("")
		p.X.Label.Text = "measured (" + unit.Name + ")"
		p.Y.Label.Text = "predicted (" + unit.Name + ")"
		p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lo, hi, lo, hi
		// line draws y = k·x; a named one gets a legend entry.
		line := func(k float64, sty draw.LineStyle, name string) error {
			l, err := plotter.NewLine(plotter.XYs{{X: lo, Y: lo * k}, {X: hi, Y: hi * k}})
			if err != nil {
				return err
			}
			l.LineStyle = sty
			p.Add(l)
			if name != "" {
				p.Legend.Add(name, l)
			}
			return nil
		}
		if err := line(1, draw.LineStyle{Color: color.Black, Width: 1}, "y = x"); err != nil {
			return err
		}
		bandSty := draw.LineStyle{Color: color.Gray{Y: 0x88}, Width: 1, Dashes: []vg.Length{4, 3}}
		if band > 0 {
			if err := line(1+band, bandSty, "±"+trimFloat(band*100)+" %"); err != nil {
				return err
			}
			if err := line(1-band, bandSty, ""); err != nil {
				return err
			}
		}
		sc, err := plotter.NewScatter(scale(raw))
		if err != nil {
			return err
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: ColorPredicted, Radius: 4, Shape: draw.CircleGlyph{}}
		p.Add(sc)
		p.Legend.Add("raw prediction", sc)
		if len(corr) > 0 {
			cs, err := plotter.NewScatter(scale(corr))
			if err != nil {
				return err
			}
			cs.GlyphStyle = draw.GlyphStyle{Color: ColorCorrected, Radius: 4, Shape: draw.TriangleGlyph{}}
			p.Add(cs)
			p.Legend.Add("corrected", cs)
		}
		p.Legend.Top, p.Legend.Left = true, true
		p.Draw(dc)
		return nil
	})
}
