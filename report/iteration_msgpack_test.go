package report

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/memscan/memscan/phases"
)

// msgpackEdgeInts are the boundaries of every msgpack integer form, both signs.
var msgpackEdgeInts = []int64{0, 1, 127, 128, 255, 256, 65535, 65536, math.MaxUint32, math.MaxUint32 + 1, math.MaxInt64,
	-1, -32, -33, -128, -129, -32768, -32769, math.MinInt32, math.MinInt32 - 1, math.MinInt64}

// msgpackEdgeStrings are strings at the boundaries of the fixstr, str8, str16 and str32 forms.
var msgpackEdgeStrings = []string{"", "backward", strings.Repeat("a", 31), strings.Repeat("b", 32), strings.Repeat("c", 255),
	strings.Repeat("d", 256), strings.Repeat("e", 65535), strings.Repeat("f", 65536), "é<\x00>"}

func encodeMsgpack(t *testing.T, v any) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := msgpack.NewEncoder(&b)
	enc.SetSortMapKeys(true) // as report.msgpack is written
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestIterationListsMsgpackByHand: the hand-written per-iteration lists are byte for byte what the msgpack library
// writes for the plain slices, on every integer, string, array and map length form, nil and empty lists and
// inference iterations; and they decode back to the same values.
func TestIterationListsMsgpackByHand(t *testing.T) {
	var rows []IterationRow
	var its []phases.Iteration
	for i, n := range msgpackEdgeInts {
		s := msgpackEdgeStrings[i%len(msgpackEdgeStrings)]
		sp := phases.Span{Start: int(n), End: int(-n), StartUS: n, EndUS: msgpackEdgeInts[(i+3)%len(msgpackEdgeInts)]}
		var ph []PhaseEnd
		switch i % 3 {
		case 1:
			ph = []PhaseEnd{}
		case 2:
			ph = []PhaseEnd{{Phase: s, Span: sp, AllocatedBytes: n, RequestedBytes: -n, ReservedBytes: n / 2}, {Phase: "optimizer", Span: phases.NoSpan}}
		}
		rows = append(rows, IterationRow{Device: int(n), Iteration: int(-n), Complete: i%2 == 0, PeakAllocatedBytes: n,
			PeakRequestedBytes: -n, PeakReservedBytes: n / 3, PeakEvent: int(n / 7), PeakPhase: s, Phases: ph})
		it := phases.Iteration{Index: int(n), Span: sp, Forward: sp, Backward: phases.NoSpan, Optimizer: phases.Span{Start: i}, Complete: i%2 == 1}
		if i%4 == 1 {
			pre, dec := sp, phases.Span{Start: 3, End: int(n)}
			it.Prefill = &pre
			if i%8 == 1 {
				it.Decode = &dec
			}
		}
		its = append(its, it)
	}
	long := make([]IterationRow, 70000) // array32
	for i := range long {
		long[i] = rows[i%len(rows)]
		long[i].PeakPhase = "forward"
	}
	tls := []phases.Timeline{
		{Device: 0, Events: 70, Source: "annotations", Setup: phases.NoSpan, Iterations: its, OOM: -1},
		{Device: 1},
		{Device: math.MaxInt32, Events: math.MaxInt, Source: strings.Repeat("s", 300), Iterations: []phases.Iteration{}, OOM: 5},
		{Device: 2, Iterations: append(append([]phases.Iteration{}, its...), its...)},
		{Device: 3, Iterations: slices.Repeat(its, 400)}, // many write chunks inside one timeline
	}
	for _, tc := range []struct {
		name        string
		plain, hand any
		back        func([]byte) (any, error)
	}{
		{"rows", rows, iterationRows(rows), nil},
		{"rows 15", rows[:15], iterationRows(rows[:15]), nil},
		{"rows 16", rows[:16], iterationRows(rows[:16]), nil},
		{"rows array32", long, iterationRows(long), nil},
		{"rows empty", []IterationRow{}, iterationRows{}, nil},
		{"rows nil", []IterationRow(nil), iterationRows(nil), nil},
		{"timelines", tls, timelines(tls), nil},
		{"timelines empty", []phases.Timeline{}, timelines{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, got := encodeMsgpack(t, tc.plain), encodeMsgpack(t, tc.hand)
			if !bytes.Equal(got, want) {
				i := 0
				for i < len(got) && i < len(want) && got[i] == want[i] {
					i++
				}
				t.Fatalf("%d bytes, library %d; first difference at byte %d", len(got), len(want), i)
			}
		})
	}
	// Through the wire form: a report holding both lists decodes back to what was encoded.
	in := &Report{Part: &SnapshotReport{Iterations: tls, IterationTable: rows}}
	var back Report
	if err := msgpack.Unmarshal(encodeMsgpack(t, in), &back); err != nil {
		t.Fatal(err)
	}
	sr := back.Part.(*SnapshotReport)
	if !bytes.Equal(encodeMsgpack(t, sr.IterationTable), encodeMsgpack(t, rows)) || len(sr.Iterations) != len(tls) ||
		len(sr.Iterations[0].Iterations) != len(its) || sr.IterationTable[5].PeakRequestedBytes != rows[5].PeakRequestedBytes {
		t.Errorf("decoded lists differ from the encoded ones")
	}
}
