package plots

import (
	"image"
	"image/color"
	"testing"

	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// TestStackPainter: a pixel takes the colours over it in proportion to the area each covers, over the background
// for the rest, with no colour of a neighbouring rectangle bleeding into it (hand-computed, on a white 10×10 image
// at 72 dpi, where a point is a pixel and y points up).
func TestStackPainter(t *testing.T) {
	img := vgimg.NewWith(vgimg.UseWH(10, 10), vgimg.UseDPI(72), vgimg.UseBackgroundColor(color.White))
	cv := draw.New(img)
	p, ok := newStackPainter(cv)
	if !ok {
		t.Fatal("no painter for an image canvas")
	}
	red, blue, green := color.RGBA{0xff, 0, 0, 0xff}, color.RGBA{0, 0, 0xff, 0xff}, color.RGBA{0, 0xff, 0, 0xff}
	// Columns: red over 1.25..5.5, blue over 5.5..8 (rows 0..4 from the top: y 6..10); a green layer under both
	// up to y 3.5 (rows 6.5..10), and red from y 3.5 to 6 over columns 1.25..5.5 touching it.
	p.rect(red, 1.25, 5.5, 6, 10)
	p.rect(blue, 5.5, 8, 6, 10)
	p.rect(green, 1.25, 8, 0, 3.5)
	p.rect(red, 1.25, 5.5, 3.5, 6)
	p.rect(red, -5, -1, 0, 10) // outside: clipped away
	p.finish()
	got := img.Image().(*image.RGBA)
	for _, c := range []struct {
		x, y int
		want color.RGBA
	}{
		{3, 1, red},                          // inside red
		{6, 1, blue},                         // inside blue
		{5, 1, color.RGBA{128, 0, 128, 255}}, // half red, half blue
		{1, 1, color.RGBA{255, 64, 64, 255}}, // three quarters red over white
		{0, 1, color.RGBA{255, 255, 255, 255}},
		{9, 1, color.RGBA{255, 255, 255, 255}},
		{3, 6, color.RGBA{128, 128, 0, 255}},   // the row split between red above and green below
		{6, 6, color.RGBA{128, 255, 128, 255}}, // green half over white, half the row
		{3, 8, green},
		{1, 8, color.RGBA{64, 255, 64, 255}}, // three quarters green over white
	} {
		if g := got.RGBAAt(c.x, c.y); g != c.want {
			t.Errorf("pixel (%d, %d) = %v, want %v", c.x, c.y, g, c.want)
		}
	}
}

// TestStackPainterOver: a translucent rectangle composited over white at full coverage and at a quarter (an edge
// column), and a second one over the first, as "over" gives (hand-computed in 16-bit fixed point).
func TestStackPainterOver(t *testing.T) {
	img := vgimg.NewWith(vgimg.UseWH(10, 10), vgimg.UseDPI(72), vgimg.UseBackgroundColor(color.White))
	p, ok := newStackPainter(draw.New(img))
	if !ok {
		t.Fatal("no painter for an image canvas")
	}
	blue := color.NRGBA{0, 0, 0xff, 0x80}
	p.over(blue, 2.75, 6, 0, 10) // column 2 a quarter, columns 3–5 whole
	p.over(blue, 5, 8, 0, 10)    // column 5 twice
	got := img.Image().(*image.RGBA)
	for _, c := range []struct {
		x    int
		want color.RGBA
	}{
		{1, color.RGBA{255, 255, 255, 255}},
		{2, color.RGBA{223, 223, 255, 255}}, // 255·(1 − ½·¼)
		{4, color.RGBA{127, 127, 255, 255}}, // 255·(1 − ½)
		{5, color.RGBA{63, 63, 255, 255}},   // twice: 127·(1 − ½)
		{7, color.RGBA{127, 127, 255, 255}},
		{8, color.RGBA{255, 255, 255, 255}},
	} {
		if g := got.RGBAAt(c.x, 4); g != c.want {
			t.Errorf("pixel (%d, 4) = %v, want %v", c.x, g, c.want)
		}
	}
}
