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
	b = appendIntField(b, `{"device":`, int64(r.Device))
	b = appendIntField(b, `,"iteration":`, int64(r.Iteration))
	b = append(b, `,"complete":`...)
	b = strconv.AppendBool(b, r.Complete)
	if r.PeakAllocatedBytes != 0 {
		b = appendIntField(b, `,"peak_allocated_bytes":`, r.PeakAllocatedBytes)
	}
	b = appendIntField(b, `,"peak_requested_bytes":`, r.PeakRequestedBytes)
	b = appendIntField(b, `,"peak_reserved_bytes":`, r.PeakReservedBytes)
	b = appendIntField(b, `,"peak_event":`, int64(r.PeakEvent))
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
			b = appendIntField(b, `,"allocated_bytes":`, p.AllocatedBytes)
		}
		b = appendIntField(b, `,"requested_bytes":`, p.RequestedBytes)
		b = appendIntField(b, `,"reserved_bytes":`, p.ReservedBytes)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// appendIntField appends key (with its opening bracket or comma and its colon) and the number v.
func appendIntField(b []byte, key string, v int64) []byte {
	return strconv.AppendInt(append(b, key...), v, 10)
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
