package plots

import (
	"path/filepath"
	"testing"
)

func TestCalibrationCharts(t *testing.T) {
	tests := []struct {
		name    string
		draw    func(path string) error
		wantErr bool
	}{
		{"components", func(p string) error {
			return CalibrationComponents(p, "components", []string{"peak_allocated", "weights"}, []float64{5 << 30, 1 << 30},
				[]float64{4 << 30, 1 << 30}, []float64{4.2 * (1 << 30), 1 << 30})
		}, false},
		{"components-no-corrected", func(p string) error {
			return CalibrationComponents(p, "components", []string{"a"}, []float64{1 << 20}, []float64{2 << 20}, nil)
		}, false},
		{"components-mismatch", func(p string) error {
			return CalibrationComponents(p, "bad", []string{"a", "b"}, []float64{1}, []float64{1, 2}, nil)
		}, true},
		{"scatter", func(p string) error {
			return CalibrationScatter(p, "scatter", []ScatterRun{{"a", 5 << 30, 4 << 30, 4 << 30}, {"b", 1 << 30, 0, 0.9 * (1 << 30)}}, 0.1)
		}, false},
		{"scatter-empty", func(p string) error { return CalibrationScatter(p, "none", nil, 0.1) }, true},
		{"scatter-zero", func(p string) error { return CalibrationScatter(p, "zero", []ScatterRun{{"a", 0, 0, 5}}, 0.1) }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.png")
			err := tc.draw(path)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			img := decodePNG(t, path)
			if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 400 {
				t.Errorf("image %v too small", b)
			}
		})
	}
}
