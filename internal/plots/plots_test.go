package plots

import (
	"bytes"
	"flag"
	"fmt"
	"image"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/memscan/memscan/internal/units"
)

var plotDir = flag.String("plotdir", "", "write the test charts into this directory for viewing")

func outDir(t *testing.T) string {
	if *plotDir != "" {
		if err := os.MkdirAll(*plotDir, 0o755); err != nil {
			t.Fatal(err)
		}
		return *plotDir
	}
	return t.TempDir()
}

// checkPNG asserts the file is a PNG of the expected pixel size and not one flat colour.
func checkPNG(t *testing.T, path string, wantW, wantH int) {
	t.Helper()
	img := decodePNG(t, path)
	b := img.Bounds()
	if wantW > 0 && (b.Dx() != wantW || b.Dy() != wantH) {
		t.Errorf("%s: %dx%d pixels, want %dx%d", path, b.Dx(), b.Dy(), wantW, wantH)
	}
	colours := map[color.RGBA]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, a := img.At(x, y).RGBA()
			colours[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), uint8(a >> 8)}] = true
		}
	}
	if len(colours) < 4 {
		t.Errorf("%s: only %d distinct colours sampled; the chart looks empty", path, len(colours))
	}
}

// px converts points to pixels at the package resolution.
func px(pt float64) int { return int(math.Round(pt * dpi / 72)) }

func TestCharts(t *testing.T) {
	dir := outDir(t)
	cats := []string{"Expert/MoE", "Attention", "Optimizer State", "Activations", "Unknown", "my_custom_thing"}
	catBytes := []float64{20 << 30, 9 << 30, 6 << 30, 3 << 30, 700 << 20, 90 << 20}
	var catColors []color.Color
	for _, c := range cats {
		catColors = append(catColors, CategoryColor(c))
	}

	tests := []struct {
		name string
		draw func(path string) error
		w, h int
	}{
		{"pies", func(path string) error {
			var slices []Slice
			for i, c := range cats {
				slices = append(slices, Slice{c, catBytes[i], catColors[i]})
			}
			return Pies(path, "Memory overview: rank0_memory_snapshot.pickle, device 0",
				PiePanel{"Reserved 40.0 GiB", []Slice{{"allocated", 36 << 30, ColorAllocated}, {"cached free", 4 << 30, ColorFree}}},
				PiePanel{"Allocated by category", slices})
		}, px(1120), px(420)},
		{"bars", func(path string) error {
			var labels []string
			var vals []float64
			var cols []color.Color
			for i := range 30 {
				labels = append(labels, fmt.Sprintf("torchtitan/models/moe/moe.py:%d:forward_%d_with_a_rather_long_name", 100+i, i))
				vals = append(vals, float64(int64(4<<30)>>(i/3)))
				cols = append(cols, catColors[i%len(cats)])
			}
			var legend []LegendEntry
			for i, c := range cats {
				legend = append(legend, LegendEntry{c, catColors[i]})
			}
			return Bars(path, BarChart{Title: "Top 30 allocations: rank0.pickle", XLabel: "size", Labels: labels, Values: vals, Colors: cols, Legend: legend})
		}, 0, 0},
		{"histograms", func(path string) error {
			var labels []string
			var counts, bytes []float64
			for i := range 24 {
				labels = append(labels, fmt.Sprintf("%d KiB", 1<<i))
				counts = append(counts, float64((i*37)%50))
				bytes = append(bytes, float64(int64((i*37)%50)<<(i+10)))
			}
			return Histograms(path, "Block sizes: rank0.pickle",
				Histogram{Title: "active allocations", Labels: labels, Counts: counts, Bytes: bytes, Color: ColorAllocated},
				Histogram{Title: "cached free blocks", Labels: labels, Counts: counts[:24], Bytes: bytes, Color: ColorFree})
		}, px(defaultWidth), px(640)},
		{"efficiency", func(path string) error {
			return Efficiency(path, "Efficiency: rank0.pickle, device 0", EfficiencyData{Reserved: 40 << 30, Allocated: 37 << 30, Requested: 36.5 * (1 << 30), Wasted: 3.5 * (1 << 30), EfficiencyPct: 91.25})
		}, px(defaultWidth), px(420)},
		{"efficiency_low", func(path string) error {
			return Efficiency(path, "Efficiency: fragmented.pickle", EfficiencyData{Reserved: 100 << 30, Allocated: 26 << 30, Requested: 25 << 30, Wasted: 75 << 30, EfficiencyPct: 25})
		}, px(defaultWidth), px(420)},
		{"timeline", func(path string) error {
			n := 400
			x := make([]float64, n)
			stacks := make([]Series, 3)
			for j := range stacks {
				stacks[j] = Series{Name: cats[j], Values: make([]float64, n), Color: catColors[j]}
			}
			alloc := Series{Name: "allocated", Values: make([]float64, n), Color: color.Black}
			res := Series{Name: "reserved", Values: make([]float64, n), Color: ColorReserved}
			peak, peakV := 0, 0.0
			for i := range n {
				x[i] = float64(i) * 0.05
				for j := range stacks {
					stacks[j].Values[i] = float64(j+1) * (1 << 30) * (1 + math.Sin(float64(i)/40+float64(j)))
				}
				s := stacks[0].Values[i] + stacks[1].Values[i] + stacks[2].Values[i]
				alloc.Values[i] = s
				res.Values[i] = 14 << 30
				if s > peakV {
					peak, peakV = i, s
				}
			}
			return MemoryOverTime(path, TimeChart{Title: "Memory over time: rank0.pickle, device 0", XLabel: "time since first event (s)", X: x,
				Stacked: stacks, Lines: []Series{alloc, res}, PeakIndex: peak, PeakValue: peakV, PeakLabel: "peak " + units.Bytes(int64(peakV))})
		}, px(1050), px(520)},
		{"grouped", func(path string) error {
			var groups []string
			res := Series{Name: "reserved", Color: ColorReserved}
			alloc := Series{Name: "allocated", Color: ColorAllocated}
			for i := range 8 {
				groups = append(groups, fmt.Sprintf("rank %d", i))
				res.Values = append(res.Values, float64(70<<30)+float64(i%3)*(2<<30))
				alloc.Values = append(alloc.Values, float64(60<<30)+float64(i%3)*(1<<30))
			}
			return GroupedBars(path, GroupedBarChart{Title: "Ranks: iteration 1", Groups: groups, Series: []Series{res, alloc}, Reference: 72 << 30, ReferenceLabel: "median reserved"})
		}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.name+".png")
			if err := tt.draw(path); err != nil {
				t.Fatal(err)
			}
			checkPNG(t, path, tt.w, tt.h)
		})
	}
}

func TestChartErrors(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.png")
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"bars without values", Bars(p, BarChart{Title: "t"}), "no bars"},
		{"bars mismatched", Bars(p, BarChart{Title: "t", Labels: []string{"a", "b"}, Values: []float64{1}}), "2 labels but 1"},
		{"timeline mismatched", MemoryOverTime(p, TimeChart{X: []float64{1, 2}, Lines: []Series{{Name: "a", Values: []float64{1}}}}), `series "a" has 1 values for 2 points`},
		{"timeline empty", MemoryOverTime(p, TimeChart{}), "no points"},
		{"grouped empty", GroupedBars(p, GroupedBarChart{}), "no data"},
		{"pies empty", Pies(p, "t"), "no panels"},
		{"unwritable", Bars(filepath.Join(dir, "missing", "x.png"), BarChart{Labels: []string{"a"}, Values: []float64{1}}), "chart: writing " + filepath.Join(dir, "missing", "x.png") + ": no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil || !strings.Contains(tt.err.Error(), tt.want) {
				t.Errorf("error = %v, want it to contain %q", tt.err, tt.want)
			}
		})
	}
}

func TestCategoryColorDeterministic(t *testing.T) {
	if CategoryColor("Expert/MoE") != CategoryColor("expert/moe") {
		t.Error("category colours should not depend on case")
	}
	if CategoryColor("Attention") == CategoryColor("Optimizer State") {
		t.Error("distinct well-known categories share a colour")
	}
	if CategoryColor("zz_user_rule") != CategoryColor("zz_user_rule") {
		t.Error("hashed colours must be stable")
	}
}

func TestUnitFor(t *testing.T) {
	tests := []struct {
		bytes float64
		want  Unit
	}{
		{0, Unit{"B", 1}}, {1023, Unit{"B", 1}}, {1536, Unit{"KiB", 1 << 10}}, {20 << 20, Unit{"MiB", 1 << 20}}, {300 << 30, Unit{"GiB", 1 << 30}},
	}
	for _, tt := range tests {
		if got := UnitFor(tt.bytes); got != tt.want {
			t.Errorf("UnitFor(%v) = %v, want %v", tt.bytes, got, tt.want)
		}
	}
}

// TestNewCanvas: a canvas of a whole number of pixels, drawn on without vgimg's copy, is vgimg's canvas of the same
// size pixel for pixel after the same drawing (a fill, a stroke, text), with the same size in points; other sizes
// are vgimg's own.
func TestNewCanvas(t *testing.T) {
	for _, tc := range []struct {
		w, h  vg.Length
		whole bool
	}{
		{900, 300, true}, {1050, 420, true}, {0.75, 0.75, true}, {1050, 520, false}, {1120, 420, false},
		{0.5, 300, false}, {0, 0, false},
	} {
		if _, _, ok := wholePixels(tc.w, tc.h); ok != tc.whole {
			t.Errorf("%v×%v points: whole pixels = %v, want %v", tc.w, tc.h, ok, tc.whole)
		}
		if tc.w == 0 {
			continue // vgimg refuses an empty canvas
		}
		got := newCanvas(tc.w, tc.h)
		want := vgimg.NewWith(vgimg.UseWH(tc.w, tc.h), vgimg.UseDPI(dpi), vgimg.UseBackgroundColor(color.White))
		for _, c := range []*vgimg.Canvas{got, want} {
			dc := draw.New(c)
			dc.SetColor(color.RGBA{0x20, 0x60, 0xa0, 0xff})
			dc.Fill(vg.Rectangle{Min: vg.Point{X: tc.w / 7, Y: tc.h / 5}, Max: vg.Point{X: tc.w / 2, Y: tc.h * 0.9}}.Path())
			dc.StrokeLine2(draw.LineStyle{Color: color.Black, Width: 1.5, Dashes: []vg.Length{4, 3}}, 0, 0, tc.w, tc.h)
			dc.FillText(textStyle(11), vg.Point{X: tc.w / 3, Y: tc.h / 2}, "peak 61.2 GiB")
		}
		gw, gh := got.Size()
		ww, wh := want.Size()
		gi, wi := got.Image().(*image.RGBA), want.Image().(*image.RGBA)
		if gw != ww || gh != wh || gi.Rect != wi.Rect || !bytes.Equal(gi.Pix, wi.Pix) {
			t.Errorf("%v×%v points: canvas %v×%v points, %v; vgimg's %v×%v, %v (pixels equal: %v)", tc.w, tc.h, gw, gh, gi.Rect,
				ww, wh, wi.Rect, bytes.Equal(gi.Pix, wi.Pix))
		}
	}
}
