package gen

import (
	"encoding/binary"
	"io"
	"math"
)

// pickler writes protocol-4 pickles the way CPython's pickle.dump does: FRAMEd in about 64 KiB chunks, every
// str, dict, list and tuple MEMOIZEd, lists and dicts batched by 1000 with MARK/APPENDS/SETITEMS (a batch of
// one uses APPEND/SETITEM), and the smallest integer opcode that fits.
type pickler struct {
	w     io.Writer
	frame []byte
	out   []byte // scratch for the frame header
	n     int64  // bytes written to w
	memo  int    // next memo index
	keys  map[string]int
	err   error
	lists []batch
}

// batch tracks a list or dict being written item by item.
type batch struct {
	n, i int
	dict bool
}

const frameTarget = 64 << 10

func newPickler(w io.Writer) *pickler {
	p := &pickler{w: w, keys: make(map[string]int)}
	p.raw(0x80, 4) // PROTO 4 goes before the first frame
	p.flushRaw()
	return p
}

// raw appends bytes to the current frame.
func (p *pickler) raw(b ...byte) { p.frame = append(p.frame, b...) }

func (p *pickler) flushRaw() {
	if p.err != nil {
		return
	}
	k, err := p.w.Write(p.frame)
	p.n += int64(k)
	p.err = err
	p.frame = p.frame[:0]
}

// commit ends the current frame if it has reached the target size; call it between objects.
func (p *pickler) commit(force bool) {
	if p.err != nil || len(p.frame) == 0 || (!force && len(p.frame) < frameTarget) {
		return
	}
	hdr := append(p.out[:0], 0x95)
	hdr = binary.LittleEndian.AppendUint64(hdr, uint64(len(p.frame)))
	k, err := p.w.Write(hdr)
	p.n += int64(k)
	if err != nil {
		p.err = err
		return
	}
	p.flushRaw()
}

func (p *pickler) memoize() int {
	p.raw(0x94)
	p.memo++
	return p.memo - 1
}

func (p *pickler) get(idx int) {
	if idx < 256 {
		p.raw('h', byte(idx))
		return
	}
	p.raw('j')
	p.frame = binary.LittleEndian.AppendUint32(p.frame, uint32(idx))
}

// str writes a fresh str object.
func (p *pickler) str(s string) int {
	if len(s) < 256 {
		p.raw(0x8c, byte(len(s)))
	} else {
		p.raw('X')
		p.frame = binary.LittleEndian.AppendUint32(p.frame, uint32(len(s)))
	}
	p.frame = append(p.frame, s...)
	return p.memoize()
}

// key writes a str that CPython would share (an interned dict key): the first time in full, then by memo.
func (p *pickler) key(s string) {
	if idx, ok := p.keys[s]; ok {
		p.get(idx)
		return
	}
	p.keys[s] = p.str(s)
}

func (p *pickler) int(n int64) {
	switch {
	case n >= 0 && n < 256:
		p.raw('K', byte(n))
	case n >= 0 && n < 65536:
		p.raw('M', byte(n), byte(n>>8))
	case n >= math.MinInt32 && n <= math.MaxInt32:
		p.raw('J')
		p.frame = binary.LittleEndian.AppendUint32(p.frame, uint32(int32(n)))
	default:
		p.long(uint64(n), n < 0)
	}
}

// uint writes a non-negative integer that may exceed int64 (LONG1 with a ninth byte for the sign).
func (p *pickler) uint(u uint64) {
	if u <= math.MaxInt64 {
		p.int(int64(u))
		return
	}
	p.long(u, false)
}

// long writes LONG1 with the minimal two's-complement length, as CPython does.
func (p *pickler) long(u uint64, neg bool) {
	var b [9]byte
	binary.LittleEndian.PutUint64(b[:8], u)
	n := 8
	if neg {
		for n > 1 && b[n-1] == 0xff && b[n-2]&0x80 != 0 {
			n--
		}
	} else {
		for n > 1 && b[n-1] == 0 && b[n-2]&0x80 == 0 {
			n--
		}
		if b[n-1]&0x80 != 0 { // needs a zero byte to stay positive
			b[n] = 0
			n++
		}
	}
	p.raw(0x8a, byte(n))
	p.frame = append(p.frame, b[:n]...)
}

func (p *pickler) boolean(v bool) {
	if v {
		p.raw(0x88)
	} else {
		p.raw(0x89)
	}
}

func (p *pickler) float(f float64) {
	p.raw('G')
	p.frame = binary.BigEndian.AppendUint64(p.frame, math.Float64bits(f))
}

func (p *pickler) pair(a, b int64) {
	p.int(a)
	p.int(b)
	p.raw(0x86)
	p.memoize()
}

// begin starts a list (or dict) of n items; call item before and done after each item, then end.
func (p *pickler) begin(n int, dict bool) int {
	if dict {
		p.raw('}')
	} else {
		p.raw(']')
	}
	idx := p.memoize()
	p.lists = append(p.lists, batch{n: n, dict: dict})
	return idx
}

func (p *pickler) item() {
	b := &p.lists[len(p.lists)-1]
	if b.i%1000 == 0 && min(1000, b.n-b.i) > 1 {
		p.raw('(')
	}
}

func (p *pickler) done() {
	b := &p.lists[len(p.lists)-1]
	b.i++
	size := min(1000, b.n-(b.i-1)/1000*1000)
	if b.i%1000 == 0 || b.i == b.n {
		switch {
		case size > 1 && b.dict:
			p.raw('u')
		case size > 1:
			p.raw('e')
		case b.dict:
			p.raw('s')
		default:
			p.raw('a')
		}
	}
}

func (p *pickler) end() { p.lists = p.lists[:len(p.lists)-1] }

// dict writes a dict whose keys are known up front; fn writes each value. It returns the dict's memo index.
func (p *pickler) dict(keys []string, fn func(i int)) int {
	idx := p.begin(len(keys), true)
	for i, k := range keys {
		p.item()
		p.key(k)
		fn(i)
		p.done()
	}
	p.end()
	return idx
}

func (p *pickler) stop() error {
	p.raw('.')
	p.commit(true)
	return p.err
}
