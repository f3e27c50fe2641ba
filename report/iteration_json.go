package report

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// MarshalJSON writes an iteration table row by hand: a long run has tens of thousands, and encoding/json's
// reflection over them took most of summary.json's time. The bytes are those encoding/json writes for the
// row's fields with HTML escaping off, as the summary writer sets it.
func (r IterationRow) MarshalJSON() ([]byte, error) {
	return r.appendJSON(make([]byte, 0, 256+200*len(r.Phases))), nil
}

// appendJSON appends the row's JSON (MarshalJSON's bytes) to b.
func (r IterationRow) appendJSON(b []byte) []byte {
	b = append(b, `{"device":`...)
	b = strconv.AppendInt(b, int64(r.Device), 10)
	b = append(b, `,"iteration":`...)
	b = strconv.AppendInt(b, int64(r.Iteration), 10)
	b = append(b, `,"complete":`...)
	b = strconv.AppendBool(b, r.Complete)
	if r.PeakAllocatedBytes != 0 {
		b = append(b, `,"peak_allocated_bytes":`...)
		b = strconv.AppendInt(b, r.PeakAllocatedBytes, 10)
	}
	b = append(b, `,"peak_requested_bytes":`...)
	b = strconv.AppendInt(b, r.PeakRequestedBytes, 10)
	b = append(b, `,"peak_reserved_bytes":`...)
	b = strconv.AppendInt(b, r.PeakReservedBytes, 10)
	b = append(b, `,"peak_event":`...)
	b = strconv.AppendInt(b, int64(r.PeakEvent), 10)
	b = append(b, `,"peak_phase":`...)
	b = appendJSONString(b, r.PeakPhase)
	b = append(b, `,"phases":`...)
	if r.Phases == nil {
		return append(b, `null}`...)
	}
	b = append(b, '[')
	for i, p := range r.Phases {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"phase":`...)
		b = appendJSONString(b, p.Phase)
		b = p.Span.AppendJSON(append(b, `,"span":`...))
		if p.AllocatedBytes != 0 {
			b = append(b, `,"allocated_bytes":`...)
			b = strconv.AppendInt(b, p.AllocatedBytes, 10)
		}
		b = append(b, `,"requested_bytes":`...)
		b = strconv.AppendInt(b, p.RequestedBytes, 10)
		b = append(b, `,"reserved_bytes":`...)
		b = strconv.AppendInt(b, p.ReservedBytes, 10)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// appendJSONString appends s quoted as encoding/json writes it without HTML escaping: plain ASCII as it is,
// anything else through the encoder.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(s) // a string always encodes
			return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}
