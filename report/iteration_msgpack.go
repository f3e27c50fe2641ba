package report

import (
	"encoding/binary"
	"math"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/memscan/memscan/phases"
)

// timelines and iterationRows are the wire form's per-iteration lists. A long trace has tens of thousands of
// entries, and msgpack's reflection over them took most of report.msgpack's time, so they are written by hand:
// the bytes are those the msgpack library writes for the same values (compact ints for int fields, 9-byte
// int64s, structs as maps keyed by their msgpack tag or Go field name, nil slices and pointers as nil). They
// decode as the plain slices.
type (
	timelines     []phases.Timeline
	iterationRows []IterationRow
)

// EncodeMsgpack writes the timelines as the library would.
func (ts timelines) EncodeMsgpack(enc *msgpack.Encoder) error {
	if ts == nil {
		return enc.EncodeNil()
	}
	s := newMsgpackStream(enc, len(ts))
	for i := range ts {
		s.msgpackTimeline(&ts[i])
	}
	return s.flush()
}

// EncodeMsgpack writes the rows as the library would.
func (rs iterationRows) EncodeMsgpack(enc *msgpack.Encoder) error {
	if rs == nil {
		return enc.EncodeNil()
	}
	s := newMsgpackStream(enc, len(rs))
	for i := range rs {
		s.buf = appendIterationRowMsgpack(s.buf, &rs[i])
		s.spill()
	}
	return s.flush()
}

// newMsgpackStream starts a list of n entries on the encoder's writer.
func newMsgpackStream(enc *msgpack.Encoder, n int) *chunkWriter {
	return &chunkWriter{w: enc.Writer(), buf: appendMsgpackArrayLen(make([]byte, 0, writeChunk), n)}
}

func appendIterationRowMsgpack(b []byte, r *IterationRow) []byte {
	n := 8
	if r.PeakAllocatedBytes != 0 {
		n++
	}
	b = appendMsgpackMapLen(b, n)
	b = appendMsgpackInt(appendMsgpackString(b, "device"), int64(r.Device))
	b = appendMsgpackInt(appendMsgpackString(b, "iteration"), int64(r.Iteration))
	b = appendMsgpackBool(appendMsgpackString(b, "complete"), r.Complete)
	if r.PeakAllocatedBytes != 0 {
		b = appendMsgpackInt64(appendMsgpackString(b, "peak_allocated_bytes"), r.PeakAllocatedBytes)
	}
	b = appendMsgpackInt64(appendMsgpackString(b, "peak_requested_bytes"), r.PeakRequestedBytes)
	b = appendMsgpackInt64(appendMsgpackString(b, "peak_reserved_bytes"), r.PeakReservedBytes)
	b = appendMsgpackInt(appendMsgpackString(b, "peak_event"), int64(r.PeakEvent))
	b = appendMsgpackString(appendMsgpackString(b, "peak_phase"), r.PeakPhase)
	b = appendMsgpackString(b, "phases")
	if r.Phases == nil {
		return append(b, 0xc0)
	}
	b = appendMsgpackArrayLen(b, len(r.Phases))
	for i := range r.Phases {
		p := &r.Phases[i]
		n := 4
		if p.AllocatedBytes != 0 {
			n++
		}
		b = appendMsgpackMapLen(b, n)
		b = appendMsgpackString(appendMsgpackString(b, "phase"), p.Phase)
		b = appendSpanMsgpack(appendMsgpackString(b, "span"), p.Span)
		if p.AllocatedBytes != 0 {
			b = appendMsgpackInt64(appendMsgpackString(b, "allocated_bytes"), p.AllocatedBytes)
		}
		b = appendMsgpackInt64(appendMsgpackString(b, "requested_bytes"), p.RequestedBytes)
		b = appendMsgpackInt64(appendMsgpackString(b, "reserved_bytes"), p.ReservedBytes)
	}
	return b
}

// msgpackTimeline appends t, its iterations (all of one device's trace) one by one. phases.Timeline, Iteration and Span
// carry no msgpack tags (but Iteration's prefill and decode), so their keys are the Go field names.
func (s *chunkWriter) msgpackTimeline(t *phases.Timeline) {
	b := appendMsgpackMapLen(s.buf, 6)
	b = appendMsgpackInt(appendMsgpackString(b, "Device"), int64(t.Device))
	b = appendMsgpackInt(appendMsgpackString(b, "Events"), int64(t.Events))
	b = appendMsgpackString(appendMsgpackString(b, "Source"), t.Source)
	b = appendSpanMsgpack(appendMsgpackString(b, "Setup"), t.Setup)
	b = appendMsgpackString(b, "Iterations")
	if t.Iterations == nil {
		b = append(b, 0xc0)
	} else {
		b = appendMsgpackArrayLen(b, len(t.Iterations))
		for i := range t.Iterations {
			s.buf = appendIterationMsgpack(b, &t.Iterations[i])
			s.spill()
			b = s.buf
		}
	}
	s.buf = appendMsgpackInt(appendMsgpackString(b, "OOM"), int64(t.OOM))
	s.spill()
}

func appendIterationMsgpack(b []byte, it *phases.Iteration) []byte {
	n := 6
	if it.Prefill != nil {
		n++
	}
	if it.Decode != nil {
		n++
	}
	b = appendMsgpackMapLen(b, n)
	b = appendMsgpackInt(appendMsgpackString(b, "Index"), int64(it.Index))
	b = appendSpanMsgpack(appendMsgpackString(b, "Span"), it.Span)
	b = appendSpanMsgpack(appendMsgpackString(b, "Forward"), it.Forward)
	b = appendSpanMsgpack(appendMsgpackString(b, "Backward"), it.Backward)
	b = appendSpanMsgpack(appendMsgpackString(b, "Optimizer"), it.Optimizer)
	b = appendMsgpackBool(appendMsgpackString(b, "Complete"), it.Complete)
	if it.Prefill != nil {
		b = appendSpanMsgpack(appendMsgpackString(b, "prefill"), *it.Prefill)
	}
	if it.Decode != nil {
		b = appendSpanMsgpack(appendMsgpackString(b, "decode"), *it.Decode)
	}
	return b
}

func appendSpanMsgpack(b []byte, s phases.Span) []byte {
	b = appendMsgpackMapLen(b, 4)
	b = appendMsgpackInt(appendMsgpackString(b, "Start"), int64(s.Start))
	b = appendMsgpackInt(appendMsgpackString(b, "End"), int64(s.End))
	b = appendMsgpackInt64(appendMsgpackString(b, "StartUS"), s.StartUS)
	return appendMsgpackInt64(appendMsgpackString(b, "EndUS"), s.EndUS)
}

// The msgpack formats (msgpack spec): positive and negative fixints, uint/int 8–64 (0xcc–0xcf, 0xd0–0xd3), fixstr,
// str8–32 (0xd9–0xdb), fixarray, array16/32 (0xdc, 0xdd), fixmap, map16/32 (0xde, 0xdf), nil 0xc0, false 0xc2,
// true 0xc3.

// appendMsgpackInt appends n in the fewest bytes, as the library writes Go ints.
func appendMsgpackInt(b []byte, n int64) []byte {
	switch {
	case n >= 0 && n <= math.MaxInt8:
		return append(b, byte(n))
	case n >= 0 && n <= math.MaxUint8:
		return append(b, 0xcc, byte(n))
	case n >= 0 && n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(n))
	case n >= 0 && n <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
	case n >= 0:
		return binary.BigEndian.AppendUint64(append(b, 0xcf), uint64(n))
	case n >= -32:
		return append(b, byte(n))
	case n >= math.MinInt8:
		return append(b, 0xd0, byte(n))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(n))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(n))
	}
	return appendMsgpackInt64(b, n)
}

// appendMsgpackInt64 appends n as an int64 of 9 bytes, as the library writes Go int64 fields.
func appendMsgpackInt64(b []byte, n int64) []byte {
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}

func appendMsgpackBool(b []byte, v bool) []byte {
	if v {
		return append(b, 0xc3)
	}
	return append(b, 0xc2)
}

func appendMsgpackString(b []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n <= math.MaxUint8:
		b = append(b, 0xd9, byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, s...)
}

func appendMsgpackArrayLen(b []byte, n int) []byte {
	return appendMsgpackLen(b, n, 0x90, 0xdc)
}

func appendMsgpackMapLen(b []byte, n int) []byte {
	return appendMsgpackLen(b, n, 0x80, 0xde)
}

// appendMsgpackLen appends an array's or map's length: fixed below 16, else the 16- or 32-bit form (code16,
// code16+1).
func appendMsgpackLen(b []byte, n int, fixed, code16 byte) []byte {
	switch {
	case n < 16:
		return append(b, fixed|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, code16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, code16+1), uint32(n))
}
