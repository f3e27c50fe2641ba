package allocator

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestBlockSeries: values in whole blocks below 2 TiB take the compact form, and the first value that is not
// (a size off the 512-byte grid, a negative or a huge one) moves the series to one word an event with every earlier
// value kept; either way the JSON is the plain array of values, as when the series was a []int64.
func TestBlockSeries(t *testing.T) {
	for _, tc := range []struct {
		name    string
		values  []int64
		compact bool
	}{
		{"whole blocks", []int64{0, 512, 5 << 20, 1<<41 - 512}, true},
		{"off the grid", []int64{512, 1024, 1000, 2048}, false},
		{"two TiB", []int64{512, 1 << 41}, false},
		{"negative", []int64{512, -512, 0}, false},
		{"repeated highs", []int64{1024, 512, 1024, 2048, 2048, 0}, true},
		{"repeated highs, dense", []int64{1000, 500, 1000, 2000, 2000, -1}, false},
		{"empty", nil, true},
	} {
		s := newBlockSeries(len(tc.values))
		for j, v := range tc.values {
			s.set(j, v)
		}
		if got := s.Values(); !slices.Equal(got, tc.values) && len(tc.values) > 0 {
			t.Errorf("%s: values %v, want %v", tc.name, got, tc.values)
		}
		if s.Len() != len(tc.values) || (s.dense == nil) != tc.compact {
			t.Errorf("%s: length %d, compact %v; want %d, %v", tc.name, s.Len(), s.dense == nil, len(tc.values), tc.compact)
		}
		// MaxIn over every range: the first event of the highest value, as a scan finds it.
		for from := range len(tc.values) + 1 {
			for to := from; to <= len(tc.values); to++ {
				wantJ, wantV := -1, int64(0)
				for j := from; j < to; j++ {
					if wantJ < 0 || tc.values[j] > wantV {
						wantJ, wantV = j, tc.values[j]
					}
				}
				if j, v := s.MaxIn(from, to); j != wantJ || v != wantV {
					t.Errorf("%s: MaxIn(%d, %d) = %d, %d; want %d, %d", tc.name, from, to, j, v, wantJ, wantV)
				}
			}
		}
		got, err := json.Marshal(s)
		want, _ := json.Marshal(append([]int64{}, tc.values...))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: JSON %s (%v), want %s", tc.name, got, err, want)
		}
	}
	var none *BlockSeries
	if none.Len() != 0 {
		t.Errorf("a nil series has %d events", none.Len())
	}
}
