package units

import (
	"encoding/json"
	"io"
)

// WriteJSON writes v as two-space indented JSON followed by a newline, the layout of every JSON file and
// --format json output of memscan. HTML characters are not escaped: the files are read by people and scripts,
// never embedded in a page unquoted.
//
// The indentation is added while the compact encoding is written out, byte for byte what the encoder's own
// SetIndent gives, without the indented copy SetIndent builds in memory first: a trace's summary.json with its
// timeline detail runs to tens of megabytes, and that copy to as many more.
func WriteJSON(w io.Writer, v any) error {
	iw := NewIndentWriter(w)
	enc := json.NewEncoder(iw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return err
	}
	return iw.Flush()
}

// IndentWriter indents compact JSON written to it in any pieces, as WriteJSON lays its files out, for writers that
// stream their JSON rather than encode one value. Flush writes out what is left.
type IndentWriter struct{ iw indentWriter }

// NewIndentWriter returns an IndentWriter writing to w.
func NewIndentWriter(w io.Writer) *IndentWriter {
	return &IndentWriter{indentWriter{w: w, buf: make([]byte, 0, indentChunk)}}
}

func (w *IndentWriter) Write(p []byte) (int, error) { return w.iw.Write(p) }

// Flush writes what is gathered on and returns the first error writing met.
func (w *IndentWriter) Flush() error { return w.iw.flush() }

// indentChunk is how much indented output indentWriter gathers before writing it on.
const indentChunk = 64 << 10

// indentWriter indents the compact JSON written to it as encoding/json's Indent does with no prefix and two spaces:
// a newline and the depth's indentation after every opening bracket, comma and before every closing bracket, a
// space after every colon, and empty objects and arrays kept as {} and []. The encoder's output holds no
// whitespace outside strings but the final newline, which is copied as is.
type indentWriter struct {
	w   io.Writer
	buf []byte
	// The state between writes: inside a string, after its backslash, after an opening bracket whose line break
	// waits for the next byte, and the depth.
	inString, escaped, needIndent bool
	depth                         int
	err                           error
}

func (iw *indentWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if len(iw.buf) >= indentChunk-256 {
			if err := iw.flush(); err != nil {
				return 0, err
			}
		}
		if iw.inString {
			// A string's bytes go out as they are up to its closing quote; a backslash makes the next byte plain.
			if iw.escaped {
				iw.escaped = false
				iw.buf = append(iw.buf, p[0])
				p = p[1:]
				continue
			}
			k := 0
			for k < len(p) && p[k] != '"' && p[k] != '\\' {
				k++
			}
			if k == len(p) {
				iw.buf = append(iw.buf, p...)
				break
			}
			iw.buf = append(iw.buf, p[:k+1]...)
			if p[k] == '\\' {
				iw.escaped = true
			} else {
				iw.inString = false
			}
			p = p[k+1:]
			continue
		}
		c := p[0]
		if iw.needIndent && c != '}' && c != ']' {
			iw.needIndent = false
			iw.depth++
			iw.newline()
		}
		switch c {
		case '"':
			iw.inString = true
			iw.buf = append(iw.buf, c)
		case '{', '[':
			iw.needIndent = true
			iw.buf = append(iw.buf, c)
		case ',':
			iw.buf = append(iw.buf, c)
			iw.newline()
		case ':':
			iw.buf = append(iw.buf, c, ' ')
		case '}', ']':
			if iw.needIndent {
				iw.needIndent = false
			} else {
				iw.depth--
				iw.newline()
			}
			iw.buf = append(iw.buf, c)
		default:
			// A number, literal or newline: copied up to the next byte that lays out.
			k := 1
			for k < len(p) && !layoutByte(p[k]) {
				k++
			}
			iw.buf = append(iw.buf, p[:k]...)
			p = p[k:]
			continue
		}
		p = p[1:]
	}
	if len(iw.buf) >= indentChunk-256 {
		if err := iw.flush(); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// layoutByte reports whether indentWriter acts on c outside strings.
func layoutByte(c byte) bool {
	switch c {
	case '"', '{', '[', ',', ':', '}', ']':
		return true
	}
	return false
}

func (iw *indentWriter) newline() {
	iw.buf = append(iw.buf, '\n')
	// A long file's lines are mostly indentation (one number per line in a trace's tables): copied in one piece
	// up to a depth of 32 rather than two spaces at a time.
	for n := 2 * iw.depth; n > 0; {
		k := min(n, len(indentSpaces))
		iw.buf = append(iw.buf, indentSpaces[:k]...)
		n -= k
	}
}

// indentSpaces is the indentation newline copies at once.
const indentSpaces = "                                                                "

// flush writes what is gathered on.
func (iw *indentWriter) flush() error {
	if iw.err == nil && len(iw.buf) > 0 {
		_, iw.err = iw.w.Write(iw.buf)
	}
	iw.buf = iw.buf[:0]
	return iw.err
}
