package plots

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/png"
	"math/rand/v2"
	"testing"
)

// TestEncodePNG decodes what encodePNG wrote with image/png and requires every pixel back: opaque charts through
// the RGB path (whole images, a sub-image with a stride wider than its rows, noise that spans many IDAT chunks),
// everything else byte for byte as image/png writes it.
func TestEncodePNG(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	opaqueImg := func(w, h int, noise bool) *image.RGBA {
		m := image.NewRGBA(image.Rect(0, 0, w, h))
		for y := range h {
			for x := range w {
				c := color.RGBA{uint8(x * 7), uint8(y * 3), uint8((x + y) / 5), 0xff}
				if noise {
					c = color.RGBA{uint8(rng.Uint32()), uint8(rng.Uint32()), uint8(rng.Uint32()), 0xff}
				}
				m.SetRGBA(x, y, c)
			}
		}
		return m
	}
	translucent := opaqueImg(40, 30, false)
	translucent.SetRGBA(5, 5, color.RGBA{10, 20, 30, 40})
	// opaque reads two pixels' alphas at a time: a translucent pixel first or second of a pair, or last of an odd
	// row, is found.
	translucentAt := func(w, x, y int) *image.RGBA {
		m := opaqueImg(w, 4, false)
		m.SetRGBA(x, y, color.RGBA{0, 0, 0, 0xfe})
		return m
	}
	gray := image.NewGray(image.Rect(0, 0, 20, 10))
	for i := range gray.Pix {
		gray.Pix[i] = uint8(i)
	}
	tests := []struct {
		name   string
		img    image.Image
		stdlib bool // written by image/png: the bytes must equal its own
	}{
		{"one pixel", opaqueImg(1, 1, false), false},
		{"chart-like", opaqueImg(1200, 700, false), false},
		{"odd width", opaqueImg(333, 17, false), false},
		{"sub-image", opaqueImg(300, 200, false).SubImage(image.Rect(17, 9, 211, 150)), false},
		{"noise over many IDAT chunks", opaqueImg(600, 400, true), false},
		{"translucent", translucent, true},
		{"translucent, first of a pair", translucentAt(9, 4, 2), true},
		{"translucent, second of a pair", translucentAt(9, 3, 1), true},
		{"translucent, last of an odd row", translucentAt(9, 8, 3), true},
		{"translucent, last of a sub-image row", translucentAt(9, 6, 0).SubImage(image.Rect(1, 0, 7, 4)), true},
		{"gray", gray, true},
		{"empty", image.NewRGBA(image.Rect(0, 0, 0, 0)), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got bytes.Buffer
			err := encodePNG(&got, tc.img)
			if tc.stdlib {
				var want bytes.Buffer
				werr := (&png.Encoder{CompressionLevel: png.BestSpeed}).Encode(&want, tc.img)
				if (err == nil) != (werr == nil) || !bytes.Equal(got.Bytes(), want.Bytes()) {
					t.Fatalf("encodePNG = %d bytes, %v; image/png wrote %d bytes, %v", got.Len(), err, want.Len(), werr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			// IHDR's colour type sits after the signature, the chunk's length and type, width, height and depth.
			if ct := got.Bytes()[8+4+4+4+4+1]; ct != 2 {
				t.Errorf("colour type %d: an opaque chart should be written as RGB (2)", ct)
			}
			back, err := png.Decode(&got)
			if err != nil {
				t.Fatalf("image/png cannot read it: %v", err)
			}
			b := tc.img.Bounds()
			if back.Bounds().Dx() != b.Dx() || back.Bounds().Dy() != b.Dy() {
				t.Fatalf("decoded %v, want the size of %v", back.Bounds(), b)
			}
			for y := b.Min.Y; y < b.Max.Y; y++ {
				for x := b.Min.X; x < b.Max.X; x++ {
					want := color.RGBAModel.Convert(tc.img.At(x, y))
					if g := color.RGBAModel.Convert(back.At(x-b.Min.X, y-b.Min.Y)); g != want {
						t.Fatalf("pixel (%d,%d) = %v, want %v", x, y, g, want)
					}
				}
			}
		})
	}
}

// failAfter accepts n bytes, then fails.
type failAfter struct{ n int }

var errFull = errors.New("disk full")

func (f *failAfter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		k := f.n
		f.n = 0
		return k, errFull
	}
	f.n -= len(p)
	return len(p), nil
}

// TestEncodePNGWriteError: a writer that fails part way makes encodePNG fail with its error, wherever it fails.
func TestEncodePNGWriteError(t *testing.T) {
	m := image.NewRGBA(image.Rect(0, 0, 400, 300))
	for i := range m.Pix {
		m.Pix[i] = uint8(i * 31)
		if i%4 == 3 {
			m.Pix[i] = 0xff
		}
	}
	var full bytes.Buffer
	if err := encodePNG(&full, m); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 7, 8, 40, full.Len() / 2, full.Len() - 1} {
		if err := encodePNG(&failAfter{n: n}, m); !errors.Is(err, errFull) {
			t.Errorf("failing after %d of %d bytes: err = %v, want %v", n, full.Len(), err, errFull)
		}
	}
}
