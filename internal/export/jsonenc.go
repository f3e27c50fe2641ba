package export

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/memscan/memscan/snapshot"
)

// jsonEncoder streams the snapshot dict as JSON. Tuples become arrays, as json.dumps writes them.
type jsonEncoder struct {
	w     *bufio.Writer
	buf   []byte
	first []bool // per open container: no element written yet
	e     error
}

func (j *jsonEncoder) sep() {
	if n := len(j.first); n > 0 {
		if !j.first[n-1] {
			j.w.WriteByte(',')
		}
		j.first[n-1] = false
	}
}

func (j *jsonEncoder) beginDict(int) { j.sep(); j.w.WriteByte('{'); j.first = append(j.first, true) }
func (j *jsonEncoder) endDict()      { j.first = j.first[:len(j.first)-1]; j.w.WriteByte('}') }
func (j *jsonEncoder) beginList(int) { j.sep(); j.w.WriteByte('['); j.first = append(j.first, true) }
func (j *jsonEncoder) endList()      { j.first = j.first[:len(j.first)-1]; j.w.WriteByte(']') }

// key writes `"k":`; the value that follows must not write a separator, so the container is marked first again.
func (j *jsonEncoder) key(k string) {
	j.sep()
	j.quote(k)
	j.w.WriteByte(':')
	j.first[len(j.first)-1] = true
}

func (j *jsonEncoder) str(s string) { j.sep(); j.quote(s) }
func (j *jsonEncoder) int(v int64) {
	j.sep()
	j.buf = strconv.AppendInt(j.buf[:0], v, 10)
	j.w.Write(j.buf)
}
func (j *jsonEncoder) uint(v uint64) {
	j.sep()
	j.buf = strconv.AppendUint(j.buf[:0], v, 10)
	j.w.Write(j.buf)
}
func (j *jsonEncoder) float(v float64) {
	j.sep()
	switch {
	case math.IsNaN(v):
		j.w.WriteString("NaN") // what json.dumps writes; JSON.parse rejects it, but the allocator never records NaN
	case math.IsInf(v, 1):
		j.w.WriteString("Infinity")
	case math.IsInf(v, -1):
		j.w.WriteString("-Infinity")
	default:
		j.buf = strconv.AppendFloat(j.buf[:0], v, 'g', -1, 64)
		if math.Trunc(v) == v && math.Abs(v) < 1e16 {
			j.buf = append(j.buf, ".0"...)
		}
		j.w.Write(j.buf)
	}
}
func (j *jsonEncoder) bool(v bool) {
	j.sep()
	if v {
		j.w.WriteString("true")
	} else {
		j.w.WriteString("false")
	}
}
func (j *jsonEncoder) none() { j.sep(); j.w.WriteString("null") }
func (j *jsonEncoder) tuple2(a, b int64) {
	j.beginList(2)
	j.int(a)
	j.int(b)
	j.endList()
}
func (j *jsonEncoder) frames(st *snapshot.Stack) {
	if st == nil {
		j.beginList(0)
		j.endList()
		return
	}
	j.beginList(len(st.Frames))
	for _, f := range st.Frames {
		frameDict(j, f)
	}
	j.endList()
}

func (j *jsonEncoder) err() error { return j.e }

const hexDigits = "0123456789abcdef"

// quote writes s as a JSON string; invalid UTF-8 becomes U+FFFD so the output always parses.
func (j *jsonEncoder) quote(s string) {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain { // the common case: frame names and paths need no escaping
		j.w.WriteByte('"')
		j.w.WriteString(s)
		j.w.WriteByte('"')
		return
	}
	b := j.buf[:0]
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	b = append(b, '"')
	j.buf = b
	j.w.Write(b)
}

// WriteJSON writes the snapshot as the JSON rendition of PyTorch's snapshot dict (the same key names; tuples as
// arrays), which the current PyTorch memory viewer accepts in place of the pickle.
func WriteJSON(ctx context.Context, w io.Writer, s *snapshot.Snapshot) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	j := &jsonEncoder{w: bw}
	if err := writeSnapshot(ctx, j, s); err != nil {
		return err
	}
	bw.WriteByte('\n')
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing JSON: %w", err)
	}
	return nil
}
