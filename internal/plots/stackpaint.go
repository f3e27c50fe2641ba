package plots

import (
	"image"
	"image/color"
	"image/draw"
	"math"
	"slices"

	"gonum.org/v1/plot/vg"
	vgdraw "gonum.org/v1/plot/vg/draw"
)

// rasterCanvas is what a canvas drawing into an image offers (vgimg's): its pixels and its resolution.
type rasterCanvas interface {
	Image() draw.Image
	DPI() float64
}

// stackPainter paints non-overlapping axis-aligned rectangles straight into a chart's pixels, each pixel taking
// the colours of the rectangles over it in proportion to the area they cover, as a rasteriser's anti-aliasing
// gives: a stacked memory chart is thousands of bucket-by-layer rectangles, and filling each layer as a polygon
// through the vector rasteriser painted every pixel under the stack once per layer above it (and let the colours
// of the layers above bleed into the edge pixels of those below). The rectangles are gathered, then painted a
// pixel column at a time.
type stackPainter struct {
	img      *image.RGBA
	dpi      float64
	x0, y0   int // the clip rectangle's top-left pixel
	w, h     int
	heightPx float64 // the image's height, to turn the canvas's upward y into rows
	rects    []pixelRect
}

// pixelRect is a rectangle in pixels (y downward, clipped) with its premultiplied colour.
type pixelRect struct {
	x0, x1, y0, y1 float64
	r, g, b, a     float32
}

// newStackPainter returns a painter over cv's area, or false when cv does not draw into an RGBA image.
func newStackPainter(cv vgdraw.Canvas) (*stackPainter, bool) {
	// A plot hands its plotters the chart's canvas wrapped in the canvases of its areas, which draw through to it
	// in the same coordinates.
	inner := cv.Canvas
	for {
		w, ok := inner.(vgdraw.Canvas)
		if !ok {
			break
		}
		inner = w.Canvas
	}
	rc, ok := inner.(rasterCanvas)
	if !ok {
		return nil, false
	}
	img, ok := rc.Image().(*image.RGBA)
	if !ok {
		return nil, false
	}
	dpi := rc.DPI()
	hpx := float64(img.Bounds().Dy())
	x0 := int(math.Floor(cv.Min.X.Dots(dpi)))
	x1 := int(math.Ceil(cv.Max.X.Dots(dpi)))
	y0 := int(math.Floor(hpx - cv.Max.Y.Dots(dpi)))
	y1 := int(math.Ceil(hpx - cv.Min.Y.Dots(dpi)))
	r := image.Rect(x0, y0, x1, y1).Intersect(img.Bounds())
	if r.Empty() {
		return nil, false
	}
	return &stackPainter{img: img, dpi: dpi, x0: r.Min.X, y0: r.Min.Y, w: r.Dx(), h: r.Dy(), heightPx: hpx}, true
}

// rect adds the rectangle x0..x1, y0..y1 (canvas lengths, y upward) in col, to be painted by finish.
func (p *stackPainter) rect(col color.Color, x0, x1, y0, y1 vg.Length) {
	if r, ok := p.pixels(col, x0, x1, y0, y1); ok {
		p.rects = append(p.rects, r)
	}
}

// pixels returns the rectangle x0..x1, y0..y1 (canvas lengths, y upward) in pixels, clipped, with col
// premultiplied; false when nothing of it is left.
func (p *stackPainter) pixels(col color.Color, x0, x1, y0, y1 vg.Length) (pixelRect, bool) {
	px0, px1 := x0.Dots(p.dpi), x1.Dots(p.dpi)
	py0, py1 := p.heightPx-y1.Dots(p.dpi), p.heightPx-y0.Dots(p.dpi)
	px0, px1 = math.Max(px0, float64(p.x0)), math.Min(px1, float64(p.x0+p.w))
	py0, py1 = math.Max(py0, float64(p.y0)), math.Min(py1, float64(p.y0+p.h))
	if px1 <= px0 || py1 <= py0 {
		return pixelRect{}, false
	}
	cr, cg, cb, ca := col.RGBA() // premultiplied, 0..65535
	return pixelRect{px0, px1, py0, py1, float32(cr) / 0xffff, float32(cg) / 0xffff, float32(cb) / 0xffff, float32(ca) / 0xffff}, true
}

// over composites the rectangle x0..x1, y0..y1 (canvas lengths, y upward) in col over the pixels at once, each
// pixel in proportion to the area it covers, as filling it with the rasteriser would: for translucent
// rectangles drawn one over another (a chart's phase bands), before the gathered rectangles are painted.
func (p *stackPainter) over(col color.Color, x0, x1, y0, y1 vg.Length) {
	r, ok := p.pixels(col, x0, x1, y0, y1)
	if !ok {
		return
	}
	// Per column, the blend of a fully covered row in 16-bit fixed point: what each channel keeps of the pixel
	// and what the colour adds (rows cut by the rectangle's top or bottom edge are blended apart).
	left := int(r.x0)
	coef := make([]blend, 0, int(math.Ceil(r.x1))-left)
	for x := left; float64(x) < r.x1; x++ {
		coef = append(coef, r.blend(float32(math.Min(r.x1, float64(x+1))-math.Max(r.x0, float64(x)))))
	}
	for y := int(r.y0); float64(y) < r.y1; y++ {
		fy := float32(math.Min(r.y1, float64(y+1)) - math.Max(r.y0, float64(y)))
		row := p.img.Pix[p.img.PixOffset(left, y):]
		for k, c := range coef {
			if fy < 1 {
				c = r.blend(fy * float32(math.Min(r.x1, float64(left+k+1))-math.Max(r.x0, float64(left+k))))
			}
			d := row[4*k : 4*k+4 : 4*k+4]
			d[0] = uint8((uint32(d[0])*c.keep + c.add[0] + 1<<15) >> 16)
			d[1] = uint8((uint32(d[1])*c.keep + c.add[1] + 1<<15) >> 16)
			d[2] = uint8((uint32(d[2])*c.keep + c.add[2] + 1<<15) >> 16)
			d[3] = uint8((uint32(d[3])*c.keep + c.add[3] + 1<<15) >> 16)
		}
	}
}

// blend is "over" at one coverage in 16-bit fixed point: a channel becomes (d·keep + add) / 2¹⁶.
type blend struct {
	keep uint32
	add  [4]uint32
}

// blend returns r's colour composited over a pixel it covers by cov.
func (r *pixelRect) blend(cov float32) blend {
	const one = 1 << 16
	f := func(v float32) uint32 { return uint32(v*cov*0xff*one + 0.5) }
	return blend{keep: uint32((1-r.a*cov)*one + 0.5), add: [4]uint32{f(r.r), f(r.g), f(r.b), f(r.a)}}
}

// finish paints the rectangles over the image's pixels, a column at a time.
func (p *stackPainter) finish() {
	// The rectangles over each column (a bucket is about a column wide, so each falls in one or two).
	start := make([]int32, p.w+1)
	for _, r := range p.rects {
		for x := int(r.x0); float64(x) < r.x1; x++ {
			start[x-p.x0+1]++
		}
	}
	for x := range p.w {
		start[x+1] += start[x]
	}
	at := slices.Clone(start[:p.w])
	byCol := make([]int32, start[p.w])
	for i, r := range p.rects {
		for x := int(r.x0); float64(x) < r.x1; x++ {
			byCol[at[x-p.x0]] = int32(i)
			at[x-p.x0]++
		}
	}
	col := make([]float32, 4*p.h)
	for x := range p.w {
		rs := byCol[start[x]:start[x+1]]
		if len(rs) == 0 {
			continue
		}
		clear(col)
		px := float64(p.x0 + x)
		for _, i := range rs {
			r := &p.rects[i]
			wx := float32(math.Min(r.x1, px+1) - math.Max(r.x0, px))
			add := func(y int, cov float32) {
				c := col[4*(y-p.y0) : 4*(y-p.y0)+4 : 4*(y-p.y0)+4]
				c[0] += r.r * cov
				c[1] += r.g * cov
				c[2] += r.b * cov
				c[3] += r.a * cov
			}
			top, bottom := int(r.y0), int(math.Ceil(r.y1))-1
			if top == bottom {
				add(top, wx*float32(r.y1-r.y0))
				continue
			}
			add(top, wx*float32(float64(top+1)-r.y0))
			for y := top + 1; y < bottom; y++ {
				add(y, wx)
			}
			add(bottom, wx*float32(r.y1-float64(bottom)))
		}
		for y := range p.h {
			c := col[4*y : 4*y+4 : 4*y+4]
			a := min(c[3], 1)
			if a <= 0 {
				continue
			}
			o := p.img.PixOffset(p.x0+x, p.y0+y)
			d := p.img.Pix[o : o+4 : o+4]
			keep := (1 - a) / 0xff
			d[0] = to8(c[0] + keep*float32(d[0]))
			d[1] = to8(c[1] + keep*float32(d[1]))
			d[2] = to8(c[2] + keep*float32(d[2]))
			d[3] = to8(a + keep*float32(d[3]))
		}
	}
}

func to8(v float32) uint8 { return uint8(min(max(v, 0), 1)*0xff + 0.5) }
