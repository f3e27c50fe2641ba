package memtimeline_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/input"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/memtimeline"
)

// The timeline fixtures hold the same history twice. Raw events (t_ns, action, bytes, category):
//
//	[-1, 1, 1000, 0]      pre-existing parameter
//	[100500, 2, 400, 4]   activation, t = 100 µs
//	[100900, 2, 100, 3]   temporary, t = 100 µs
//	[200000, 3, -400, 4]  version bump: activation -> gradient
//	[200000, 3, 400, 5]
//	[300100, 4, -100, 3]  temporary freed
//	[400000, 2, 2000, 1]  optimizer state
//	[500000, 4, -2000, 1] optimizer state freed
//
// Coalesced by µs as PyTorch's plot export does, with t = -1 replaced by the smallest positive time (100):
// times [100, 100, 200, 300, 400, 500], totals 1000, 1500, 1500, 1400, 3400, 1400; the peak is 3400 at point 4.
var wantTimelineTimes = []int64{100, 100, 200, 300, 400, 500}

var wantTimelineBytes = [][]int64{
	{1000, 1000, 1000, 1000, 1000, 1000}, // Parameter
	{0, 0, 0, 0, 2000, 0},                // Optimizer state
	{0, 0, 0, 0, 0, 0},                   // Input
	{0, 100, 100, 0, 0, 0},               // Temporary
	{0, 400, 0, 0, 0, 0},                 // Activation
	{0, 0, 400, 400, 400, 400},           // Gradient
	{0, 0, 0, 0, 0, 0},                   // Autograd detail
	{0, 0, 0, 0, 0, 0},                   // Unknown
}

func TestTimelineForms(t *testing.T) {
	for _, tc := range []struct {
		file, form string
		events     int
	}{
		{"small_memory_timeline.json", "plot", 0},
		{"small.raw.json.gz", "raw", 8},
	} {
		t.Run(tc.form, func(t *testing.T) {
			in, err := load.DecodeFile(context.Background(), filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			tl := in.Timeline
			if in.Format != memtimeline.Format || tl == nil || tl.Form != tc.form || tl.Events != tc.events {
				t.Fatalf("format %q form %q events %d", in.Format, tl.Form, tl.Events)
			}
			if !reflect.DeepEqual(tl.TimesUS, wantTimelineTimes) {
				t.Errorf("times = %v, want %v", tl.TimesUS, wantTimelineTimes)
			}
			if !reflect.DeepEqual(tl.Bytes, wantTimelineBytes) {
				t.Errorf("bytes = %v, want %v", tl.Bytes, wantTimelineBytes)
			}
			if !reflect.DeepEqual(tl.Categories, memtimeline.Categories[:]) {
				t.Errorf("categories = %v", tl.Categories)
			}
			if got := tl.Total(4); got != 3400 {
				t.Errorf("total at point 4 = %d, want 3400", got)
			}
			if tc.form == "raw" && tl.ActionCounts != [5]int{0, 1, 3, 2, 2} {
				t.Errorf("action counts = %v, want [0 1 3 2 2]", tl.ActionCounts)
			}
			if len(tl.Warnings) != 0 {
				t.Errorf("warnings = %v", tl.Warnings)
			}
		})
	}
}

func TestTimelineSingleRawEvent(t *testing.T) {
	in, err := load.Decode(context.Background(), "one.raw.json", strings.NewReader(`[[5000, 2, 64, 4]]`))
	if err != nil {
		t.Fatal(err)
	}
	if tl := in.Timeline; tl.Form != "raw" || !reflect.DeepEqual(tl.TimesUS, []int64{5}) || tl.Bytes[4][0] != 64 {
		t.Errorf("timeline = %+v", tl)
	}
}

func TestTimelineNegativeWarning(t *testing.T) {
	in, err := load.Decode(context.Background(), "neg.json", strings.NewReader(`[[1, 2], [[0, 5, 0], [0, -3, 0]]]`))
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Timeline.Warnings) != 1 || !strings.Contains(in.Timeline.Warnings[0], "Parameter goes negative (-3 bytes at point 1)") {
		t.Errorf("warnings = %v", in.Timeline.Warnings)
	}
}

func TestTimelineErrors(t *testing.T) {
	tests := []struct {
		name, json, field, msg string
	}{
		{"rows vs times", `[[1, 2, 3], [[0, 1], [0, 2]]]`, "[1]", "2 size rows for 3 times"},
		{"too many rows", `[[1], [[0, 1], [0, 2]]]`, "[1][1]", "more size rows than the 1 times"},
		{"ragged rows", `[[1, 2], [[0, 1, 2], [0, 2]]]`, "[1][1]", "row has 2 numbers, earlier rows have 3"},
		{"short row", `[[1], [[0]]]`, "[1][0]", "baseline and at least one category"},
		{"string time", `[[1, "x"], [[0, 1], [0, 2]]]`, "[0][1]", `want a number, got string "x"`},
		{"float size", `[[1], [[0, 1.5]]]`, "[1][0][1]", "not an integer (1.5)"},
		{"empty", `[[], []]`, "", "no points"},
		{"raw bad action", `[[1, 9, 4, 0], [2, 2, 4, 0]]`, "[0][1]", "unknown action 9"},
		{"raw bad category", `[[1, 2, 4, 0], [2, 2, 4, 8]]`, "[1][3]", "unknown category 8"},
		{"raw short event", `[[1, 2, 4, 0], [2, 2, 4]]`, "[1]", "4 numbers"},
		// Past the second event the element paths are built only when decoding fails; they must still name it.
		{"raw string bytes", `[[1, 2, 4, 0], [2, 2, 4, 0], [3, 2, "x", 0]]`, "[2][2]", `want a number, got string "x"`},
		{"raw long event", `[[1, 2, 4, 0], [2, 2, 4, 0], [3, 2, 4, 0, 1, 2]]`, "[2]", "more than 5 elements"},
		{"raw non-list event", `[[1, 2, 4, 0], [2, 2, 4, 0], 7]`, "[2]", "want an array, got number 7"},
		{"raw bad time", `[[-5, 2, 4, 0], [2, 2, 4, 0]]`, "[0][0]", "negative time"},
		{"single non-event", `[[1, 2, 3]]`, "", "single list of 3 numbers"},
		{"trailing", `[[1], [[0, 1]]] 5`, "", "trailing data"},
		{"second element", `[[1], 5]`, "[1]", "want an array"},
		// Figures past 2^53 bytes (8 PiB) would wrap a point's total: with 2^63−1 at one point the report said
		// "peak 1000 B" (the other point's total).
		{"size near 2^63", `[[1, 2], [[0, 9223372036854775807, 1001], [0, 500, 500]]]`, "[1][0][1]", "9223372036854775807 bytes is beyond the 2^53-byte limit"},
		{"negative size past 2^53", `[[1], [[0, -9007199254740993]]]`, "[1][0][1]", "beyond the 2^53-byte limit"},
		{"raw bytes past 2^53", `[[1, 2, 9007199254740993, 0], [2, 2, 4, 0]]`, "[0][2]", "beyond the 2^53-byte limit"},
		{"raw running total past 2^53", `[[1, 2, 9007199254740992, 4], [2, 2, 9007199254740992, 4]]`, "", "category Activation adds up to 18014398509481984 bytes at 0 µs"},
		// JSON syntax as encoding/json checks it, in the number lists read without it.
		// (Past the first line, which the sniffer checks with encoding/json.)
		{"trailing comma", "[[1,\n 2,], [[0, 1], [0, 2]]]", "[0][2]", "byte 8: [0][2]: malformed JSON: invalid character ']'"},
		{"missing comma", "[[1,\n 2 3], [[0, 1], [0, 2]]]", "[0][2]", "byte 8: [0][2]: malformed JSON: invalid character '3' after an array element"},
		{"leading zero", "[[1,\n 01], [[0, 1]]]", "[0][1]", "malformed JSON: invalid number \"01\""},
		{"bare minus", "[[1, 2, 3, 4,\n -], [[0, 1]]]", "[0][4]", "malformed JSON: invalid number \"-\""},
		{"integer past int64", `[[1], [[0, 9223372036854775808]]]`, "[1][0][1]", "integer out of range (9223372036854775808)"},
		{"exponent", `[[1e3], [[0, 1]]]`, "[0][0]", "not an integer (1e3)"},
		{"unterminated", `[[1], [[0, 1]`, "[1]", "unexpected end of file"},
		{"object element", `[[1, {}], [[0, 1]]]`, "[0][1]", "want a number, got an object"},
		{"null element", `[[1, null], [[0, 1]]]`, "[0][1]", "want a number, got null"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load.Decode(context.Background(), "tl.json", strings.NewReader(tc.json))
			var de *input.Error
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want *input.Error", err)
			}
			if de.Field != tc.field || !strings.Contains(de.Error(), tc.msg) {
				t.Errorf("err = %q (field %q), want field %q and %q", err, de.Field, tc.field, tc.msg)
			}
		})
	}
}

// TestTimelineLarge: a generated timeline of 200,000 points decodes to exactly the numbers written, whatever the
// spacing, and every point's total is the sum of its categories (the scanner reads plain integers without
// encoding/json; this checks it against the values it was given).
func TestTimelineLarge(t *testing.T) {
	const n = 200_000
	var b strings.Builder
	b.WriteString("[[")
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Itoa(i * 3))
	}
	b.WriteString("],\n [")
	for i := range n {
		if i > 0 {
			b.WriteString(",\n  ")
		}
		fmt.Fprintf(&b, "[0,%d, %d ,-%d]", i%1000, (i*7919)%(1<<40), i)
	}
	b.WriteString("]]\n")
	in, err := load.Decode(context.Background(), "large.json", strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	tl := in.Timeline
	if tl.Points() != n || len(tl.Bytes) != 3 {
		t.Fatalf("%d points, %d categories", tl.Points(), len(tl.Bytes))
	}
	for i := range n {
		a, c, d := int64(i%1000), int64((i*7919)%(1<<40)), -int64(i)
		if tl.TimesUS[i] != int64(i*3) || tl.Bytes[0][i] != a || tl.Bytes[1][i] != c || tl.Bytes[2][i] != d || tl.Total(i) != a+c+d {
			t.Fatalf("point %d: time %d bytes %d %d %d", i, tl.TimesUS[i], tl.Bytes[0][i], tl.Bytes[1][i], tl.Bytes[2][i])
		}
	}
}
