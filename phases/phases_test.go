package phases

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestIterationJSON: a training iteration keeps its forward, backward and optimizer keys; an inference one shows
// prefill and decode in their place; both read back to what was written.
func TestIterationJSON(t *testing.T) {
	pre, dec := Span{Start: 2, End: 4}, Span{Start: 4, End: 9}
	for _, tc := range []struct {
		it   Iteration
		want string
	}{
		{Iteration{Index: 1, Span: Span{Start: 0, End: 9}, Forward: Span{Start: 0, End: 3}, Backward: Span{Start: 3, End: 7}, Optimizer: Span{Start: 7, End: 9}, Complete: true},
			`{"iteration":1,"span":{"start_event":0,"end_event":9},"forward":{"start_event":0,"end_event":3},"backward":{"start_event":3,"end_event":7},"optimizer":{"start_event":7,"end_event":9},"complete":true}`},
		{Iteration{Index: 2, Span: Span{Start: 1, End: 9}, Forward: Span{Start: 2, End: 9}, Backward: NoSpan, Optimizer: NoSpan, Complete: true, Prefill: &pre, Decode: &dec},
			`{"iteration":2,"span":{"start_event":1,"end_event":9},"prefill":{"start_event":2,"end_event":4},"decode":{"start_event":4,"end_event":9},"complete":true}`},
	} {
		b, err := json.Marshal(tc.it)
		if err != nil || string(b) != tc.want {
			t.Errorf("%s (%v), want %s", b, err, tc.want)
		}
		var back Iteration
		if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, tc.it) {
			t.Errorf("read back %+v (%v), want %+v", back, err, tc.it)
		}
	}
}
