package plots

import (
	"path/filepath"
	"testing"
)

func TestCompareBars(t *testing.T) {
	tests := []struct {
		name    string
		c       CompareChart
		wantErr bool
	}{
		{"ok", CompareChart{Title: "categories", Labels: []string{"activation", "optimizer", "unknown"},
			Before: []float64{3 << 30, 1 << 30, 0}, After: []float64{2 << 30, 1 << 30, 5 << 20}, BeforeName: "a.pickle", AfterName: "b.pickle"}, false},
		{"empty", CompareChart{Title: "none"}, true},
		{"mismatch", CompareChart{Title: "bad", Labels: []string{"a", "b"}, Before: []float64{1}, After: []float64{1, 2}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.png")
			err := CompareBars(path, tc.c)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			img := decodePNG(t, path)
			if b := img.Bounds(); b.Dx() < 600 || b.Dy() < 300 {
				t.Errorf("image %v too small", b)
			}
		})
	}
}
