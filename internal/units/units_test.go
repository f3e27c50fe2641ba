package units

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"testing"
)

func TestBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"},
		{512, "512 B"},
		{1023, "1023 B"},
		{1024, "1.0 KiB"},
		{1536, "1.5 KiB"},
		{798_571_520, "761.6 MiB"}, // 798571520 / 2^20 = 761.578...
		{1<<20 - 1, "1.0 MiB"},     // 1023.999 KiB rounds to 1024.0, so the next unit is used
		{-(2 << 30), "-2.0 GiB"},
		{-2048, "-2.0 KiB"},
		{12_884_901_888, "12.0 GiB"},
		{13_207_024_640, "12.3 GiB"}, // 12.2998 GiB
		{1 << 50, "1.0 PiB"},
		{math.MinInt64, "-8.0 EiB"},
		{math.MaxInt64, "8.0 EiB"},
	} {
		if got := Bytes(tc.n); got != tc.want {
			t.Errorf("Bytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestPercentAndShare(t *testing.T) {
	for _, tc := range []struct {
		part, whole int64
		share       float64
		text        string
	}{
		{466_010_624, 1_264_582_656, 36.85094, "36.85 %"},
		{1, 3, 33.33333, "33.33 %"},
		{5, 0, 0, "-"},
		{5, -1, 0, "-"},
	} {
		if got := Share(tc.part, tc.whole); math.Abs(got-tc.share) > 1e-4 {
			t.Errorf("Share(%d, %d) = %v, want %v", tc.part, tc.whole, got, tc.share)
		}
		if got := Percent(tc.part, tc.whole); got != tc.text {
			t.Errorf("Percent(%d, %d) = %q, want %q", tc.part, tc.whole, got, tc.text)
		}
	}
}

func TestPlural(t *testing.T) {
	if got := Plural(1, "layer", "layers") + ", " + Plural(int64(0), "head", "heads") + ", " + Plural(3, "micro-batch", "micro-batches"); got != "1 layer, 0 heads, 3 micro-batches" {
		t.Errorf("got %q", got)
	}
}

func TestMedian(t *testing.T) {
	in := []int64{9, 1, 4}
	if got := Median(in); got != 4 {
		t.Errorf("odd count: %d, want 4", got)
	}
	if in[0] != 9 {
		t.Error("Median sorted its argument")
	}
	if got := Median([]int64{1, 4, 2, 9}); got != 3 { // (2+4)/2
		t.Errorf("even count: %d, want 3", got)
	}
	if got := Median([]int64{1, 2}); got != 1 { // 1.5 rounded down
		t.Errorf("even count, odd sum: %d, want 1", got)
	}
	if got := Median([]int64{math.MaxInt64, math.MaxInt64 - 2}); got != math.MaxInt64-1 {
		t.Errorf("near overflow: %d", got)
	}
	if got := Median([]float64{1, 2}); got != 1.5 {
		t.Errorf("float: %v, want 1.5", got)
	}
	if got := Median[float64](nil); got != 0 {
		t.Errorf("empty: %v", got)
	}
}

func TestWriteJSON(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, map[string]any{"a": []int{1}, "b": "<x>"}); err != nil {
		t.Fatal(err)
	}
	want := "{\n  \"a\": [\n    1\n  ],\n  \"b\": \"<x>\"\n}\n"
	if b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}

// rawJSON is a json.Marshaler whose output holds whitespace, which the encoder compacts before WriteJSON indents it.
type rawJSON string

func (r rawJSON) MarshalJSON() ([]byte, error) { return []byte(r), nil }

// TestWriteJSONAsEncoder: WriteJSON's output is byte for byte encoding/json's Encoder with SetIndent("", "  "), on
// values whose strings hold brackets, commas, colons, quotes and backslashes, with empty and nested objects and
// arrays, a Marshaler's spaced output, and one long enough to be written in several chunks.
func TestWriteJSONAsEncoder(t *testing.T) {
	long := make([]map[string]any, 5000)
	for i := range long {
		long[i] = map[string]any{"i": i, "s": `a "quoted" \ [x], {y}: z`}
	}
	for name, v := range map[string]any{
		"scalars":   []any{nil, true, false, 0, -1.5e300, "", "ü\u2028"},
		"empty":     map[string]any{"a": []int{}, "b": map[string]int{}, "c": [][]int{{}}, "d": ""},
		"strings":   map[string]string{`k"1`: `v\"[{,:}]`, "\\": "\\\"", "<&>": "\n\t"},
		"nested":    map[string]any{"x": []any{map[string]any{"y": []any{[]any{1, 2}, map[string]any{}}}}},
		"marshaler": map[string]any{"r": rawJSON(` { "a" : [ 1 , 2 ] , "b" : { } } `)},
		"long":      long,
		"top array": []int{1, 2, 3},
		"top empty": map[string]int{},
	} {
		t.Run(name, func(t *testing.T) {
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetIndent("", "  ")
			enc.SetEscapeHTML(false)
			if err := enc.Encode(v); err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			if err := WriteJSON(&got, v); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("got %d bytes, want %d:\n%.300q\nwant\n%.300q", got.Len(), want.Len(), got.String(), want.String())
			}
			// The state carries across writes: one byte at a time gives the same.
			var compact bytes.Buffer
			cenc := json.NewEncoder(&compact)
			cenc.SetEscapeHTML(false)
			if err := cenc.Encode(v); err != nil {
				t.Fatal(err)
			}
			var bytewise bytes.Buffer
			iw := &indentWriter{w: &bytewise}
			for _, c := range compact.Bytes() {
				if _, err := iw.Write([]byte{c}); err != nil {
					t.Fatal(err)
				}
			}
			if err := iw.flush(); err != nil || !bytes.Equal(bytewise.Bytes(), want.Bytes()) {
				t.Errorf("written a byte at a time: %v, %d bytes, want %d", err, bytewise.Len(), want.Len())
			}
		})
	}
}

func TestSignedBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "0 B"}, {512, "+512 B"}, {-512, "-512 B"}, {3 << 29, "+1.5 GiB"}, {-(3 << 29), "-1.5 GiB"}} {
		if got := SignedBytes(tc.n); got != tc.want {
			t.Errorf("SignedBytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestParseBytes(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"150754820096", 150754820096}, {"80GB", 80e9}, {"80 gb", 80e9}, {"80G", 80e9}, {"0.5GiB", 1 << 29},
		{"512KiB", 512 << 10}, {"2MB", 2e6}, {"1TiB", 1 << 40}, {"100B", 100},
	} {
		got, err := ParseBytes(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "GB", "-5GB", "0", "1e30TB", "NaN", "eighty", "5XB", "0.5"} {
		if _, err := ParseBytes(bad); err == nil {
			t.Errorf("ParseBytes(%q) accepted", bad)
		}
	}
}

// TestPyTorchBytes: c10's format_size writes up to 1024 bytes as bytes, then KiB up to 1 MiB, MiB up to 1 GiB and
// GiB beyond, with two decimals; the expected strings are worked out by hand from that rule.
func TestPyTorchBytes(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{
		{512, "512 bytes"}, {1024, "1024 bytes"}, {1025, "1.00 KiB"}, {1536, "1.50 KiB"}, {1 << 20, "1024.00 KiB"},
		{3 << 19, "1.50 MiB"}, {1 << 30, "1024.00 MiB"}, {7 << 28, "1.75 GiB"}, {1342177280, "1.25 GiB"},
	} {
		if got := PyTorchBytes(c.n); got != c.want {
			t.Errorf("PyTorchBytes(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}

func TestTerminalEscapes(t *testing.T) {
	for _, tc := range []struct{ in, terminal, oneLine string }{
		{"model.py:10:forward", "model.py:10:forward", "model.py:10:forward"},
		{"a\x1b[2Jb", `a\x1b[2Jb`, `a\x1b[2Jb`},
		{"x\u009b31my", `x\u009b31my`, `x\u009b31my`},
		{"bell\a del\x7f", `bell\x07 del\x7f`, `bell\x07 del\x7f`},
		{"bad\xffbyte", `bad\xffbyte`, `bad\xffbyte`},
		{"two\nlines\tand\rcr", "two\nlines\tand\\rcr", `two\nlines\tand\rcr`},
		{"ünïcode ✓", "ünïcode ✓", "ünïcode ✓"},
	} {
		if got := Terminal(tc.in); got != tc.terminal {
			t.Errorf("Terminal(%q) = %q, want %q", tc.in, got, tc.terminal)
		}
		if got := OneLine(tc.in); got != tc.oneLine {
			t.Errorf("OneLine(%q) = %q, want %q", tc.in, got, tc.oneLine)
		}
	}
}

// TestPercentile: the p-th percentile is the sorted value at index ⌊(n−1)·p/100⌋, checked against exact
// rational arithmetic for counts up to 2^50, where float64 products round; always one of the values.
func TestPercentile(t *testing.T) {
	v := []int64{70, 10, 200, 40, 30, 60, 20, 50} // sorted: 10 20 30 40 50 60 70 200
	for _, tc := range []struct {
		p    int
		want int64
	}{{0, 10}, {50, 40}, {90, 70}, {99, 70}, {100, 200}, {-5, 10}, {150, 200}} {
		if got := Percentile(v, tc.p); got != tc.want {
			t.Errorf("p%d = %d, want %d", tc.p, got, tc.want)
		}
	}
	if v[0] != 70 {
		t.Error("Percentile sorted its argument")
	}
	if Percentile(nil, 50) != 0 || PercentileIndex(0, 50) != -1 {
		t.Error("no values: want 0 and index −1")
	}
	for _, n := range []int{1, 2, 3, 99, 100, 101, 100000, 100001, 1 << 40, 1<<50 + 7} {
		for p := 0; p <= 100; p++ {
			want := big.NewInt(int64(n - 1))
			want.Mul(want, big.NewInt(int64(p)))
			want.Div(want, big.NewInt(100))
			if got := PercentileIndex(n, p); int64(got) != want.Int64() || got < 0 || got >= n {
				t.Fatalf("PercentileIndex(%d, %d) = %d, want %s", n, p, got, want)
			}
		}
	}
}

func TestFirstMax(t *testing.T) {
	for _, tc := range []struct {
		v    []int64
		want int
	}{
		{nil, -1},
		{[]int64{5}, 0},
		{[]int64{1, 3, 3, 2}, 1},
		{[]int64{-4, -2, -2}, 1},
		{[]int64{7, 1, 7}, 0},
		{[]int64{0, 0, 1}, 2},
	} {
		if got := FirstMax(tc.v); got != tc.want {
			t.Errorf("FirstMax(%v) = %d, want %d", tc.v, got, tc.want)
		}
	}
}
