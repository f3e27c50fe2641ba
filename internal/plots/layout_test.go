package plots

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"
)

// TestPeakLabelKeepsLinesVisible draws a reserved line that stays flat at the peak's height after the peak (what
// a snapshot looks like when the allocator keeps the segments it grew for the peak) and checks that the line is
// visible in every pixel column it spans: the peak label must not be drawn over it.
func TestPeakLabelKeepsLinesVisible(t *testing.T) {
	for _, peakAt := range []int{3, 16} { // label to the right of the peak, and to its left
		const n = 20
		c := TimeChart{Title: "Memory over time: flat.pickle, device 0", XLabel: "trace event", PeakIndex: peakAt}
		alloc := make([]float64, n)
		res := make([]float64, n)
		for i := range n {
			c.X = append(c.X, float64(i))
			alloc[i] = float64(int64(i%5+1) << 28)
			res[i] = 2.02 * (1 << 30) // segments round up: reserved sits just above the peak
		}
		alloc[peakAt] = 2 << 30
		c.PeakValue = alloc[peakAt]
		c.PeakLabel = "peak 2.0 GiB"
		c.Lines = []Series{{Name: "allocated", Values: alloc, Color: color.Black}, {Name: "reserved", Values: res, Color: ColorReserved}}
		path := filepath.Join(outDir(t), "flat_reserved.png")
		if err := MemoryOverTime(path, c); err != nil {
			t.Fatal(err)
		}
		img := decodePNG(t, path)
		first, last, gap, longest := -1, -1, 0, 0
		cols := columnsWith(img, ColorReserved)
		cols = cols[:len(cols)-px(215)] // the legend column on the right has its own sample of the line
		for x, ok := range cols {
			if ok {
				if first < 0 {
					first = x
				}
				last = x
			}
		}
		if first < 0 {
			t.Fatalf("peak at %d: the reserved line is not drawn at all", peakAt)
		}
		for x := first; x <= last; x++ {
			if cols[x] {
				gap = 0
			} else {
				gap++
				longest = max(longest, gap)
			}
		}
		// The peak's dot hides a dozen columns of the line; a label would hide a hundred.
		if longest > 16 {
			t.Errorf("peak at %d: the reserved line is hidden in %d adjacent pixel columns between x=%d and x=%d", peakAt, longest, first, last)
		}
	}
}

func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return img
}

// columnsWith reports, per pixel column, whether some pixel in it is (almost exactly) colour c.
func columnsWith(img image.Image, c color.RGBA) []bool {
	b := img.Bounds()
	out := make([]bool, b.Dx())
	for x := b.Min.X; x < b.Max.X; x++ {
		for y := b.Min.Y; y < b.Max.Y; y++ {
			if near(img.At(x, y), c) {
				out[x-b.Min.X] = true
				break
			}
		}
	}
	return out
}

// TestBarLegendBesideNotes draws bars of one size whose notes reach far right, with a legend, and checks that the
// legend lies right of the longest bar and its note: drawn inside the plot it covered the notes of long bars.
func TestBarLegendBesideNotes(t *testing.T) {
	bar := color.RGBA{0x12, 0x34, 0x56, 0xff}
	legend := color.RGBA{0xd0, 0x20, 0xa0, 0xff}
	const note = "×12  Parameters/Weights"
	c := BarChart{Title: "Top 48 allocations: x.pickle, device 0", XLabel: "size",
		Legend: []LegendEntry{{Label: "Parameters/Weights", Color: legend}}}
	for range 4 {
		c.Labels = append(c.Labels, "model.py:1:f")
		c.Values = append(c.Values, 64<<20)
		c.Colors = append(c.Colors, bar)
		c.Notes = append(c.Notes, note)
	}
	path := filepath.Join(outDir(t), "bar_legend.png")
	if err := Bars(path, c); err != nil {
		t.Fatal(err)
	}
	img := decodePNG(t, path)
	barEnd := -1
	for x, ok := range columnsWith(img, bar) {
		if ok {
			barEnd = x
		}
	}
	// The legend's box, and its label beside it (gonum's legend puts the label left of the box, ours right).
	b := img.Bounds()
	boxMinX, boxMinY, boxMaxY := b.Max.X, b.Max.Y, -1
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			if near(img.At(x, y), legend) {
				boxMinX, boxMinY, boxMaxY = min(boxMinX, x), min(boxMinY, y), max(boxMaxY, y)
			}
		}
	}
	if barEnd < 0 || boxMaxY < 0 {
		t.Fatalf("bars end at x=%d, legend box rows up to %d: one is missing", barEnd, boxMaxY)
	}
	legendLeft := boxMinX
	for y := boxMinY; y <= boxMaxY; y++ {
		for x := max(boxMinX-px(12), 0); x < boxMinX-1; x++ {
			if r, g, bl, _ := img.At(x, y).RGBA(); r>>8 < 100 && g>>8 < 100 && bl>>8 < 100 {
				legendLeft = boxMinX - px(float64(textStyle(10).Width("Parameters/Weights"))) - px(6) // text just left of the box
			}
		}
	}
	noteEnd := barEnd + px(float64(textStyle(9).Width("64.0 MiB  "+note)))
	if legendLeft <= noteEnd {
		t.Errorf("the legend starts near x=%d, inside the longest bar's note, which ends near x=%d", legendLeft, noteEnd)
	}
}

// near reports whether pixel p is (almost exactly) colour c.
func near(p color.Color, c color.RGBA) bool {
	r, g, b, _ := p.RGBA()
	d := func(a uint32, b uint8) bool { x := int(a>>8) - int(b); return x > -12 && x < 12 }
	return d(r, c.R) && d(g, c.G) && d(b, c.B)
}
