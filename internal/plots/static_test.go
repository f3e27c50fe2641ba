package plots

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestStaticCharts(t *testing.T) {
	dir := t.TempDir()
	bar := filepath.Join(dir, "bar.png")
	err := StackedBars(bar, StackedBarChart{Title: "per stage", Groups: []string{"stage 0", "stage 1"},
		Series: []Series{{Name: "weights", Values: []float64{4 << 30, 3 << 30}}, {Name: "activations", Values: []float64{20 << 30, 12 << 30}}},
		Limit:  75 << 30, LimitLabel: "usable", Measured: []float64{23 << 30, 0}, MeasuredLabel: "measured peak"})
	if err != nil {
		t.Fatal(err)
	}
	roof := filepath.Join(dir, "roof.png")
	err = StaticRoofline(roof, "roofline", 989, 3.35, []StaticRooflinePoint{
		{Label: "matmul", Intensity: 1000, TFLOPS: 989}, {Label: "norm", Intensity: 1.2, TFLOPS: 4}, {Label: "decode", Intensity: 4, TFLOPS: 13.4, Memory: true}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{bar, roof} {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) || len(b) < 2000 {
			t.Errorf("%s: not a drawn PNG (%d bytes, %v)", p, len(b), err)
		}
	}
	if err := StackedBars(bar, StackedBarChart{Title: "x"}); err == nil {
		t.Error("empty chart accepted")
	}
	if err := StackedBars(bar, StackedBarChart{Title: "x", Groups: []string{"a"}, Series: []Series{{Name: "w", Values: []float64{1, 2}}}}); err == nil {
		t.Error("want an error for mismatched series length")
	}
	if err := StackedBars(bar, StackedBarChart{Title: "x", Groups: []string{"a"}, Series: []Series{{Name: "w", Values: []float64{1}}}, Measured: []float64{1, 2}}); err == nil {
		t.Error("mismatched measured values accepted")
	}
	if err := StaticRoofline(roof, "x", 0, 1, nil); err == nil {
		t.Error("zero peak accepted")
	}
}
