package report

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/memscan/memscan/phases"
)

// EncodeJSON writes run as compact JSON to w, byte for byte what encoding/json writes for the run with HTML
// escaping off (its inputs through Report.MarshalJSON), without the final newline. It writes in pieces: the
// per-iteration lists of a long trace (tens of thousands of entries) go out entry by entry, so the whole summary
// is never held in memory; everything else is small and goes through encoding/json.
func (run *Run) EncodeJSON(w io.Writer) error {
	s := &jsonStream{chunkWriter: chunkWriter{w: w, buf: make([]byte, 0, writeChunk)}}
	s.object(struct {
		Version int    `json:"version"`
		Tool    string `json:"tool"`
	}{run.Version, run.Tool}, false, true)
	s.raw(`,"inputs":`)
	if run.Inputs == nil {
		s.raw("null")
	} else {
		s.raw("[")
		for i, r := range run.Inputs {
			if i > 0 {
				s.raw(",")
			}
			if r == nil {
				s.raw("null")
				continue
			}
			s.input(r.wire())
		}
		s.raw("]")
	}
	s.object(struct {
		Failures []Failure `json:"failures,omitempty"`
		Cross    *Cross    `json:"cross,omitempty"`
	}{run.Failures, run.Cross}, true, false)
	return s.flush()
}

// jsonStream gathers compact JSON and writes it on in chunks.
type jsonStream struct {
	chunkWriter
	enc bytes.Buffer // encoding/json's output for the small parts
}

func (s *jsonStream) raw(t string) { s.buf = append(s.buf, t...) }

// input writes one input's flat object: its head, the per-iteration lists entry by entry, its tail.
func (s *jsonStream) input(w *reportWire) {
	s.object(&w.wireHead, false, true)
	if len(w.Iterations) > 0 {
		s.raw(`,"iterations":[`)
		for i := range w.Iterations {
			if i > 0 {
				s.raw(",")
			}
			s.timeline(&w.Iterations[i])
		}
		s.raw("]")
	}
	if len(w.IterationTable) > 0 {
		s.raw(`,"iteration_table":[`)
		for i := range w.IterationTable {
			if i > 0 {
				s.raw(",")
			}
			s.buf = w.IterationTable[i].appendJSON(s.buf)
			s.spill()
		}
		s.raw("]")
	}
	s.object(&w.wireTail, true, false)
}

// object appends v's JSON object with its opening brace left off when continued (its fields follow others, a
// comma before them if there are any) and its closing brace left off when open (more fields follow).
func (s *jsonStream) object(v any, continued, open bool) {
	if s.err != nil {
		return
	}
	s.enc.Reset()
	enc := json.NewEncoder(&s.enc)
	enc.SetEscapeHTML(false)
	if s.err = enc.Encode(v); s.err != nil {
		return
	}
	b := bytes.TrimSuffix(s.enc.Bytes(), []byte("\n"))
	if continued {
		b = b[1:]
		if len(b) > 1 {
			s.raw(",")
		}
	}
	if open {
		b = b[:len(b)-1]
	}
	s.buf = append(s.buf, b...)
	s.spill()
}

// timeline appends t as encoding/json writes a phases.Timeline, its iterations (all of one device's trace) one
// by one through their own AppendJSON.
func (s *jsonStream) timeline(t *phases.Timeline) {
	b := appendIntField(s.buf, `{"device":`, int64(t.Device))
	b = appendIntField(b, `,"events":`, int64(t.Events))
	b = append(b, `,"source":`...)
	b = appendJSONString(b, t.Source)
	b = t.Setup.AppendJSON(append(b, `,"setup":`...))
	b = append(b, `,"iterations":`...)
	if t.Iterations == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range t.Iterations {
			if i > 0 {
				b = append(b, ',')
			}
			s.buf = t.Iterations[i].AppendJSON(b)
			s.spill()
			b = s.buf
		}
		b = append(b, ']')
	}
	b = appendIntField(b, `,"oom_event":`, int64(t.OOM))
	s.buf = append(b, '}')
	s.spill()
}
