package units

import (
	"encoding/json"
	"io"
	"slices"
)

// WriteJSON writes v as two-space indented JSON followed by a newline, the layout of every JSON file and
// --format json output of memscan. HTML characters are not escaped: the files are read by people and scripts,
// never embedded in a page unquoted.
//
// The indentation is added while the compact encoding is written out, byte for byte what the encoder's own
// SetIndent gives, without the indented copy SetIndent builds in memory first: a trace's summary.json with its
// timeline detail runs to tens of megabytes, and that copy to as many more.
func WriteJSON(w io.Writer, v any) error { return writeJSON(NewIndentWriter(w), v) }

// WriteJSONRows is WriteJSON with a list's elements of up to rowLimit compact bytes on one line each
// (NewRowIndentWriter).
func WriteJSONRows(w io.Writer, v any, rowLimit int) error {
	return writeJSON(NewRowIndentWriter(w, rowLimit), v)
}

func writeJSON(iw *IndentWriter, v any) error {
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

// NewRowIndentWriter returns an IndentWriter writing to w that puts every object or array that is an element of
// an array on one line when its compact form takes at most rowLimit bytes: a table's rows read as rows, and a
// trace's per-iteration tables (tens of thousands of rows of a dozen fields) take a line each instead of a screen,
// half the bytes. Inside a row a space follows every comma and colon.
func NewRowIndentWriter(w io.Writer, rowLimit int) *IndentWriter {
	iw := NewIndentWriter(w)
	iw.iw.rowLimit = rowLimit
	return iw
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

	// rowLimit > 0 puts array elements of at most that many compact bytes on one line (NewRowIndentWriter).
	rowLimit int
	// arrays says of each open bracket whether it opened an array, so that an opening bracket is known to start
	// an element of one.
	arrays []bool
	// inRow is set while an element that may still be a row is written, spaced, from buf[rowStart:]; rowBytes
	// counts its compact bytes, rowDepth the brackets open in it (its strings use inString and escaped). buf is
	// not flushed meanwhile, since an element that turns out too long is taken back out of it and written again;
	// noRow then makes its opening bracket open normally.
	inRow              bool
	rowStart, rowBytes int
	rowDepth           int
	noRow              bool
}

func (iw *indentWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if len(iw.buf) >= indentChunk-256 && !iw.inRow {
			if err := iw.flush(); err != nil {
				return 0, err
			}
		}
		if iw.inRow {
			k, closed := iw.rowWrite(p)
			p = p[k:]
			switch {
			case iw.rowBytes > iw.rowLimit:
				// Too long for a row: taken back and written as any element is, its own elements given their
				// chance.
				r := compactRow(iw.buf[iw.rowStart:])
				iw.buf = iw.buf[:iw.rowStart]
				iw.inRow, iw.noRow = false, true
				iw.inString, iw.escaped = false, false // r is written again from its opening bracket
				if _, err := iw.Write(r); err != nil {
					return 0, err
				}
			case closed:
				iw.inRow = false
			}
			continue
		}
		if iw.inString {
			p = p[iw.stringRun(p):]
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
			if iw.rowLimit > 0 && !iw.noRow && len(iw.arrays) > 0 && iw.arrays[len(iw.arrays)-1] {
				iw.inRow, iw.rowStart, iw.rowBytes = true, len(iw.buf), 1
				iw.rowDepth = 1
				iw.buf = append(iw.buf, c)
				p = p[1:]
				continue
			}
			iw.noRow = false
			iw.needIndent = true
			if iw.rowLimit > 0 {
				iw.arrays = append(iw.arrays, c == '[')
			}
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
			if len(iw.arrays) > 0 {
				iw.arrays = iw.arrays[:len(iw.arrays)-1]
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
	if len(iw.buf) >= indentChunk-256 && !iw.inRow {
		if err := iw.flush(); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// rowWrite writes the bytes of p that belong to the row being written, spaced, up to its closing bracket or one
// byte past the row limit, and returns how many it took and whether the row closed.
func (iw *indentWriter) rowWrite(p []byte) (int, bool) {
	lim := min(len(p), iw.rowLimit+1-iw.rowBytes)
	// A byte becomes at most two (a comma or colon and its space): with room for all of them made first, the loop
	// stores bytes by index in a local slice. Appending runs of a few bytes (a table's numbers and keys) was a
	// copy call each, and through iw every append stored the slice back: a long training loop's summary.json is
	// 54 MB of rows.
	iw.buf = slices.Grow(iw.buf, 2*lim)
	buf, o := iw.buf[:cap(iw.buf)], len(iw.buf)
	depth := iw.rowDepth
	k := 0
	if iw.inString {
		// A string that a backslash or the end of the last write interrupted: stringRun takes it on.
		iw.buf = buf[:o]
		k += iw.stringRun(p[:lim])
		buf, o = iw.buf[:cap(iw.buf)], len(iw.buf)
	}
	closed := false
loop:
	for k < lim {
		c := p[k]
		k++
		if !layoutBytes[c] {
			// A number or literal: copied up to the next byte that lays out (most of a table's bytes are digits).
			buf[o] = c
			o, k = copyRun(buf, o+1, p, k, lim, &layoutBytes)
			continue
		}
		switch c {
		case '"':
			// A string's bytes up to its closing quote (every key) or a backslash.
			buf[o] = c
			o, k = copyRun(buf, o+1, p, k, lim, &stringStops)
			if k < lim && p[k] == '"' {
				buf[o] = '"'
				o++
				k++
				continue
			}
			// A backslash, or the end of p: stringRun takes the string on, up to its closing quote or lim.
			iw.inString = true
			iw.buf = buf[:o]
			k += iw.stringRun(p[k:lim])
			buf, o = iw.buf[:cap(iw.buf)], len(iw.buf)
		case ',', ':':
			buf[o], buf[o+1] = c, ' '
			o += 2
		case '{', '[':
			depth++
			buf[o] = c
			o++
		case '}', ']':
			buf[o] = c
			o++
			depth--
			if depth == 0 {
				closed = true
				break loop
			}
		}
	}
	iw.buf, iw.rowDepth = buf[:o], depth
	iw.rowBytes += k
	return k, closed
}

// stringRun copies the bytes of the string being written from p to buf, up to and including its closing quote (a
// backslash makes the next byte plain), and returns how many it took; inString stays set when p ends first. Rows
// and the layout around them share it and the string state.
func (iw *indentWriter) stringRun(p []byte) int {
	k := 0
	for k < len(p) {
		if iw.escaped {
			iw.escaped = false
			iw.buf = append(iw.buf, p[k])
			k++
			continue
		}
		j := k + plainRun(p[k:])
		if j == len(p) {
			iw.buf = append(iw.buf, p[k:]...)
			return len(p)
		}
		iw.buf = append(iw.buf, p[k:j+1]...)
		k = j + 1
		if p[j] == '"' {
			iw.inString = false
			return k
		}
		iw.escaped = true
	}
	return k
}

// plainRun returns how many bytes of p, inside a string, come before its closing quote or a backslash (len(p)
// when neither does): the bytes copied as they are.
func plainRun(p []byte) int {
	j := 0
	for j < len(p) && !stringStops[p[j]] {
		j++
	}
	return j
}

// copyRun copies the bytes of p from k, up to lim or the first byte that stops marks, to buf from o (which has
// room for them), and returns where both stand after them. It stores byte by byte: the runs of a JSON row (a
// number, a key) are a few bytes each, shorter than a copy call pays for.
func copyRun(buf []byte, o int, p []byte, k, lim int, stops *[256]bool) (int, int) {
	for k < lim && !stops[p[k]] {
		buf[o] = p[k]
		o++
		k++
	}
	return o, k
}

// compactRow returns a copy of the spaced row r without the spaces rowWrite put after its commas and colons (the
// compact JSON written to the writer has no whitespace outside strings).
func compactRow(r []byte) []byte {
	out := make([]byte, 0, len(r))
	inString, escaped := false, false
	for i, c := range r {
		switch {
		case inString:
			if escaped {
				escaped = false
			} else if c == '\\' {
				escaped = true
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' && i > 0 && (r[i-1] == ',' || r[i-1] == ':'):
			continue
		}
		out = append(out, c)
	}
	return out
}

// layoutByte reports whether indentWriter acts on c outside strings.
func layoutByte(c byte) bool { return layoutBytes[c] }

// layoutBytes is layoutByte as a table: the writers test every byte of a number against it.
var layoutBytes = [256]bool{'"': true, '{': true, '[': true, ',': true, ':': true, '}': true, ']': true}

// stringStops are the bytes that end a string's plain run: its closing quote and a backslash.
var stringStops = [256]bool{'"': true, '\\': true}

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
