package plots

import (
	"image/color"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg/draw"
)

func TestChunkedLine(t *testing.T) {
	for _, n := range []int{1, 2, 3, lineChunk - 1, lineChunk, lineChunk + 1, 2*lineChunk - 2, 2*lineChunk - 1, 4000} {
		x := make([]float64, n)
		v := make([]float64, n)
		for i := range n {
			x[i], v[i] = float64(i), float64(10*i)
		}
		pieces, err := chunkedLine(x, v, 10, draw.LineStyle{Width: 2})
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		// Walking the pieces must give back every point in order, each piece starting on the last segment of
		// the one before (so every inner vertex is inside some piece and gets its join).
		next := 0
		for k, p := range pieces {
			pts := p.(*plotter.Line).XYs
			if len(pts) > lineChunk || len(pts) < min(n, 2) {
				t.Fatalf("n=%d piece %d has %d points", n, k, len(pts))
			}
			start := next
			if k > 0 {
				start = next - 2
			}
			for j, pt := range pts {
				if want := float64(start + j); pt.X != want || pt.Y != want {
					t.Fatalf("n=%d piece %d point %d = %v, want (%v, %v)", n, k, j, pt, want, want)
				}
			}
			next = start + len(pts)
		}
		if next != n {
			t.Errorf("n=%d: pieces end at point %d", n, next)
		}
	}
}

func TestStackedAreas(t *testing.T) {
	x := []float64{0, 1, 2, 3}
	stacked := []Series{
		{Name: "a", Values: []float64{2, 4, 6, 8}, Color: color.Black},
		{Name: "b", Values: []float64{1, 0, 3, 2}, Color: color.White},
	}
	polys, err := stackedAreas(x, stacked, 2)
	if err != nil {
		t.Fatal(err)
	}
	// Drawn top layer first: b's area reaches a+b, then a's own area paints over the lower part.
	want := [][]plotter.XY{
		{{X: 3, Y: 5}, {X: 2, Y: 4.5}, {X: 1, Y: 2}, {X: 0, Y: 1.5}, {X: 0, Y: 0}, {X: 3, Y: 0}},
		{{X: 3, Y: 4}, {X: 2, Y: 3}, {X: 1, Y: 2}, {X: 0, Y: 1}, {X: 0, Y: 0}, {X: 3, Y: 0}},
	}
	if len(polys) != 2 || polys[0].Color != color.White || polys[1].Color != color.Black {
		t.Fatalf("polygons = %d, colors wrong", len(polys))
	}
	for k, p := range polys {
		ring := p.XYs[0]
		if len(ring) != len(want[k]) {
			t.Fatalf("polygon %d: %v", k, ring)
		}
		for i := range ring {
			if ring[i] != want[k][i] {
				t.Errorf("polygon %d vertex %d = %v, want %v", k, i, ring[i], want[k][i])
			}
		}
	}
}

// BenchmarkMemoryOverTimeSpiky draws the worst case the timeline sends: 4000 points of eight categories that
// all change at every point. Filling bands and stroking lines as single long paths took 18 s here.
func BenchmarkMemoryOverTimeSpiky(b *testing.B) {
	const n, k = 4000, 8
	rng := rand.New(rand.NewPCG(1, 2))
	c := TimeChart{Title: "spiky", X: make([]float64, n), PeakIndex: -1}
	for i := range n {
		c.X[i] = float64(i)
	}
	var alloc []float64
	c.Stacked, alloc = spikyStack(rng, k, n)
	reserved := make([]float64, n)
	for i := range n {
		reserved[i] = alloc[i] * 1.2
	}
	c.Lines = []Series{{Name: "allocated", Values: alloc, Color: color.Black}, {Name: "reserved", Values: reserved, Color: ColorReserved}}
	for b.Loop() {
		if err := MemoryOverTime(filepath.Join(b.TempDir(), "timeline.png"), c); err != nil {
			b.Fatal(err)
		}
	}
}

// spikyStack returns k categories of n random values each, every one changing at every point, and their sum.
func spikyStack(rng *rand.Rand, k, n int) ([]Series, []float64) {
	sum := make([]float64, n)
	stacked := make([]Series, 0, k)
	for s := range k {
		v := make([]float64, n)
		for i := range n {
			v[i] = float64(rng.IntN(1 << 30))
			sum[i] += v[i]
		}
		stacked = append(stacked, Series{Name: "s", Values: v, Color: color.RGBA{uint8(30 * s), 100, 100, 255}})
	}
	return stacked, sum
}
