package plots

import (
	"image/color"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// TestEnvelopeShowsASpike: a one-bucket spike of a category drawn in its own colour reaches the upper part of
// the chart (a ramp between samples or a stack thinner than a pixel would leave it out), and mismatched lengths
// are refused.
func TestEnvelopeShowsASpike(t *testing.T) {
	const nb, spike = 900, 451
	spikeColor := color.RGBA{0xff, 0x00, 0xff, 0xff}
	c := EnvelopeChart{Title: "spike", XLabel: "event", IntegerX: true, X: make([]float64, nb+1)}
	base, top := make([]float64, nb), make([]float64, nb)
	for k := range nb {
		c.X[k] = float64(k * 10)
		base[k] = 1 << 30
		if k == spike {
			top[k] = 9 << 30
		}
	}
	c.X[nb] = nb * 10
	c.Stacked = []Series{{Name: "base", Values: base, Color: color.RGBA{0x20, 0x80, 0x20, 0xff}}, {Name: "spike", Values: top, Color: spikeColor}}
	for k := range nb {
		c.AllocMin = append(c.AllocMin, base[k])
		c.AllocMax = append(c.AllocMax, base[k]+top[k])
		c.ReservedMax = append(c.ReservedMax, 12<<30)
		c.ReservedEnd = append(c.ReservedEnd, 12<<30)
	}
	c.Peak = &XLabel{X: spike*10 + 5, Y: 10 << 30, Text: "peak"}
	c.Bands = []Band{{X0: 0, X1: 3000, Kind: "forward", Color: BandForward}}
	c.Labels = []XLabel{{X: 0, Text: "iter 1"}, {X: 10, Text: "iter 2"}} // the second would overlap: left out
	c.OOMs = []XLabel{{X: 8000, Text: "OOM"}}
	path := filepath.Join(outDir(t), "envelope_spike.png")
	if err := Envelope(path, c); err != nil {
		t.Fatal(err)
	}
	img := decodePNG(t, path)
	b := img.Bounds()
	highest := b.Max.Y
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r>>8 > 0xe0 && g>>8 < 0x30 && bl>>8 > 0xe0 {
				highest = min(highest, y)
			}
		}
	}
	// The spike's top (10 of the axis's 12 × 1.14 GiB) lies in the upper third of the image.
	if highest > b.Min.Y+b.Dy()/3 {
		t.Errorf("the spike's colour reaches only row %d of %d", highest, b.Dy())
	}
	bad := c
	bad.AllocMin = bad.AllocMin[:10]
	if err := Envelope(filepath.Join(t.TempDir(), "bad.png"), bad); err == nil {
		t.Error("mismatched lengths were drawn")
	}
}

func TestOffScale(t *testing.T) {
	for _, tc := range []struct {
		totals []float64
		limit  float64
		want   float64
	}{
		{[]float64{10, 12, 1500}, 0, 15},   // one bar dwarfs the rest: cut at 1.25 × the next
		{[]float64{10, 12, 1500}, 80, 100}, // the limit stays on the scale
		{[]float64{10, 12, 40}, 0, 0},      // within 4×: no cut
		{[]float64{1500}, 0, 0},            // a single bar is never cut
	} {
		if got := offScale(tc.totals, tc.limit); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("offScale(%v, %v) = %v, want %v", tc.totals, tc.limit, got, tc.want)
		}
	}
}

func TestIntegerTicksHaveNoFractions(t *testing.T) {
	for _, r := range [][2]float64{{0, 3}, {1, 4}, {0, 7}, {0, 1e6}} {
		for _, tk := range (integerTicks{}).Ticks(r[0], r[1]) {
			if tk.Label != "" && tk.Value != math.Trunc(tk.Value) {
				t.Errorf("range %v: tick %v labelled %q", r, tk.Value, tk.Label)
			}
		}
	}
}

// BenchmarkEnvelopeSpiky draws the timeline of 900 buckets where every category and every line jumps at every
// bucket: the worst case for the rasteriser (see bench/README.md on spiky paths).
func BenchmarkEnvelopeSpiky(b *testing.B) {
	const nb, k = 900, 8
	rng := rand.New(rand.NewPCG(1, 2))
	c := EnvelopeChart{Title: "spiky", X: make([]float64, nb+1)}
	for i := range nb + 1 {
		c.X[i] = float64(i * 1000)
	}
	var alloc []float64
	c.Stacked, alloc = spikyStack(rng, k, nb)
	for i := range nb {
		c.AllocMax = append(c.AllocMax, alloc[i])
		c.AllocMin = append(c.AllocMin, alloc[i]*float64(rng.IntN(100))/100)
		c.ReservedMax = append(c.ReservedMax, alloc[i]*1.3)
		c.ReservedEnd = append(c.ReservedEnd, alloc[i]*1.1)
	}
	for b.Loop() {
		if err := Envelope(filepath.Join(b.TempDir(), "timeline.png"), c); err != nil {
			b.Fatal(err)
		}
	}
}
