package analyze

import "testing"

func TestFormatMeasure(t *testing.T) {
	tests := []struct {
		v    float64
		unit string
		want string
	}{
		{104857600, UnitBytes, "100.0 MiB"}, // 100 × 2^20
		{2097152000, UnitBytes, "2.0 GiB"},  // 2000 MiB = 1.95 GiB, printed with one decimal
		{12.754, UnitPercent, "12.75%"},
		{10, UnitPercent, "10.00%"},
		{3, "", "3"},
		{1.256, "", "1.26"},
	}
	for _, tc := range tests {
		if got := FormatMeasure(tc.v, tc.unit); got != tc.want {
			t.Errorf("FormatMeasure(%v, %q) = %q, want %q", tc.v, tc.unit, got, tc.want)
		}
	}
}
