package input_test

import (
	"testing"

	"github.com/memscan/memscan/internal/input"
)

// TestParsePathTimestamps: a long digit run after "step" or "rank" is a timestamp (Unix seconds have ten digits
// since 2001, milliseconds thirteen), not an iteration or a rank, even where it fits an int; the path's other
// parts still count. A million steps is a real step count.
func TestParsePathTimestamps(t *testing.T) {
	for _, tc := range []struct {
		path string
		want input.PathInfo
	}{
		{"snap_step_1700000000000.pickle", input.PathInfo{Rank: -1, Iteration: -1}},
		{"snap_step_1700000000.pickle", input.PathInfo{Rank: -1, Iteration: -1}},
		{"rank3_step_1700000000000.pickle", input.PathInfo{Rank: 3, Iteration: -1}},
		{"iter_1700000000000/rank_2.pickle", input.PathInfo{Rank: 2, Iteration: -1}},
		{"rank_1700000000.pickle", input.PathInfo{Rank: -1, Iteration: -1}},
		{"step_1000000.pickle", input.PathInfo{Rank: -1, Iteration: 1000000, IterationKind: "step"}},
	} {
		if got := input.ParsePath(tc.path); got != tc.want {
			t.Errorf("ParsePath(%q) = %+v, want %+v", tc.path, got, tc.want)
		}
	}
}
