package plots

import (
	"bytes"
	"image"
	"image/color"
	"math"
	"testing"

	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/vgimg"
)

// TestTextCanvas: text drawn through textCanvas is pixel for pixel what vgimg draws, upright (its own path) or
// rotated (vgimg's), and the transforms and colours it tracks come back at Pop as vgimg's do. The reference is
// vgimg itself on a second canvas given the same calls.
func TestTextCanvas(t *testing.T) {
	sans, bold := font.DefaultCache.Lookup(sansFont, 10), font.DefaultCache.Lookup(boldFont, 15)
	red := color.RGBA{0xc0, 0x10, 0x20, 0xff}
	type op func(c vg.Canvas)
	text := func(f font.Face, x, y vg.Length, s string) op {
		return func(c vg.Canvas) { c.FillString(f, vg.Point{X: x, Y: y}, s) }
	}
	for _, tc := range []struct {
		name string
		ops  []op
		fast bool // textCanvas draws some of the text itself
	}{
		{"upright", []op{text(sans, 10, 20, "peak 61.2 GiB · iteration 4"), text(bold, 30.3, 80.7, "Memory timeline (rank 0)")}, true},
		{"kerned and missing glyphs", []op{text(sans, 5, 50, "AVAWAT To Ty \u0007 ✓ \U0010FFFD end")}, true},
		{"beyond the edges", []op{text(sans, -8, 50, "cut on the left"), text(sans, 130, 99, "cut on the right and top"), text(bold, 20, -3, "below")}, true},
		{"colour", []op{func(c vg.Canvas) { c.SetColor(red) }, text(sans, 12, 40, "red text"), func(c vg.Canvas) { c.SetColor(nil) }, text(sans, 12, 60, "black again")}, true},
		{"over colour", []op{func(c vg.Canvas) {
			c.SetColor(color.NRGBA{0x40, 0x80, 0xc0, 0x60})
			c.Fill(vg.Rectangle{Min: vg.Point{X: 0, Y: 0}, Max: vg.Point{X: 200, Y: 100}}.Path())
			c.SetColor(red)
		}, text(sans, 10, 20, "peak 61.2 GiB · iteration 4"), text(bold, 30, 50, "Memory timeline (rank 0)")}, true},
		{"whole-pixel translation", []op{func(c vg.Canvas) { c.Push(); c.Translate(vg.Point{X: 21, Y: 15}) }, text(sans, 3, 4.2, "moved"),
			func(c vg.Canvas) { c.Pop() }, text(sans, 3, 4, "back")}, true},
		{"sub-pixel translation", []op{func(c vg.Canvas) { c.Push(); c.Translate(vg.Point{X: 20, Y: 15.5}) }, text(sans, 3, 4, "moved"),
			func(c vg.Canvas) { c.Pop() }, text(sans, 3, 4, "back")}, true},
		{"rotated", []op{func(c vg.Canvas) { c.Push(); c.Translate(vg.Point{X: 40, Y: 10}); c.Rotate(math.Pi / 2) }, text(sans, 0, 0, "memory (GiB)"),
			func(c vg.Canvas) { c.Pop() }, text(sans, 60, 10, "upright after the rotation")}, true},
		{"scaled", []op{func(c vg.Canvas) { c.Push(); c.Scale(2, 2) }, text(sans, 5, 5, "twice"), func(c vg.Canvas) { c.Pop() }}, false},
		{"colour restored at pop", []op{func(c vg.Canvas) { c.Push(); c.SetColor(red) }, text(sans, 5, 30, "red"), func(c vg.Canvas) { c.Pop() }, text(sans, 5, 50, "black")}, true},
		{"zero size", []op{text(font.DefaultCache.Lookup(sansFont, 0), 5, 5, "nothing")}, false},
		{"far away or not a number", []op{text(sans, vg.Length(math.Inf(1)), 5, "inf"), text(sans, 5, vg.Length(math.NaN()), "nan"),
			text(sans, 1e12, 5, "far")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			newImg := func() *vgimg.Canvas {
				return vgimg.NewWith(vgimg.UseWH(200, 100), vgimg.UseDPI(96), vgimg.UseBackgroundColor(color.White))
			}
			ref, fast := newImg(), newImg()
			tcv := newTextCanvas(fast)
			for _, o := range tc.ops {
				o(ref)
				o(tcv)
			}
			want, got := ref.Image().(*image.RGBA), fast.Image().(*image.RGBA)
			if !bytes.Equal(want.Pix, got.Pix) {
				n := 0
				for i := range want.Pix {
					if want.Pix[i] != got.Pix[i] {
						n++
					}
				}
				t.Fatalf("%d of %d bytes differ from vgimg's drawing", n, len(want.Pix))
			}
			if fast := len(tcv.faces) > 0; fast != tc.fast {
				t.Errorf("drew text itself = %v, want %v", fast, tc.fast)
			}
			white := true
			for _, b := range got.Pix {
				white = white && b == 0xff
			}
			if white != (tc.name == "zero size" || tc.name == "far away or not a number") {
				t.Errorf("image all white = %v", white)
			}
		})
	}
}
