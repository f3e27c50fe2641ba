package export

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/memscan/memscan/snapshot"
)

// Pickle opcodes; only those PyTorch's own snapshot files use (snapshot_format.md §1), so every reader of real
// snapshots, the web viewer's unpickler included, reads ours.
const (
	opProto           = 0x80
	opFrame           = 0x95
	opEmptyDict       = '}'
	opEmptyList       = ']'
	opMark            = '('
	opSetItems        = 'u'
	opAppends         = 'e'
	opAppend          = 'a'
	opMemoize         = 0x94
	opBinGet          = 'h'
	opLongBinGet      = 'j'
	opBinInt          = 'J'
	opBinInt1         = 'K'
	opBinInt2         = 'M'
	opLong1           = 0x8a
	opBinFloat        = 'G'
	opShortBinUnicode = 0x8c
	opBinUnicode      = 'X'
	opNewTrue         = 0x88
	opNewFalse        = 0x89
	opNone            = 'N'
	opTuple2          = 0x86
	opStop            = '.'
)

// frameTarget is the frame size Python's pickler aims for; frames end at object boundaries once they reach it.
const frameTarget = 64 << 10

// batchSize is how many items Python's pickler puts between MARK and APPENDS/SETITEMS.
const batchSize = 1000

// container is an open list or dict in the pickle being written.
type container struct {
	dict       bool
	n, written int
	batchEnd   int
	batchLen   int
}

// pickleEncoder writes a protocol-4 pickle. Frame lists shared in the model (one *Stack) are written once and
// referenced through the memo, as are identical frame dicts and strings, which keeps sliced files small.
type pickleEncoder struct {
	w       *bufio.Writer
	frame   []byte // the current frame's bytes
	open    []container
	memo    uint32
	strs    map[string]uint32
	stacks  map[*snapshot.Stack]uint32
	frameDs map[snapshot.Frame]uint32
	e       error
}

func newPickleEncoder(w io.Writer) *pickleEncoder {
	return &pickleEncoder{
		w:       bufio.NewWriterSize(w, 1<<16),
		strs:    make(map[string]uint32),
		stacks:  make(map[*snapshot.Stack]uint32),
		frameDs: make(map[snapshot.Frame]uint32),
	}
}

// commit writes the current frame when it has reached the target size (only called between objects).
func (p *pickleEncoder) commit(force bool) {
	if len(p.frame) == 0 || (!force && len(p.frame) < frameTarget) || p.e != nil {
		return
	}
	var hdr [9]byte
	hdr[0] = opFrame
	binary.LittleEndian.PutUint64(hdr[1:], uint64(len(p.frame)))
	if _, err := p.w.Write(hdr[:]); err != nil {
		p.e = err
		return
	}
	if _, err := p.w.Write(p.frame); err != nil {
		p.e = err
		return
	}
	p.frame = p.frame[:0]
}

func (p *pickleEncoder) op(b ...byte) { p.frame = append(p.frame, b...) }

func (p *pickleEncoder) memoize() uint32 {
	p.op(opMemoize)
	p.memo++
	return p.memo - 1
}

func (p *pickleEncoder) get(i uint32) {
	if i < 256 {
		p.op(opBinGet, byte(i))
		return
	}
	p.op(opLongBinGet)
	p.frame = binary.LittleEndian.AppendUint32(p.frame, i)
}

// startBatch opens the next MARK batch of the innermost container.
func (p *pickleEncoder) startBatch() {
	c := &p.open[len(p.open)-1]
	c.batchLen = min(batchSize, c.n-c.written)
	c.batchEnd = c.written + c.batchLen
	if c.dict || c.batchLen > 1 {
		p.op(opMark)
	}
}

// done records that one element (a list item, or a dict value after its key) is complete.
func (p *pickleEncoder) done() {
	if len(p.open) == 0 {
		p.commit(false)
		return
	}
	c := &p.open[len(p.open)-1]
	c.written++
	if c.written > c.n {
		if p.e == nil {
			p.e = fmt.Errorf("pickle encoder: container announced %d elements, got more", c.n)
		}
		return
	}
	if c.written == c.batchEnd {
		switch {
		case c.dict:
			p.op(opSetItems)
		case c.batchLen == 1:
			p.op(opAppend)
		default:
			p.op(opAppends)
		}
		if c.written < c.n {
			p.startBatch()
		}
	}
	p.commit(false)
}

// begin opens a dict or list of n elements. With memo the container is MEMOIZEd first, so that a later GET of
// the returned index can share it.
func (p *pickleEncoder) begin(dict bool, n int, memo bool) (idx uint32) {
	if dict {
		p.op(opEmptyDict)
	} else {
		p.op(opEmptyList)
	}
	if memo {
		idx = p.memoize()
	}
	p.open = append(p.open, container{dict: dict, n: n})
	if n > 0 {
		p.startBatch()
	}
	return idx
}

func (p *pickleEncoder) end() {
	c := p.open[len(p.open)-1]
	if c.written != c.n && p.e == nil {
		p.e = fmt.Errorf("pickle encoder: container announced %d elements, got %d", c.n, c.written)
	}
	p.open = p.open[:len(p.open)-1]
	p.done()
}

func (p *pickleEncoder) beginDict(n int) { p.begin(true, n, false) }
func (p *pickleEncoder) endDict()        { p.end() }
func (p *pickleEncoder) beginList(n int) { p.begin(false, n, false) }
func (p *pickleEncoder) endList()        { p.end() }
func (p *pickleEncoder) key(k string)    { p.rawStr(k) }
func (p *pickleEncoder) str(s string)    { p.rawStr(s); p.done() }
func (p *pickleEncoder) int(v int64)     { p.rawInt(v); p.done() }
func (p *pickleEncoder) bool(v bool) {
	if v {
		p.op(opNewTrue)
	} else {
		p.op(opNewFalse)
	}
	p.done()
}
func (p *pickleEncoder) none() {
	p.op(opNone)
	p.done()
}
func (p *pickleEncoder) float(v float64) {
	p.op(opBinFloat)
	p.frame = binary.BigEndian.AppendUint64(p.frame, math.Float64bits(v))
	p.done()
}
func (p *pickleEncoder) tuple2(a, b int64) {
	p.rawInt(a)
	p.rawInt(b)
	p.op(opTuple2)
	p.done()
}

func (p *pickleEncoder) uint(v uint64) {
	if v <= math.MaxInt64 {
		p.rawInt(int64(v))
	} else {
		// Nine bytes: the value plus a zero sign byte, as Python encodes ints with the top bit set.
		p.op(opLong1, 9)
		p.frame = binary.LittleEndian.AppendUint64(p.frame, v)
		p.op(0)
	}
	p.done()
}

func (p *pickleEncoder) rawStr(s string) {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD") // pickle strings are UTF-8; Python rejects anything else
	}
	if i, ok := p.strs[s]; ok {
		p.get(i)
		return
	}
	if len(s) < 256 {
		p.op(opShortBinUnicode, byte(len(s)))
	} else {
		p.op(opBinUnicode)
		p.frame = binary.LittleEndian.AppendUint32(p.frame, uint32(len(s)))
	}
	p.frame = append(p.frame, s...)
	p.strs[s] = p.memoize()
}

// rawInt picks the shortest integer opcode, as Python's pickler does.
func (p *pickleEncoder) rawInt(v int64) {
	switch {
	case v >= 0 && v < 1<<8:
		p.op(opBinInt1, byte(v))
	case v >= 0 && v < 1<<16:
		p.op(opBinInt2, byte(v), byte(v>>8))
	case v >= math.MinInt32 && v <= math.MaxInt32:
		p.op(opBinInt)
		p.frame = binary.LittleEndian.AppendUint32(p.frame, uint32(int32(v)))
	default:
		// LONG1: minimal little-endian two's complement.
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(v))
		n := 8
		for n > 1 {
			top, next := b[n-1], b[n-2]
			if (top == 0 && next&0x80 == 0) || (top == 0xff && next&0x80 != 0) {
				n--
				continue
			}
			break
		}
		p.op(opLong1, byte(n))
		p.frame = append(p.frame, b[:n]...)
	}
}

func (p *pickleEncoder) frames(st *snapshot.Stack) {
	if st == nil || len(st.Frames) == 0 {
		p.op(opEmptyList)
		p.done()
		return
	}
	if i, ok := p.stacks[st]; ok {
		p.get(i)
		p.done()
		return
	}
	p.stacks[st] = p.begin(false, len(st.Frames), true)
	for _, f := range st.Frames {
		if i, ok := p.frameDs[f]; ok {
			p.get(i)
			p.done()
			continue
		}
		p.frameDs[f] = p.begin(true, frameKeys, true)
		frameFields(p, f)
		p.end()
	}
	p.end()
}

func (p *pickleEncoder) err() error { return p.e }

// WritePickle writes s as a protocol-4 pickle of PyTorch's snapshot dict.
func WritePickle(ctx context.Context, w io.Writer, s *snapshot.Snapshot) error {
	p := newPickleEncoder(w)
	if _, err := p.w.Write([]byte{opProto, 4}); err != nil {
		return fmt.Errorf("writing pickle: %w", err)
	}
	if err := writeSnapshot(ctx, p, s); err != nil {
		return err
	}
	p.op(opStop)
	p.commit(true)
	if p.e != nil {
		return fmt.Errorf("writing pickle: %w", p.e)
	}
	if err := p.w.Flush(); err != nil {
		return fmt.Errorf("writing pickle: %w", err)
	}
	return nil
}
