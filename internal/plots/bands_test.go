package plots

import (
	"image/color"
	"math"
	"slices"
	"testing"

	"gonum.org/v1/plot/vg"
)

// trainingBands is n iterations of forward, backward and optimizer, each iteration 10 units long.
func trainingBands(n int) []Band {
	out := make([]Band, 0, 3*n)
	for i := range n {
		x := float64(10 * i)
		out = append(out,
			Band{X0: x, X1: x + 4, Kind: "forward", Color: BandForward},
			Band{X0: x + 4, X1: x + 8, Kind: "backward", Color: BandBackward},
			Band{X0: x + 8, X1: x + 10, Kind: "optimizer", Color: BandOptimizer})
	}
	return out
}

func TestBandsAtResolution(t *testing.T) {
	// A plot 900 points wide (1200 pixel columns) starting on a column's edge.
	lo, hi := 30*pixel, 30*pixel+900
	columns := int(math.Round(float64((hi - lo) / pixel)))
	scale := func(n int) func(float64) vg.Length {
		return func(x float64) vg.Length { return lo + vg.Length(x/float64(10*n))*(hi-lo) }
	}
	for _, tc := range []struct {
		name  string
		iters int
		exact bool // every band is at least a column wide and drawn as it is
		tint  bool // the narrow bands are dense enough to show
	}{
		{"three iterations", 3, true, true},
		{"a hundred iterations", 100, true, true},
		{"1e5 iterations", 100000, false, false},
		{"1e4 iterations", 10000, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bands := trainingBands(tc.iters)
			trX := scale(tc.iters)
			got := bandsAtResolution(bands, trX, lo, hi)
			if tc.exact {
				want := make([]bandRect, len(bands))
				for i, b := range bands {
					want[i] = bandRect{X0: trX(b.X0), X1: trX(b.X1), Color: b.Color}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("wide bands: got %d rectangles %v, want the %d bands as they are", len(got), got, len(want))
				}
				return
			}
			if tc.tint != (len(got) > 0) {
				t.Errorf("%d rectangles: want some %v", len(got), tc.tint)
			}
			// One rectangle per colour and column at most, whatever the number of iterations.
			if len(got) > 3*columns {
				t.Fatalf("%d rectangles for %d columns: not bounded by the plot's width", len(got), columns)
			}
			for _, r := range got {
				if r.X0 < lo || r.X1 > hi || r.X1 <= r.X0 {
					t.Fatalf("rectangle %v outside the plot %v..%v", r, lo, hi)
				}
			}
		})
	}
}

// TestBandsAtResolutionOpacity checks the opacity of a column filled by narrow bands against the rasteriser's
// compositing, computed by hand: bands of opacity α covering a share c of the column each let 1 − α·c through.
func TestBandsAtResolutionOpacity(t *testing.T) {
	col := color.NRGBA{R: 0x10, G: 0x20, B: 0x30, A: 0x80}
	trX := func(x float64) vg.Length { return vg.Length(x) * pixel } // one data unit per column
	for _, tc := range []struct {
		name  string
		bands []Band
		want  []bandRect
	}{
		{
			// Two quarter-column bands in column 0, one in column 1; then nothing until a wide band.
			name: "narrow then wide",
			bands: []Band{
				{X0: 0, X1: 0.25, Color: col}, {X0: 0.5, X1: 0.75, Color: col},
				{X0: 1.25, X1: 1.5, Color: col},
				{X0: 3, X1: 5, Color: col},
			},
			want: []bandRect{
				{X0: 3 * pixel, X1: 5 * pixel, Color: col},
				{X0: 0, X1: pixel, Color: color.NRGBA{R: 0x10, G: 0x20, B: 0x30, A: alpha8(1 - sq(1-0.25*0x80/255.0))}},
				{X0: pixel, X1: 2 * pixel, Color: color.NRGBA{R: 0x10, G: 0x20, B: 0x30, A: alpha8(0.25 * 0x80 / 255.0)}},
			},
		},
		{
			// A band across a column edge shares its coverage between the two; equal columns join.
			name:  "straddling",
			bands: []Band{{X0: 0.75, X1: 1.25, Color: col}},
			want:  []bandRect{{X0: 0, X1: 2 * pixel, Color: color.NRGBA{R: 0x10, G: 0x20, B: 0x30, A: alpha8(0.25 * 0x80 / 255.0)}}},
		},
		{
			// Far below one level of an 8-bit channel: the rasteriser never showed it, and it stays out.
			name:  "invisible",
			bands: []Band{{X0: 0.5, X1: 0.501, Color: col}},
			want:  nil,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := bandsAtResolution(tc.bands, trX, 0, 10*pixel)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v\nwant %v", got, tc.want)
			}
		})
	}
}

func sq(x float64) float64 { return x * x }

func alpha8(a float64) uint8 { return uint8(math.Round(a * 0xff)) }
