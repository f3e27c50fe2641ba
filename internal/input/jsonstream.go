package input

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
// MaxJSONValueBytes, so a corrupt or hostile file cannot exhaust memory.
const (
	MaxJSONBytes      int64 = 4 << 30
	MaxJSONValueBytes int64 = 64 << 20
)

// JSONStream wraps encoding/json's token API with error reporting that names the file, the byte offset and the
// JSON path.
type JSONStream struct {
	name string
	dec  *json.Decoder
	lim  *limitedReader
}

func NewJSONStream(ctx context.Context, name string, r io.Reader) *JSONStream {
	lim := &limitedReader{ctx: ctx, r: r, maxTotal: MaxJSONBytes, maxPending: MaxJSONValueBytes}
	dec := json.NewDecoder(lim)
	dec.UseNumber()
	lim.consumed = dec.InputOffset
	return &JSONStream{name: name, dec: dec, lim: lim}
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

// Rest hands the input from Offset on to a decoder of the caller's own, through the same file and cancellation
// bounds; the stream must not be used afterwards. A format made of millions of numbers (a memory timeline) reads
// them many times faster than token by token through encoding/json. Read errors are worded by ReadErr.
func (s *JSONStream) Rest() (r io.Reader, offset int64) {
	s.lim.consumed = nil // the caller's decoder buffers what it likes; the file bound still holds
	return io.MultiReader(s.dec.Buffered(), s.lim), s.dec.InputOffset()
}

// ReadErr words an error from reading Rest at a byte offset: a bound passed, a cancellation, a failed read.
func (s *JSONStream) ReadErr(offset int64, path string, err error) error {
	var le *limitError
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("%s: %w", s.name, err)
	case errors.As(err, &le):
		return &Error{File: s.name, Offset: offset, Field: path, Msg: le.msg}
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return &Error{File: s.name, Offset: offset, Field: path, Msg: "unexpected end of file"}
	}
	return &Error{File: s.name, Offset: offset, Field: path, Msg: "cannot read", Err: err}
}

// Offset is the byte offset the decoder has reached.
func (s *JSONStream) Offset() int64 { return s.dec.InputOffset() }

// Name is the file name errors carry.
func (s *JSONStream) Name() string { return s.name }

// Decode decodes the next whole value into v (encoding/json errors are raw; pass them through Wrap).
func (s *JSONStream) Decode(v any) error { return s.dec.Decode(v) }

// HasMore reports whether the current array or object has another element.
func (s *JSONStream) HasMore() bool { return s.dec.More() }

// LiftValueBound raises the per-value bound to the file bound, for decoders that read a whole snapshot value at
// once.
func (s *JSONStream) LiftValueBound() { s.lim.maxPending = s.lim.maxTotal }

func (s *JSONStream) Errf(path, format string, args ...any) error {
	return &Error{File: s.name, Offset: s.dec.InputOffset(), Field: path, Msg: fmt.Sprintf(format, args...)}
}

// ErrAt is errf at a given byte offset.
func (s *JSONStream) ErrAt(offset int64, path, format string, args ...any) error {
	return &Error{File: s.name, Offset: offset, Field: path, Msg: fmt.Sprintf(format, args...)}
}

// Wrap turns a decoder error into an *Error with position.
func (s *JSONStream) Wrap(path string, err error) error {
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

func (s *JSONStream) Token(path string) (json.Token, error) {
	tok, err := s.dec.Token()
	if err != nil {
		return nil, s.Wrap(path, err)
	}
	return tok, nil
}

// End checks that nothing but whitespace follows the top-level value.
func (s *JSONStream) End() error {
	tok, err := s.dec.Token()
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err != nil {
		return s.Wrap("", err)
	}
	return s.Errf("", "trailing data after the JSON value (%s)", DescribeToken(tok))
}

func (s *JSONStream) ExpectDelim(path string, d json.Delim) error {
	tok, err := s.Token(path)
	if err != nil {
		return err
	}
	if tok != d {
		want := map[json.Delim]string{'{': "an object", '[': "an array", '}': "end of object", ']': "end of array"}[d]
		return s.TypeErr(path, want, tok)
	}
	return nil
}

// NextKey returns the next key of the current object, or nil at its closing brace (which it consumes).
func (s *JSONStream) NextKey(path string) (*string, error) {
	tok, err := s.Token(path)
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
	return nil, s.TypeErr(path, "an object key", tok)
}

// More reports whether the current array or object has another element.
func (s *JSONStream) More(path string) (bool, error) {
	return s.dec.More(), nil
}

func (s *JSONStream) TypeErr(path, want string, got json.Token) error {
	return s.Errf(path, "want %s, got %s", want, DescribeToken(got))
}

// DescribeToken names a token for an error message ("an object", "number 3", ...).
func DescribeToken(tok json.Token) string {
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

func (s *JSONStream) Number(path string) (json.Number, error) {
	tok, err := s.Token(path)
	if err != nil {
		return "", err
	}
	v, ok := tok.(json.Number)
	if !ok {
		return "", s.TypeErr(path, "a number", tok)
	}
	return v, nil
}

func (s *JSONStream) Float(path string) (float64, error) {
	n, err := s.Number(path)
	if err != nil {
		return 0, err
	}
	f, err := strconv.ParseFloat(n.String(), 64)
	if err != nil {
		return 0, s.Errf(path, "number out of range (%s)", n)
	}
	return f, nil
}

// RawInt parses an already decoded JSON value that must be an integer.
func (s *JSONStream) RawInt(offset int64, path string, raw json.RawMessage) (int64, error) {
	n, err := rawNumber(raw)
	if err != nil {
		return 0, s.ErrAt(offset, path, "%v", err)
	}
	v, err := s.ParseInt(path, n)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Offset = offset
		}
		return 0, err
	}
	return v, nil
}

// RawFloat parses an already decoded JSON value that must be a number.
func (s *JSONStream) RawFloat(offset int64, path string, raw json.RawMessage) (float64, error) {
	n, err := rawNumber(raw)
	if err != nil {
		return 0, s.ErrAt(offset, path, "%v", err)
	}
	f, err := strconv.ParseFloat(n.String(), 64)
	if err != nil {
		return 0, s.ErrAt(offset, path, "number out of range (%s)", n)
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
		return "", fmt.Errorf("want a number, got %s", DescribeToken(tok))
	}
	return json.Number(b), nil
}

func (s *JSONStream) Int(path string) (int64, error) {
	n, err := s.Number(path)
	if err != nil {
		return 0, err
	}
	return s.ParseInt(path, n)
}

// ParseInt parses an already read number that must be an integer.
func (s *JSONStream) ParseInt(path string, n json.Number) (int64, error) {
	v, err := strconv.ParseInt(n.String(), 10, 64)
	if err != nil {
		if _, ferr := strconv.ParseFloat(n.String(), 64); ferr == nil && !isIntegerLiteral(n.String()) {
			return 0, s.Errf(path, "not an integer (%s)", n)
		}
		return 0, s.Errf(path, "integer out of range (%s)", n)
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

// Skip consumes one value of any type (unknown keys are tolerated for forward compatibility).
func (s *JSONStream) Skip(path string) error {
	depth := 0
	for {
		tok, err := s.Token(path)
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

// FirstLineSyntaxError tokenizes the buffered start of the input and returns the syntax error when one occurs on
// the first line within the first few tokens, as in "[rank0]:", "[Rank 0] ...", "[2024-05-01 ...]" or "[3] mp:";
// nil otherwise, so a JSON file that goes wrong later keeps its JSON error.
func FirstLineSyntaxError(br *bufio.Reader) *json.SyntaxError {
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
