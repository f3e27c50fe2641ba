package bytesize

import "testing"

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1048576", 1 << 20, true},
		{"64MiB", 64 << 20, true},
		{"64mib", 64 << 20, true},
		{" 8 GiB ", 8 << 30, true},
		{"1.5GiB", 3 << 29, true},
		{"2GB", 2e9, true},
		{"100MB", 1e8, true},
		{"512KiB", 512 << 10, true},
		{"1TiB", 1 << 40, true},
		{"10B", 10, true},
		{"0", 0, false},
		{"-1GiB", 0, false},
		{"lots", 0, false},
		{"NaN", 0, false},
		{"0.1B", 0, false},
		{"9000000TiB", 0, false}, // past 2^63
		{"Inf", 0, false},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("Parse(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{64 << 20, "64MiB"},
		{8 << 30, "8GiB"},
		{12637433856, "11.8GiB"},
		{1536, "1.5KiB"},
		{1000, "1000"},
		{3 << 40, "3TiB"},
	}
	for _, tt := range tests {
		if got := Format(tt.n); got != tt.want {
			t.Errorf("Format(%d) = %q, want %q", tt.n, got, tt.want)
		}
		// What Format prints reads back within its rounding (a twentieth of the unit).
		if back, err := Parse(Format(tt.n)); err != nil || back < tt.n-tt.n/20 || back > tt.n+tt.n/20 {
			t.Errorf("Parse(Format(%d)) = %d, %v", tt.n, back, err)
		}
	}
}
