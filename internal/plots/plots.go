// Package plots draws every PNG chart of memscan with gonum.org/v1/plot. Every function takes plain data
// (labels, byte counts, colours) and a file path; the mapping from reports to chart data lives in results.
//
// It imports only gonum.org/v1/plot, the standard library, units and atomicfile; it is the only package that imports
// gonum.org/v1/plot, and only results (and the CLI) import it.
package plots

import (
	"fmt"
	"hash/fnv"
	"image"
	"image/color"
	"io"
	"math"
	"strings"

	"git.sr.ht/~sbinet/gg"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/memscan/memscan/internal/atomicfile"
)

// dpi is the resolution of every PNG; sizes below are in points (1/72 inch), so 900 points are 1200 pixels.
const dpi = 96

// Default chart sizes in points.
const (
	defaultWidth  = 900
	defaultHeight = 520
)

// Unit is a byte unit for axis values.
type Unit struct {
	Name  string  // "MiB"
	Bytes float64 // bytes per unit
}

// UnitFor picks KiB, MiB or GiB so that maxBytes reads as a number between about 1 and 1024.
func UnitFor(maxBytes float64) Unit {
	switch {
	case maxBytes >= 1<<30:
		return Unit{"GiB", 1 << 30}
	case maxBytes >= 1<<20:
		return Unit{"MiB", 1 << 20}
	case maxBytes >= 1<<10:
		return Unit{"KiB", 1 << 10}
	}
	return Unit{"B", 1}
}

// Well-known categories get fixed colours so that the same category looks the same in every chart and every run;
// the keys are matched against lower-cased category names.
var categoryColors = []struct {
	key string
	c   color.RGBA
}{
	{"unknown", color.RGBA{0x9e, 0x9e, 0x9e, 0xff}},
	{"expert", color.RGBA{0xd6, 0x27, 0x28, 0xff}},
	{"moe", color.RGBA{0xd6, 0x27, 0x28, 0xff}},
	{"attention", color.RGBA{0x1f, 0x77, 0xb4, 0xff}},
	{"linear", color.RGBA{0xff, 0x7f, 0x0e, 0xff}},
	{"matmul", color.RGBA{0xff, 0x7f, 0x0e, 0xff}},
	{"optimizer", color.RGBA{0x2c, 0xa0, 0x2c, 0xff}},
	{"communication", color.RGBA{0x94, 0x67, 0xbd, 0xff}},
	{"fsdp", color.RGBA{0x8c, 0x56, 0x4b, 0xff}},
	{"gradient", color.RGBA{0xe3, 0x77, 0xc2, 0xff}},
	{"param", color.RGBA{0x17, 0xbe, 0xcf, 0xff}},
	{"weight", color.RGBA{0x17, 0xbe, 0xcf, 0xff}},
	{"embedding", color.RGBA{0xbc, 0xbd, 0x22, 0xff}},
	{"norm", color.RGBA{0x6b, 0x6e, 0xcf, 0xff}},
	{"activation", color.RGBA{0xf1, 0xc2, 0x32, 0xff}},
	{"loss", color.RGBA{0x98, 0xdf, 0x8a, 0xff}},
	{"logit", color.RGBA{0x98, 0xdf, 0x8a, 0xff}},
	{"data", color.RGBA{0xc5, 0xb0, 0xd5, 0xff}},
	{"input", color.RGBA{0xc5, 0xb0, 0xd5, 0xff}},
	{"autograd", color.RGBA{0xf7, 0xb6, 0xd2, 0xff}},
	{"cache", color.RGBA{0xdb, 0xdb, 0x8d, 0xff}},
	{"free", color.RGBA{0xdb, 0xdb, 0x8d, 0xff}},
}

// extraColors serve categories outside the table, picked by a hash of the name so a user rule's category keeps
// its colour from run to run.
var extraColors = []color.RGBA{
	{0x39, 0x3b, 0x79, 0xff}, {0x63, 0x79, 0x39, 0xff}, {0x8c, 0x6d, 0x31, 0xff}, {0x84, 0x3c, 0x39, 0xff},
	{0x7b, 0x41, 0x73, 0xff}, {0x31, 0x82, 0xbd, 0xff}, {0xe6, 0x55, 0x0d, 0xff}, {0x31, 0xa3, 0x54, 0xff},
	{0x75, 0x6b, 0xb1, 0xff}, {0x63, 0x63, 0x63, 0xff}, {0x9e, 0xca, 0xe1, 0xff}, {0xfd, 0xae, 0x6b, 0xff},
}

// CategoryColor returns the colour used for a category in every chart.
func CategoryColor(name string) color.Color {
	lower := strings.ToLower(name)
	for _, e := range categoryColors {
		if strings.Contains(lower, e.key) {
			return e.c
		}
	}
	h := fnv.New32a()
	h.Write([]byte(lower))
	return extraColors[h.Sum32()%uint32(len(extraColors))]
}

// Colours for the allocator measures shared by several charts.
var (
	ColorReserved  = color.RGBA{0x4c, 0x72, 0xb0, 0xff}
	ColorAllocated = color.RGBA{0x55, 0xa8, 0x68, 0xff}
	ColorRequested = color.RGBA{0x2e, 0x7d, 0x32, 0xff}
	ColorFree      = color.RGBA{0xdd, 0x84, 0x52, 0xff}
	ColorWaste     = color.RGBA{0xc4, 0x4e, 0x52, 0xff}
	ColorPeak      = color.RGBA{0xc4, 0x1e, 0x3a, 0xff}
	// Phase boundaries on the timeline: forward, backward and optimizer starts.
	ColorForward   = color.RGBA{0x55, 0xa8, 0x68, 0xff}
	ColorBackward  = color.RGBA{0x81, 0x72, 0xb3, 0xff}
	ColorOptimizer = color.RGBA{0xcc, 0xb9, 0x74, 0xff}
	// ColorOther is the grey of what a chart folds together ("other" slices and stacks).
	ColorOther = color.RGBA{0xbd, 0xbd, 0xbd, 0xff}
)

// The fonts: sans-serif reads better than gonum's serif default at chart sizes; bold for titles and headlines.
var (
	sansFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
	boldFont = font.Font{Typeface: "Liberation", Variant: "Sans", Weight: 700}
)

func textStyle(size vg.Length) text.Style {
	return text.Style{
		Color:   color.Black,
		Font:    font.From(sansFont, size),
		XAlign:  draw.XLeft,
		YAlign:  draw.YCenter,
		Handler: plot.DefaultTextHandler,
	}
}

// newPlot returns a plot with sans-serif fonts and light grid-friendly defaults.
func newPlot(title string) *plot.Plot {
	p := plot.New()
	// render paints the figure white once; a plot's own background would paint its area again through the
	// path rasterizer, the costliest step of a small chart.
	p.BackgroundColor = nil
	p.Title.Text = title
	p.Title.TextStyle.Font = font.From(sansFont, 13)
	p.Title.Padding = 6
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font = font.From(sansFont, 11)
		ax.Tick.Label.Font = font.From(sansFont, 10)
	}
	p.Legend.TextStyle.Font = font.From(sansFont, 10)
	return p
}

// splitLegend splits a chart body into the plot area and a legend column w wide on its right: every chart's
// legend sits beside the data, never over it.
func splitLegend(dc draw.Canvas, w vg.Length) (plotArea, legendArea draw.Canvas) {
	return draw.Crop(dc, 0, -w, 0, 0), draw.Crop(dc, dc.Max.X-dc.Min.X-w, 0, 0, 0)
}

// memoryPlot is newPlot with its y axis counting bytes in unit.
func memoryPlot(unit Unit) *plot.Plot {
	p := newPlot("")
	p.Y.Label.Text = "memory (" + unit.Name + ")"
	p.Y.Tick.Marker = byteTicks{}
	return p
}

// render draws a figure of w×h points: a bold title line across the top, then body on the rest, and writes it
// as PNG to path.
func render(path string, w, h vg.Length, title string, body func(c draw.Canvas) error) error {
	img := newCanvas(w, h)
	dc := draw.New(newTextCanvas(img))
	const titleHeight = 34
	if title != "" {
		sty := textStyle(15)
		sty.XAlign = draw.XCenter
		sty.YAlign = draw.YTop
		sty.Font = font.From(boldFont, 15)
		dc.FillText(sty, vg.Point{X: w / 2, Y: h - 8}, fitText(sty, title, w-20))
		dc = draw.Crop(dc, 0, 0, 0, -titleHeight)
	}
	if err := body(dc); err != nil {
		return err
	}
	if err := writePNG(path, img.Image()); err != nil {
		return fmt.Errorf("chart: %w", err) // an *atomicfile.Error, which names the path
	}
	return nil
}

// newCanvas returns a white canvas of w×h points at dpi. vgimg makes its image, then copies it into the one it draws
// on; a size that is a whole number of pixels can be handed the image it draws on, the same canvas without the
// copy (26 ms of CPU for the bundled example's eight charts). Any other size goes through vgimg's rounding.
func newCanvas(w, h vg.Length) *vgimg.Canvas {
	pw, ph, ok := wholePixels(w, h)
	if !ok {
		return vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(color.White))
	}
	rgba := image.NewRGBA(image.Rect(0, 0, pw, ph))
	ctx := gg.NewContextForRGBA(rgba)
	// What vgimg does to a context it makes itself.
	ctx.SetLineCapButt()
	ctx.InvertY()
	return vgimg.NewWith(vgimg.UseImageWithContext(rgba, ctx), vgimg.UseDPI(dpi)) // white is its background
}

// wholePixels returns the pixels of a w×h-point canvas at dpi when both are whole numbers from which vgimg gets
// back exactly w and h (it sizes a canvas given its image from the pixels).
func wholePixels(w, h vg.Length) (pw, ph int, ok bool) {
	x, y := w.Dots(dpi), h.Dots(dpi)
	if x != math.Trunc(x) || y != math.Trunc(y) || x < 1 || y < 1 || x > math.MaxInt32 || y > math.MaxInt32 ||
		vg.Length(x/dpi)*vg.Inch != w || vg.Length(y/dpi)*vg.Inch != h {
		return 0, 0, false
	}
	return int(x), int(y), true
}

// writePNG writes img to path as PNG (see encodePNG), the one way every chart is written, atomically (package
// atomicfile): a full disk used to leave a truncated PNG.
func writePNG(path string, img image.Image) error {
	return atomicfile.Write(path, func(w io.Writer) error { return encodePNG(w, img) })
}

// fitText shortens txt from the left ("…tail") until it fits in width, keeping the most specific end of file
// names and stack sites.
func fitText(sty text.Style, txt string, width vg.Length) string {
	if sty.Width(txt) <= width {
		return txt
	}
	r := []rune(txt)
	lo, hi := 0, len(r)
	for lo < hi {
		mid := (lo + hi) / 2
		if sty.Width("…"+string(r[mid:])) <= width {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return "…" + string(r[lo:])
}

// tiles splits c into a row of n panels side by side.
func tiles(c draw.Canvas, rows, cols int) [][]draw.Canvas {
	t := draw.Tiles{Rows: rows, Cols: cols, PadX: 14, PadY: 10, PadTop: 4, PadBottom: 6, PadLeft: 6, PadRight: 10}
	out := make([][]draw.Canvas, rows)
	for j := range rows {
		out[j] = make([]draw.Canvas, cols)
		for i := range cols {
			out[j][i] = t.At(c, i, j)
		}
	}
	return out
}

// checkLengths reports mismatched parallel slices, a programmer error that must not draw a wrong chart.
func checkLengths(what string, n int, others ...int) error {
	for _, o := range others {
		if o != 0 && o != n {
			return fmt.Errorf("%s: %d labels but %d values or colours", what, n, o)
		}
	}
	return nil
}

// byteTicks labels a value axis already scaled to unit with plain numbers; the unit goes in the axis label.
type byteTicks struct{}

func (byteTicks) Ticks(min, max float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label == "" {
			continue
		}
		ts[i].Label = trimFloat(ts[i].Value)
	}
	return ts
}

func trimFloat(v float64) string {
	s := fmt.Sprintf("%.3f", v)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
