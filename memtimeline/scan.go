package memtimeline

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/memscan/memscan/internal/input"
)

// scanner reads the rest of a timeline, nested lists of integers, byte by byte: encoding/json's token reader
// spends about 0.8 µs on each number, and a profiler timeline of two million points holds twenty million of
// them. It checks the JSON syntax of what it reads (commas, brackets, the end of the input) and words its errors
// as input.JSONStream does, with the file's byte offsets.
type scanner struct {
	js  *input.JSONStream
	r   io.Reader
	buf []byte // buf[pos:end] is read and not yet consumed
	pos int
	end int
	err error // the reader's error, once it has returned one
	off int64 // offset of the next unread byte in the file
	// open holds, for each list not yet closed, whether an element has been read (so a comma must come next).
	open []bool
	// comma says the comma before the next element has been consumed.
	comma bool
	num   []byte // scratch for a number's text
}

// newScanner takes over s after the two '[' that start a timeline.
func newScanner(s *input.JSONStream) *scanner {
	r, off := s.Rest()
	return &scanner{js: s, r: r, buf: make([]byte, 1<<16), off: off, open: []bool{true, false}}
}

// fill reads more input when all that was read is consumed; false at the end of the input or on an error (in
// sc.err, io.EOF at the end).
func (sc *scanner) fill() bool {
	for sc.pos == sc.end && sc.err == nil {
		n, err := sc.r.Read(sc.buf)
		sc.pos, sc.end, sc.err = 0, n, err
		if n > 0 {
			return true
		}
	}
	return sc.pos < sc.end
}

// readErr is the reader's error worded for path; nil at the end of the input.
func (sc *scanner) readErr(path string) error {
	if sc.err == nil || sc.err == io.EOF {
		return nil
	}
	return sc.js.ReadErr(sc.off, path, sc.err)
}

// byte consumes one byte (known to be there).
func (sc *scanner) next() byte {
	c := sc.buf[sc.pos]
	sc.pos++
	sc.off++
	return c
}

func (sc *scanner) Name() string { return sc.js.Name() }

func (sc *scanner) Errf(path, format string, args ...any) error {
	return sc.js.ErrAt(sc.off, path, format, args...)
}

func (sc *scanner) TypeErr(path, want string, got json.Token) error {
	return sc.Errf(path, "want %s, got %s", want, input.DescribeToken(got))
}

// eof is what peek returns at the end of the input (any byte value may be in the input).
const eof = -1

// peek skips white space and returns the next byte without consuming it, or eof.
func (sc *scanner) peek(path string) (int, error) {
	for sc.fill() {
		switch c := sc.buf[sc.pos]; c {
		case ' ', '\t', '\r', '\n':
			sc.next()
		default:
			return int(c), nil
		}
	}
	return eof, sc.readErr(path)
}

// HasMore reports whether the innermost open list has another element.
func (sc *scanner) HasMore() bool {
	c, err := sc.peek("")
	return err == nil && c != ']' && c != eof
}

// separator consumes the comma between two elements of the innermost list, if one is due.
func (sc *scanner) separator(path string) error {
	if sc.comma || len(sc.open) == 0 || !sc.open[len(sc.open)-1] {
		return nil
	}
	c, err := sc.peek(path)
	if err != nil || c == ']' {
		return err
	}
	if c != ',' {
		return sc.malformed(path, c, "after an array element")
	}
	sc.next()
	sc.comma = true
	return nil
}

func (sc *scanner) malformed(path string, c int, where string) error {
	if c == eof {
		return sc.js.ErrAt(sc.off, path, "unexpected end of file")
	}
	char := fmt.Sprintf("'\\x%02x'", c) // as encoding/json quotes a character
	if c >= 0x20 && c < 0x7f && c != '\'' {
		char = "'" + string(rune(c)) + "'"
	}
	return sc.js.ErrAt(sc.off, path, "malformed JSON: invalid character %s %s", char, where)
}

// element marks that the innermost list holds one more element.
func (sc *scanner) element() {
	sc.comma = false
	if len(sc.open) > 0 {
		sc.open[len(sc.open)-1] = true
	}
}

// Token reads the next token: a json.Delim for a bracket, a json.Number, or, for error messages, a string,
// a boolean, null or an object's start.
func (sc *scanner) Token(path string) (json.Token, error) {
	if err := sc.separator(path); err != nil {
		return nil, err
	}
	c, err := sc.peek(path)
	if err != nil {
		return nil, err
	}
	switch {
	case c == eof:
		return nil, sc.malformed(path, c, "")
	case c == '[':
		sc.next()
		sc.element()
		sc.open = append(sc.open, false)
		return json.Delim('['), nil
	case c == ']':
		if len(sc.open) == 0 || sc.comma {
			return nil, sc.malformed(path, c, "looking for the beginning of a value")
		}
		sc.next()
		sc.open = sc.open[:len(sc.open)-1]
		return json.Delim(']'), nil
	case c == '-' || (c >= '0' && c <= '9'):
		n, err := sc.number(path)
		if err != nil {
			return nil, err
		}
		sc.element()
		return n, nil
	}
	// Anything else is not part of a timeline: read just enough to name it.
	switch c {
	case '"':
		return sc.describeString(path)
	case '{':
		return json.Delim('{'), nil
	case 't', 'f':
		return true, nil
	case 'n':
		return nil, nil
	}
	return nil, sc.malformed(path, c, "looking for the beginning of a value")
}

// number reads a number literal.
func (sc *scanner) number(path string) (json.Number, error) {
	sc.num = sc.num[:0]
	for sc.fill() {
		c := sc.buf[sc.pos]
		if !(c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E') {
			break
		}
		if len(sc.num) > 64 {
			return "", sc.js.ErrAt(sc.off, path, "malformed JSON: a number longer than 64 characters")
		}
		sc.num = append(sc.num, sc.next())
	}
	if err := sc.readErr(path); err != nil {
		return "", err
	}
	if !json.Valid(sc.num) {
		return "", sc.js.ErrAt(sc.off-int64(len(sc.num)), path, "malformed JSON: invalid number %q", sc.num)
	}
	return json.Number(sc.num), nil
}

// describeString reads a string token (for an error message only).
func (sc *scanner) describeString(path string) (json.Token, error) {
	var raw []byte
	for len(raw) < 4096 && sc.fill() {
		c := sc.next()
		raw = append(raw, c)
		if c == '"' && len(raw) > 1 && raw[len(raw)-2] != '\\' {
			var s string
			if json.Unmarshal(raw, &s) == nil {
				return s, nil
			}
			break
		}
	}
	return "", nil
}

// Int reads an integer element. Plain decimal integers, nearly every number of a timeline, are read here
// digit by digit; anything else (a fraction, an exponent, not a number) goes through Token for its error.
func (sc *scanner) Int(path string) (int64, error) {
	if err := sc.separator(path); err != nil {
		return 0, err
	}
	c, err := sc.peek(path)
	if err != nil {
		return 0, err
	}
	if v, ok := sc.plainInt(c); c != eof && ok {
		sc.element()
		return v, nil
	}
	tok, err := sc.Token(path)
	if err != nil {
		return 0, err
	}
	n, ok := tok.(json.Number)
	if !ok {
		return 0, sc.TypeErr(path, "a number", tok)
	}
	return sc.ParseInt(path, n)
}

// plainInt consumes an integer written as JSON digits (optionally negative, no leading zeros) that fits in
// int64 and is followed by a delimiter, and reports false, consuming nothing, for anything else. It needs the
// whole literal in the buffer; one that straddles a refill goes the slow way.
func (sc *scanner) plainInt(c int) (int64, bool) {
	b := sc.buf[sc.pos:sc.end]
	i, neg := 0, c == '-'
	if neg {
		i++
	}
	start := i
	var v uint64
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if v > (1<<63)/10 {
			return 0, false
		}
		v = v*10 + uint64(b[i]-'0')
	}
	digits := i - start
	switch {
	case digits == 0, digits > 1 && b[start] == '0', i == len(b):
		return 0, false
	case b[i] != ',' && b[i] != ']' && b[i] != ' ' && b[i] != '\n' && b[i] != '\r' && b[i] != '\t':
		return 0, false
	case neg && v > 1<<63, !neg && v > 1<<63-1:
		return 0, false
	}
	sc.pos += i
	sc.off += int64(i)
	if neg {
		return -int64(v), true
	}
	return int64(v), true
}

// ParseInt parses a number that must be an integer.
func (sc *scanner) ParseInt(path string, n json.Number) (int64, error) {
	v, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		if _, ferr := strconv.ParseFloat(string(n), 64); ferr == nil {
			for _, c := range []byte(n) {
				if c == '.' || c == 'e' || c == 'E' {
					return 0, sc.Errf(path, "not an integer (%s)", n)
				}
			}
		}
		return 0, sc.Errf(path, "integer out of range (%s)", n)
	}
	return v, nil
}

// ExpectDelim reads the next token, which must be d.
func (sc *scanner) ExpectDelim(path string, d json.Delim) error {
	tok, err := sc.Token(path)
	if err != nil {
		return err
	}
	if tok != d {
		want := map[json.Delim]string{'[': "an array", ']': "end of array"}[d]
		return sc.TypeErr(path, want, tok)
	}
	return nil
}

// End checks that only white space follows the timeline.
func (sc *scanner) End() error {
	c, err := sc.peek("")
	if err != nil {
		return err
	}
	if c != eof {
		tok, err := sc.Token("")
		if err != nil {
			return err
		}
		return sc.Errf("", "trailing data after the JSON value (%s)", input.DescribeToken(tok))
	}
	return nil
}
