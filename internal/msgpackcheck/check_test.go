package msgpackcheck

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// sample is a value with every msgpack type the library writes: integers of every width and sign, floats,
// strings and binaries past the one- and two-byte lengths, nested arrays and maps, nil and booleans, and a
// timestamp extension.
func sample(t *testing.T) []byte {
	t.Helper()
	v := map[string]any{
		"ints":   []any{0, 1, -1, -33, 127, 128, 255, 256, 65535, 65536, -129, -32769, math.MaxInt64, math.MinInt64, uint64(math.MaxUint64)},
		"floats": []any{float32(1.5), 2.25},
		"strs":   []any{"", "short", strings.Repeat("s", 40), strings.Repeat("m", 300), strings.Repeat("l", 70000)},
		"bins":   []any{[]byte{}, bytes.Repeat([]byte{1}, 300), bytes.Repeat([]byte{2}, 70000)},
		"nested": map[string]any{"a": []any{[]any{[]any{nil, true, false}}}, "big": make([]int, 70000)},
		"map16":  map[string]int{},
	}
	for i := range 20 { // past the 15 entries of a fixmap
		v["map16"].(map[string]int)[string(rune('a'+i))] = i
	}
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.SetSortMapKeys(true)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	// An extension value (msgpack's timestamp) after the map, as a second value.
	if err := enc.Encode(time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestValueLengths: every value is measured to its last byte, so the values of a file read one after the other
// (concatenated summaries) come apart exactly; nothing at all is io.EOF.
func TestValueLengths(t *testing.T) {
	data := sample(t)
	first, err := Value(bytes.NewReader(data), 0, MaxDepth)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	dec := msgpack.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	rest := dec.Buffered()
	tail, _ := io.ReadAll(rest)
	if want := int64(len(data) - len(tail)); first != want {
		t.Errorf("first value: %d bytes, the decoder read %d", first, want)
	}
	second, err := Value(bytes.NewReader(data[first:]), first, MaxDepth)
	if err != nil || first+second != int64(len(data)) {
		t.Errorf("second value: %d bytes (%v), %d left", second, err, int64(len(data))-first)
	}
	if _, err := Value(bytes.NewReader(nil), 0, MaxDepth); err != io.EOF {
		t.Errorf("no data: %v, want io.EOF", err)
	}
}

// TestValueCutShort: the sample cut at every length is an error, never a panic or a value, and names a byte
// offset inside the data.
func TestValueCutShort(t *testing.T) {
	data := sample(t)
	n, err := Value(bytes.NewReader(data), 0, MaxDepth)
	if err != nil {
		t.Fatal(err)
	}
	for cut := int64(1); cut < n; cut += 1 + cut/50 {
		_, err := Value(bytes.NewReader(data[:cut]), 0, MaxDepth)
		var e *Error
		if !errors.As(err, &e) || e.Offset > cut || !strings.Contains(e.Msg, "cut short") {
			t.Fatalf("cut at %d: %v", cut, err)
		}
	}
}

// TestValueFaults: what a decoder must not be given, each with the message and byte offset it gets.
func TestValueFaults(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"nested arrays past the bound", bytes.Repeat([]byte{0x91}, 10<<20), "byte 32: nested deeper than 32 levels"},
		{"nested maps past the bound", bytes.Repeat([]byte{0x81, 0xa1, 'k'}, 100), "byte 96: nested deeper than 32 levels"},
		{"reserved type byte", []byte{0x92, 0x01, 0xc1}, "byte 2: 0xc1 is not a msgpack type"},
		{"string longer than the data", []byte{0xdb, 0xff, 0xff, 0xff, 0xff, 'a'}, "byte 6: cut short: a string of 4294967295 bytes starts at byte 0 but only 1 follow"},
		{"array longer than the data", []byte{0xdd, 0x7f, 0xff, 0xff, 0xff, 0x01}, "byte 6: cut short: the data ends inside an array of 2147483647 elements that starts at byte 0 (1 read)"},
		{"map cut inside a value", []byte{0x82, 0xa1, 'a', 0x01, 0xa1, 'b'}, "byte 6: cut short: the data ends inside a map of 2 entries that starts at byte 0 (1 read)"},
		{"length cut short", []byte{0xda, 0x01}, "byte 2: cut short: the data ends"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Value(bytes.NewReader(tc.data), 0, MaxDepth)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q…", err, tc.want)
			}
		})
	}
	// Exactly at the bound is fine; offsets count from where the reader starts in its file.
	deep := append(bytes.Repeat([]byte{0x91}, MaxDepth), 0xc0)
	if n, err := Value(bytes.NewReader(deep), 0, MaxDepth); err != nil || n != int64(len(deep)) {
		t.Errorf("%d levels: %d, %v", MaxDepth, n, err)
	}
	if _, err := Value(bytes.NewReader([]byte{0xc1}), 1000, MaxDepth); err == nil || !strings.HasPrefix(err.Error(), "byte 1000:") {
		t.Errorf("offset: %v", err)
	}
}
