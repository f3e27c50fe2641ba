package plots

import (
	"image/color"
	"path/filepath"
	"testing"
)

// threeRows is 3 → 2 GiB of activations, 1 → 1 GiB of optimizer state and 0 → 5 MiB unknown; the largest value
// is 3 GiB, so the axis is in GiB.
var threeRows = CompareChart{Title: "categories", Labels: []string{"activation", "optimizer", "unknown"},
	Before: []float64{3 << 30, 1 << 30, 0}, After: []float64{2 << 30, 1 << 30, 5 << 20}, BeforeName: "a.pickle", AfterName: "b.pickle"}

func TestCompareBars(t *testing.T) {
	tests := []struct {
		name    string
		c       CompareChart
		wantErr bool
	}{
		{"ok", threeRows, false},
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

// TestCompareBarPairs checks the bars CompareBars draws: positions top-down, lengths in GiB, the colour of
// the direction of change and the notes, all worked out by hand from threeRows.
func TestCompareBarPairs(t *testing.T) {
	unit := UnitFor(3 << 30)
	if unit.Name != "GiB" {
		t.Fatalf("unit %s, want GiB", unit.Name)
	}
	want := []struct {
		pos, value float64
		color      color.Color
		note       string
	}{
		{2.19, 3, ColorBefore, "3.0 GiB"},
		{1.81, 2, ColorShrank, "2.0 GiB  (−1.0 GiB)"},
		{1.19, 1, ColorBefore, "1.0 GiB"},
		{0.81, 1, ColorBefore, "1.0 GiB  (unchanged)"}, // no change, no colour of one
		{0.19, 0, ColorBefore, "0 B"},
		{-0.19, 5.0 / 1024, ColorGrew, "5.0 MiB  (+5.0 MiB)"},
	}
	got := compareBarPairs(threeRows, unit)
	if len(got) != len(want) {
		t.Fatalf("%d bars, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if d := g.pos - w.pos; d > 1e-12 || d < -1e-12 || g.value != w.value || g.color != w.color || g.note != w.note {
			t.Errorf("bar %d = {pos %v value %v colour %v note %q}, want {%v %v %v %q}", i, g.pos, g.value, g.color, g.note, w.pos, w.value, w.color, w.note)
		}
	}
}
