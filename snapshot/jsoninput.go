package snapshot

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// JSON input limits. A JSON file larger than MaxJSONBytes is refused rather than half-read, and no single JSON
// value (a string, a number, or a snapshot value decoded whole) may make the decoder buffer more than
// maxJSONValueBytes, so a corrupt or hostile file cannot exhaust memory.
const (
	MaxJSONBytes      int64 = 4 << 30
	maxJSONValueBytes int64 = 64 << 20
)

// decodeJSONInput decodes JSON inputs, telling them apart by shape rather than by name:
//
//   - an object whose values are objects with peak_memory_mb/tensors: tracer peak-memory JSON ("tracer-json");
//   - an object with "segments" (or other allocator-snapshot keys), or a list of objects: the JSON rendition of
//     an allocator snapshot;
//   - a list whose first element is a list: a torch.profiler memory timeline, either the plot form
//     [times, sizes] or the raw event list ("memory-timeline").
//
// Content that starts with '[' but whose first line is not JSON ("[rank0]: ...", "[2024-05-01 ...] ...") is a
// training log and goes to the text decoder.
func decodeJSONInput(ctx context.Context, name string, r io.Reader) (*Input, error) {
	if br, ok := r.(*bufio.Reader); ok {
		if serr := firstLineSyntaxError(br); serr != nil {
			// Logs often start with '[' ("[rank0]:", "[2024-05-01 ...]"): a first line that is not JSON is text.
			in, err := decodeTextInput(ctx, name, br)
			if err != nil && errors.Is(err, ErrUnknownContent) && !errors.Is(err, ErrLineTooLong) {
				return nil, &Error{File: name, Offset: serr.Offset, Msg: "neither JSON nor a training log with memory lines", Err: serr}
			}
			return in, err
		}
	}
	s := newJSONStream(ctx, name, r)
	tok, err := s.token("")
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		k, err := s.nextKey("")
		if err != nil {
			return nil, err
		}
		if k == nil {
			return nil, &Error{File: name, Offset: s.offset(), Msg: "empty JSON object: neither a tracer file nor an allocator snapshot", Err: ErrUnknownContent}
		}
		if isSnapshotKey(*k) {
			return decodeSnapshotJSONStream(s, *k)
		}
		tr, err := decodeTracerRest(s, *k)
		if err != nil {
			return nil, err
		}
		if rank, ok := RankFromPath(name); ok {
			tr.Rank = rank
		}
		return &Input{Path: name, Format: FormatTracerJSON, Tracer: tr}, nil
	case json.Delim('['):
		tok, err := s.token("[0]")
		if err != nil {
			return nil, err
		}
		switch tok {
		case json.Delim('['):
			tl, err := decodeTimelineRest(s)
			if err != nil {
				return nil, err
			}
			return &Input{Path: name, Format: FormatMemoryTimeline, Timeline: tl}, nil
		case json.Delim('{'), json.Delim(']'):
			return decodeSnapshotListStream(s, tok.(json.Delim))
		}
		return nil, s.typeErr("[0]", "a list (memory timeline) or an object (snapshot segment)", tok)
	}
	return nil, &Error{File: name, Offset: s.offset(), Msg: fmt.Sprintf("JSON top level is %s, not an object or list", describeToken(tok)), Err: ErrUnknownContent}
}

// Formats produced by the JSON and text decoders.
const (
	FormatTracerJSON     = "tracer-json"
	FormatMemoryTimeline = "memory-timeline"
	FormatSnapshotJSON   = "snapshot-json"
	FormatMegatronLog    = "megatron-log"
	FormatDeepSpeedLog   = "deepspeed-log"
	FormatTorchtitanLog  = "torchtitan-log"
)

// isSnapshotKey reports whether a top-level key belongs to an allocator snapshot rather than a tracer device.
func isSnapshotKey(k string) bool {
	switch k {
	case "segments", "device_traces", "allocator_settings", "external_annotations", "host_segments", "host_traces":
		return true
	}
	return false
}

// decodeSnapshotJSONStream rebuilds the generic value of an allocator-snapshot object whose first key has been
// read, then hands it to the snapshot decoder. Snapshot values are decoded whole, so the per-value bound is
// lifted to the file bound here.
func decodeSnapshotJSONStream(s *jsonStream, first string) (*Input, error) {
	s.lim.maxPending = s.lim.maxTotal
	m := map[string]any{}
	key := &first
	for key != nil {
		var v any
		if err := s.dec.Decode(&v); err != nil {
			return nil, s.wrap(*key, err)
		}
		m[*key] = v
		var err error
		if key, err = s.nextKey(""); err != nil {
			return nil, err
		}
	}
	if err := s.end(); err != nil {
		return nil, err
	}
	return snapshotJSONInput(s.name, m)
}

// decodeSnapshotListStream rebuilds a bare list of segment objects; open is the token that followed '[' ('{' of
// the first segment, or ']' for an empty list).
func decodeSnapshotListStream(s *jsonStream, open json.Delim) (*Input, error) {
	s.lim.maxPending = s.lim.maxTotal
	list := []any{}
	if open == '{' {
		first := map[string]any{}
		for {
			k, err := s.nextKey("[0]")
			if err != nil {
				return nil, err
			}
			if k == nil {
				break
			}
			var v any
			if err := s.dec.Decode(&v); err != nil {
				return nil, s.wrap("[0]."+*k, err)
			}
			first[*k] = v
		}
		list = append(list, first)
		for i := 1; ; i++ {
			more, err := s.more("")
			if err != nil {
				return nil, err
			}
			if !more {
				break
			}
			var v any
			if err := s.dec.Decode(&v); err != nil {
				return nil, s.wrap(fmt.Sprintf("[%d]", i), err)
			}
			list = append(list, v)
		}
		if err := s.expectDelim("", ']'); err != nil {
			return nil, err
		}
	}
	if err := s.end(); err != nil {
		return nil, err
	}
	return snapshotJSONInput(s.name, list)
}

// snapshotJSONInput decodes the generic JSON rendition of an allocator snapshot.
func snapshotJSONInput(name string, v any) (*Input, error) {
	snap, err := decodeSnapshotJSON(name, v)
	if err != nil {
		return nil, err
	}
	return &Input{Path: name, Format: FormatSnapshotJSON, Snapshot: snap}, nil
}

// jsonStream wraps encoding/json's token API with error reporting that names the file, the byte offset and the
// JSON path.
type jsonStream struct {
	name string
	dec  *json.Decoder
	lim  *limitedReader
}

func newJSONStream(ctx context.Context, name string, r io.Reader) *jsonStream {
	lim := &limitedReader{ctx: ctx, r: r, maxTotal: MaxJSONBytes, maxPending: maxJSONValueBytes}
	dec := json.NewDecoder(lim)
	dec.UseNumber()
	lim.consumed = dec.InputOffset
	return &jsonStream{name: name, dec: dec, lim: lim}
}

// limitedReader refuses to read past maxTotal bytes, or more than maxPending bytes beyond what the decoder has
// consumed (the decoder buffers a whole token or value before returning it), and stops on cancellation.
type limitedReader struct {
	ctx        context.Context
	r          io.Reader
	n          int64
	maxTotal   int64
	maxPending int64
	consumed   func() int64
}

// limitError is returned by limitedReader when a bound is exceeded.
type limitError struct{ msg string }

func (e *limitError) Error() string { return e.msg }

func (l *limitedReader) Read(p []byte) (int, error) {
	if err := l.ctx.Err(); err != nil {
		return 0, err
	}
	if l.n > l.maxTotal {
		return 0, &limitError{fmt.Sprintf("file larger than the %d MiB limit for JSON input", l.maxTotal>>20)}
	}
	if l.consumed != nil {
		pending := l.n - l.consumed()
		if pending > l.maxPending {
			return 0, &limitError{fmt.Sprintf("a single JSON value is larger than %d MiB", l.maxPending>>20)}
		}
		// The decoder doubles its buffer, so one read could otherwise swallow far more than the bound.
		if room := l.maxPending + 1 - pending; int64(len(p)) > room {
			p = p[:room]
		}
	}
	if rem := l.maxTotal + 1 - l.n; int64(len(p)) > rem {
		p = p[:rem]
	}
	n, err := l.r.Read(p)
	l.n += int64(n)
	return n, err
}

func (s *jsonStream) offset() int64 { return s.dec.InputOffset() }

func (s *jsonStream) errf(path, format string, args ...any) error {
	return &Error{File: s.name, Offset: s.dec.InputOffset(), Field: path, Msg: fmt.Sprintf(format, args...)}
}

// errAt is errf at a given byte offset.
func (s *jsonStream) errAt(offset int64, path, format string, args ...any) error {
	return &Error{File: s.name, Offset: offset, Field: path, Msg: fmt.Sprintf(format, args...)}
}

// wrap turns a decoder error into an *Error with position.
func (s *jsonStream) wrap(path string, err error) error {
	var se *json.SyntaxError
	var le *limitError
	var te *json.UnmarshalTypeError
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %w", s.name, err)
	case errors.As(err, &le):
		return &Error{File: s.name, Offset: s.dec.InputOffset(), Field: path, Msg: le.msg}
	case errors.As(err, &se):
		return &Error{File: s.name, Offset: se.Offset, Field: path, Msg: "malformed JSON", Err: err}
	case errors.As(err, &te):
		return &Error{File: s.name, Offset: te.Offset, Field: path, Msg: "wrong type", Err: err}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{File: s.name, Offset: s.lim.n, Field: path, Msg: "unexpected end of file"}
	}
	return &Error{File: s.name, Offset: s.dec.InputOffset(), Field: path, Msg: "cannot read", Err: err}
}

func (s *jsonStream) token(path string) (json.Token, error) {
	tok, err := s.dec.Token()
	if err != nil {
		return nil, s.wrap(path, err)
	}
	return tok, nil
}

// end checks that nothing but whitespace follows the top-level value.
func (s *jsonStream) end() error {
	tok, err := s.dec.Token()
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err != nil {
		return s.wrap("", err)
	}
	return s.errf("", "trailing data after the JSON value (%s)", describeToken(tok))
}

func (s *jsonStream) expectDelim(path string, d json.Delim) error {
	tok, err := s.token(path)
	if err != nil {
		return err
	}
	if tok != d {
		want := map[json.Delim]string{'{': "an object", '[': "an array", '}': "end of object", ']': "end of array"}[d]
		return s.typeErr(path, want, tok)
	}
	return nil
}

// nextKey returns the next key of the current object, or nil at its closing brace (which it consumes).
func (s *jsonStream) nextKey(path string) (*string, error) {
	tok, err := s.token(path)
	if err != nil {
		return nil, err
	}
	switch v := tok.(type) {
	case string:
		return &v, nil
	case json.Delim:
		if v == '}' {
			return nil, nil
		}
	}
	return nil, s.typeErr(path, "an object key", tok)
}

// more reports whether the current array or object has another element.
func (s *jsonStream) more(path string) (bool, error) {
	return s.dec.More(), nil
}

func (s *jsonStream) typeErr(path, want string, got json.Token) error {
	return s.errf(path, "want %s, got %s", want, describeToken(got))
}

func describeToken(tok json.Token) string {
	switch v := tok.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		return "string " + strconv.Quote(v)
	case json.Number:
		return "number " + v.String()
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case json.Delim:
		switch v {
		case '{':
			return "an object"
		case '[':
			return "an array"
		}
		return "'" + v.String() + "'"
	}
	return fmt.Sprintf("%v", tok)
}

func (s *jsonStream) number(path string) (json.Number, error) {
	tok, err := s.token(path)
	if err != nil {
		return "", err
	}
	v, ok := tok.(json.Number)
	if !ok {
		return "", s.typeErr(path, "a number", tok)
	}
	return v, nil
}

func (s *jsonStream) float(path string) (float64, error) {
	n, err := s.number(path)
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(n.String(), 64)
	if err != nil {
		return 0, s.errf(path, "number out of range (%s)", n)
	}
	return f, nil
}

// rawInt parses an already decoded JSON value that must be an integer.
func (s *jsonStream) rawInt(offset int64, path string, raw json.RawMessage) (int64, error) {
	n, err := rawNumber(raw)
	if err != nil {
		return 0, s.errAt(offset, path, "%v", err)
	}
	v, err := s.parseIntNumber(path, n)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Offset = offset
		}
		return 0, err
	}
	return v, nil
}

// rawFloat parses an already decoded JSON value that must be a number.
func (s *jsonStream) rawFloat(offset int64, path string, raw json.RawMessage) (float64, error) {
	n, err := rawNumber(raw)
	if err != nil {
		return 0, s.errAt(offset, path, "%v", err)
	}
	f, err := strconv.ParseFloat(n.String(), 64)
	if err != nil {
		return 0, s.errAt(offset, path, "number out of range (%s)", n)
	}
	return f, nil
}

// rawNumber checks that raw is a JSON number literal (not a string, which encoding/json would let json.Number
// accept).
func rawNumber(raw json.RawMessage) (json.Number, error) {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || !(b[0] == '-' || (b[0] >= '0' && b[0] <= '9')) {
		var tok any
		_ = json.Unmarshal(b, &tok)
		return "", fmt.Errorf("want a number, got %s", describeToken(tok))
	}
	return json.Number(b), nil
}

func (s *jsonStream) int(path string) (int64, error) {
	n, err := s.number(path)
	if err != nil {
		return 0, err
	}
	return s.parseIntNumber(path, n)
}

func (s *jsonStream) parseIntNumber(path string, n json.Number) (int64, error) {
	v, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		if _, ferr := strconv.ParseFloat(n.String(), 64); ferr == nil && !isIntegerLiteral(n.String()) {
			return 0, s.errf(path, "not an integer (%s)", n)
		}
		return 0, s.errf(path, "integer out of range (%s)", n)
	}
	return v, nil
}

func isIntegerLiteral(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && !(i == 0 && c == '-') {
			return false
		}
	}
	return true
}

// skip consumes one value of any type (unknown keys are tolerated for forward compatibility).
func (s *jsonStream) skip(path string) error {
	depth := 0
	for {
		tok, err := s.token(path)
		if err != nil {
			return err
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				depth++
			default:
				depth--
			}
		}
		if depth == 0 {
			return nil
		}
	}
}

// firstLineSyntaxError tokenizes the buffered start of the input and returns the syntax error when one occurs on
// the first line within the first few tokens, as in "[rank0]:", "[Rank 0] ...", "[2024-05-01 ...]" or "[3] mp:";
// nil otherwise, so a JSON file that goes wrong later keeps its JSON error.
func firstLineSyntaxError(br *bufio.Reader) *json.SyntaxError {
	head, _ := br.Peek(br.Buffered())
	if len(head) == 0 {
		head, _ = br.Peek(4096)
	}
	nl := bytes.IndexByte(head, '\n')
	if nl < 0 {
		nl = len(head)
	}
	dec := json.NewDecoder(bytes.NewReader(head))
	for tokens := 0; tokens <= 3; tokens++ {
		_, err := dec.Token()
		if err == nil {
			if dec.InputOffset() > int64(nl) {
				return nil
			}
			continue
		}
		var se *json.SyntaxError
		if errors.As(err, &se) && se.Offset <= int64(nl)+1 {
			return se
		}
		return nil
	}
	return nil
}
