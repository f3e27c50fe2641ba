package memtimeline

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/memscan/memscan/internal/input"
)

// FuzzDecodeTimeline checks the timeline scanner against encoding/json, the reference it replaces: whatever it
// accepts is valid JSON whose numbers are the ones decoded (times, and sizes or events), within MaxBytes, with
// each point's total the sum of its categories; whatever it refuses is an *input.Error, never a panic or a hang.
func FuzzDecodeTimeline(f *testing.F) {
	for _, s := range []string{
		`[[1, 2, 3], [[0, 1, 2], [0, 3, 4], [0, 5, 6]]]`,
		`[[-1, 1, 10, 0], [5000, 4, -10, 0]]`,
		`[[5000, 2, 64, 4]]`,
		"[[1,\n 2 ], [[0, -9007199254740992, 5], [0, 1, 1]]]\n",
		`[[1], [[0, 9007199254740993]]]`,
		`[[1, 2,], [[0, 1]]]`,
		`[[], []]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := input.NewJSONStream(context.Background(), "fuzz.json", bytes.NewReader(data))
		for range 2 {
			if tok, err := s.Token(""); err != nil || tok != json.Delim('[') {
				return
			}
		}
		tl, err := DecodeRest(s)
		if err != nil {
			if _, ok := err.(*input.Error); !ok {
				t.Fatalf("error %T %v, want *input.Error", err, err)
			}
			return
		}
		var ref []json.RawMessage
		if err := json.Unmarshal(data, &ref); err != nil {
			t.Fatalf("accepted what encoding/json refuses (%v): %q", err, data)
		}
		var first []json.Number
		if err := json.Unmarshal(ref[0], &first); err != nil {
			t.Fatalf("first element: %v", err)
		}
		switch tl.Form {
		case "plot":
			var rows [][]json.Number
			if err := json.Unmarshal(ref[1], &rows); err != nil || len(rows) != len(first) || tl.Points() != len(first) {
				t.Fatalf("plot: %d rows for %d times (%v); decoded %d points", len(rows), len(first), err, tl.Points())
			}
			for i, row := range rows {
				if tl.TimesUS[i] != mustInt(t, first[i]) {
					t.Fatalf("time %d: %d, want %s", i, tl.TimesUS[i], first[i])
				}
				var sum int64
				for k := 1; k < len(row); k++ {
					v := mustInt(t, row[k])
					if tl.Bytes[k-1][i] != v || v > MaxBytes || v < -MaxBytes {
						t.Fatalf("point %d category %d: %d, want %d within 2^53", i, k-1, tl.Bytes[k-1][i], v)
					}
					sum += v
				}
				if tl.Total(i) != sum {
					t.Fatalf("total at %d: %d, want %d", i, tl.Total(i), sum)
				}
			}
		case "raw":
			if tl.Events != len(ref) {
				t.Fatalf("raw: %d events decoded, the JSON holds %d", tl.Events, len(ref))
			}
			for _, col := range tl.Bytes {
				for _, v := range col {
					if v > MaxBytes || v < -MaxBytes {
						t.Fatalf("running total %d past 2^53", v)
					}
				}
			}
		default:
			t.Fatalf("form %q", tl.Form)
		}
	})
}

func mustInt(t *testing.T, n json.Number) int64 {
	t.Helper()
	v, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		t.Fatalf("accepted a number that is not an int64: %s", n)
	}
	return v
}
