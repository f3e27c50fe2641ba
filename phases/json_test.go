package phases

import (
	"bytes"
	"encoding/json"
	"math"
	"testing"
)

// TestIterationJSONByHand: a training iteration's hand-written JSON is byte for byte encoding/json's form of its
// fields, for spans with and without times, unseen phases and extreme values.
func TestIterationJSONByHand(t *testing.T) {
	for _, it := range []Iteration{
		{},
		{Index: 1, Span: Span{0, 30, 100, 400}, Forward: Span{0, 10, 100, 200}, Backward: Span{10, 20, 200, 300}, Optimizer: Span{20, 30, 300, 400}, Complete: true},
		{Index: 2, Span: Span{30, 40, 0, 0}, Forward: Span{30, 40, 0, 7}, Backward: NoSpan, Optimizer: NoSpan},
		{Index: -3, Span: Span{math.MaxInt, math.MinInt, math.MaxInt64, math.MinInt64}, Forward: Span{Start: 5, StartUS: -1}},
	} {
		got, err := it.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(plainIteration(it))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("iteration %d:\n got %s\nwant %s", it.Index, got, want)
		}
		if !json.Valid(got) {
			t.Errorf("iteration %d: invalid JSON %s", it.Index, got)
		}
	}
}
