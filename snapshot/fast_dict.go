package snapshot

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
)

// The flat-dict shortcut. Most of a large snapshot is trace entries, and nearly all of those (and the frames
// and blocks) are dicts of plain values that CPython writes as
//
//	EMPTY_DICT [MEMOIZE] MARK (key value)* SETITEMS
//
// with keys and most values fetched from the memo. When such a dict lies whole in the buffered bytes of the
// current frame, flatDict reads its opcodes straight from the buffer, without the VM's stack and dispatch, into
// the fields that convertDict would fill, and converts it as SETITEMS would. What the dict does to the decoder's
// state is what the VM would do, in the same order: the memo stores are collected while reading and applied
// only once the dict has been read whole, so that on any opcode or value the shortcut does not read it returns
// having changed nothing but the string table (a string interned early gets the id the VM gives it), and the VM
// reads the dict instead. The shortcut never reports an error of its own: what the VM would refuse or word, it
// leaves to the VM.

// flatMaxPairs bounds the items of one dict the shortcut reads; a record has at most a dozen.
const flatMaxPairs = 64

// memoWrite is a memo store the shortcut has read but not applied yet.
type memoWrite struct{ idx, cell uint64 }

// flatState is the shortcut's scratch state for the dict being read.
type flatState struct {
	self   uint64      // the memo cell of the dict itself (pending while it is read), noCell when none
	writes []memoWrite // the other memo stores read so far, in order
	memoN  uint64      // the VM's count of memo cells set (MEMOIZE's index) once these are applied
	// below is an index below which the memo holds its cells as they will be: none is pending, none written.
	below uint64
	// list says that the dict's frames are a fresh list (flatFrames), made when the dict is: frames are its
	// frame ids, in order, and listMemo 1 + the memo cell it is stored at (0: none).
	list     bool
	frames   []int32
	listMemo uint64
}

// noCell is no memo index: indexes come from 4-byte operands or the count of cells set.
const noCell = ^uint64(0)

// flatCell returns memo cell idx as it will be once the pending stores are applied. The hot callers test
// below themselves and call flatCellSlow.
func (d *fastDecoder) flatCell(idx uint64) uint64 {
	if idx < d.flat.below {
		return d.memo.at(idx)
	}
	return d.flatCellSlow(idx)
}

func (d *fastDecoder) flatCellSlow(idx uint64) uint64 {
	w := d.flat.writes
	for j := len(w) - 1; j >= 0; j-- {
		if w[j].idx == idx {
			return w[j].cell
		}
	}
	if idx == d.flat.self {
		return cellPending
	}
	return d.getMemo(idx)
}

// flatStore records the memo store of cell c at idx, counting the cells set as setMemo will.
func (d *fastDecoder) flatStore(idx uint64, c uint64) {
	if d.flatCell(idx) == cellEmpty {
		d.flat.memoN++
	}
	d.flat.writes = append(d.flat.writes, memoWrite{idx, c})
	d.flat.below = 0
}

// flatDict reads the dict whose EMPTY_DICT opcode was just read, if it has the flat shape and is a record that
// its fields alone describe (a trace entry, frame, block, history entry or segment), and pushes what it became.
// It returns about the number of opcodes it read after EMPTY_DICT (for the cancellation check's cadence), or 0
// when it left the dict to the VM and read nothing; err is the conversion's, which the VM would have met at
// SETITEMS.
func (d *fastDecoder) flatDict() (ops int, err error) {
	// The VM would push the dict and its items; the shortcut reads only what it can push without the stack
	// growing past its limit, and leaves the outermost value (which decides the file's shape) to the VM.
	if d.noFlat || d.shape.set || len(d.stack) == 0 || len(d.marks) >= fastMaxMarks ||
		len(d.stack)+2*flatMaxPairs+1 >= fastMaxStack {
		return 0, nil
	}
	b := d.buf[d.pos:d.lim]
	d.flat.writes = d.flat.writes[:0]
	d.flat.memoN = d.memoN
	d.flat.self = noCell
	d.flat.below = d.memo.n
	d.flat.list, d.flat.listMemo = false, 0
	dictIdx := int64(-1)
	i := 0
	// The dict's own memo store: the VM marks the cell pending until SETITEMS converts the dict. (An index
	// beyond int64 is left to the VM, as converted takes the index as an int64.)
	if idx, n := memoIndex(b, i, d.flat.memoN); n > 0 && idx <= math.MaxInt64 {
		if d.getMemo(idx) == cellEmpty {
			d.flat.memoN++
		}
		d.flat.self, dictIdx = idx, int64(idx)
		d.flat.below = min(d.flat.below, idx)
		i += n
	}
	if i >= len(b) || b[i] != opMark {
		return 0, nil
	}
	i++
	// Items go straight into the fields convertDict would fill. What convertDict checks item by item is summed
	// up instead: a field given twice, and a value that is not harmless under a key the record may not read (the
	// VM words those cases, which no snapshot has). Only lists can be harmful; a sealed frames list read from
	// the memo (n2 set) is not.
	var present, lists uint64
	pairs := 0
items:
	for ; ; pairs++ {
		if i >= len(b) || pairs == flatMaxPairs {
			return 0, nil
		}
		// The key: a string, nearly always from the memo.
		var c, idx uint64
		var f uint8
		cacheable := false // the key was read from memo cell idx, below any cell this dict writes
		if b[i] == opBinGet && i+2 < len(b) {
			if s := &d.keyField[b[i+1]&(keySlots-1)]; s.cell == uint64(b[i+1])+1 && uint64(b[i+1]) < d.flat.below {
				f, i = s.field, i+2
				goto value
			}
		} else if b[i] == opLongBinGet && i+5 < len(b) {
			idx := uint64(binary.LittleEndian.Uint32(b[i+1:]))
			if s := &d.keyField[idx&(keySlots-1)]; s.cell == idx+1 && idx < d.flat.below {
				f, i = s.field, i+5
				goto value
			}
		}
		switch b[i] {
		case opBinGet, opLongBinGet:
			if b[i] == opBinGet {
				if i+2 > len(b) {
					return 0, nil
				}
				idx, i = uint64(b[i+1]), i+2
			} else {
				if i+5 > len(b) {
					return 0, nil
				}
				idx, i = uint64(binary.LittleEndian.Uint32(b[i+1:])), i+5
			}
			if idx < d.flat.below { // flatCell, inlined by hand
				c = d.memo.at(idx)
				cacheable = true
			} else {
				c = d.flatCellSlow(idx)
			}
		case opSetItems:
			break items
		default:
			k, n := d.flatValue(b, i)
			if n == 0 || k.k != vStr {
				return 0, nil // keys are strings in every snapshot; the VM words anything else
			}
			c = cellStr | uint64(k.n)
			i = n
		}
		if c&cellKind != cellStr || i >= len(b) {
			return 0, nil
		}
		f = d.strKey[c&^cellKind]
		if cacheable {
			d.keyField[idx&(keySlots-1)] = keySlot{idx + 1, f}
		}
	value:
		// The value: the common opcodes here, the others (and those near the end of the buffer) in flatValue.
		var v val
		switch op := b[i]; {
		case op == opBinGet && i+2 < len(b) || op == opLongBinGet && i+5 < len(b):
			if op == opBinGet {
				idx, i = uint64(b[i+1]), i+2
			} else {
				idx, i = uint64(binary.LittleEndian.Uint32(b[i+1:])), i+5
			}
			if idx < d.flat.below {
				c = d.memo.at(idx)
			} else {
				c = d.flatCellSlow(idx)
			}
			var ok bool
			if v, ok = d.cellValue(c); !ok {
				return 0, nil
			}
		case op == opBinInt1 && i+2 < len(b) && !isMemoStore(b[i+2]):
			v, i = val{k: vInt, n: int64(b[i+1])}, i+2
		case op == opBinInt2 && i+3 < len(b) && !isMemoStore(b[i+3]):
			v, i = val{k: vInt, n: int64(binary.LittleEndian.Uint16(b[i+1:]))}, i+3
		case op == opBinInt && i+5 < len(b) && !isMemoStore(b[i+5]):
			v, i = val{k: vInt, n: int64(int32(binary.LittleEndian.Uint32(b[i+1:])))}, i+5
		case op == opEmptyList && f == fFrames && !d.flat.list:
			var n int
			if v, n = d.flatFrames(b, i); n == 0 {
				return 0, nil
			}
			i = n
		case op == opLong1 && i+10 < len(b) && b[i+1]-1 < 8 && !isMemoStore(b[i+2+int(b[i+1])]):
			// Addresses and times: one load, sign-extended by shifts.
			l := 8 * uint(b[i+1])
			u := binary.LittleEndian.Uint64(b[i+2:])
			v, i = val{k: vInt, n: int64(u<<(64-l)) >> (64 - l)}, i+2+int(b[i+1])
		default:
			var n int
			if v, n = d.flatValue(b, i); n == 0 {
				return 0, nil
			}
			i = n
		}
		if f == fNone {
			if v.k == vList && v.n2 == 0 && !d.harmless(v) {
				return 0, nil
			}
			continue
		}
		if present&bit(f) != 0 {
			return 0, nil
		}
		present |= bit(f)
		d.fields[f] = v
		if v.k == vList && v.n2 == 0 {
			lists |= bit(f)
		}
	}
	var role int
	switch present & maskAnyRole {
	case maskEntry:
		role = roleEntry
	case maskFrame:
		role = roleFrame
	default:
		role = dictRole(present)
		switch role {
		case roleNone, roleConflict, roleAnn, roleSettings:
			return 0, nil
		}
	}
	for m := lists &^ roleReads[role]; m != 0; m &= m - 1 {
		if !d.harmless(d.fields[bits.TrailingZeros64(m)]) {
			return 0, nil
		}
	}
	// The dict is read: from here on, the VM's effects in its order.
	if dictIdx >= 0 {
		d.setMemo(uint64(dictIdx), cellPending)
	}
	if d.flat.list {
		// The list flatFrames read, as the VM builds it: EMPTY_LIST, its memo store (among the writes below,
		// which name it by the id it gets here), then its items by one APPEND(S).
		l := &listObj{memo: d.flat.listMemo}
		if len(d.flat.frames) > 0 {
			l.kind, l.idx = lFrames, slices.Clone(d.flat.frames)
		}
		d.lists = append(d.lists, l)
	}
	for _, w := range d.flat.writes {
		d.setMemo(w.idx, w.cell)
	}
	d.opStart = d.base + int64(d.pos+i)
	d.pos += i + 1
	v, err := d.convertRecord(role, present)
	if err != nil {
		return 1, err
	}
	d.converted(dictIdx, v)
	d.flatRead++
	return 3 + 2*pairs + len(d.flat.writes), d.push(v)
}

// maskAnyRole is every key that decides what a dict is.
const maskAnyRole = maskEntry | maskFrame | maskBlock | maskHist | maskAnn | maskSegment | maskTop | maskSettings

// memoIndex reads a memo store opcode at b[i:] (MEMOIZE, BINPUT or LONG_BINPUT) and returns its index and
// length, or a length of 0 when there is none (or it is cut off). memoN is MEMOIZE's index.
func memoIndex(b []byte, i int, memoN uint64) (uint64, int) {
	if i >= len(b) {
		return 0, 0
	}
	switch b[i] {
	case opMemoize:
		return memoN, 1
	case opBinPut:
		if i+2 <= len(b) {
			return uint64(b[i+1]), 2
		}
	case opLongBinPut:
		if i+5 <= len(b) {
			return uint64(binary.LittleEndian.Uint32(b[i+1:])), 5
		}
	}
	return 0, 0
}

// flatValue reads one plain value at b[i:], and the memo stores of a string that follow it. It returns the value
// and the offset after it, or 0 when the opcodes are not a value the shortcut reads.
func (d *fastDecoder) flatValue(b []byte, i int) (val, int) {
	if i >= len(b) {
		return val{}, 0
	}
	var v val
	n := i + 1 // the end of the value, checked against len(b) below
	switch b[i] {
	case opBinGet, opLongBinGet:
		var idx uint64
		if b[i] == opBinGet {
			if n += 1; n > len(b) {
				return val{}, 0
			}
			idx = uint64(b[i+1])
		} else {
			if n += 4; n > len(b) {
				return val{}, 0
			}
			idx = uint64(binary.LittleEndian.Uint32(b[i+1:]))
		}
		var c uint64
		if idx < d.flat.below { // flatCell, inlined by hand
			c = d.memo.at(idx)
		} else {
			c = d.flatCellSlow(idx)
		}
		v, ok := d.cellValue(c)
		if !ok {
			return val{}, 0
		}
		// CPython never stores a value it fetched from the memo again; the VM handles it if a pickle does.
		return v, n
	case opBinInt1:
		if n += 1; n > len(b) {
			return val{}, 0
		}
		v = val{k: vInt, n: int64(b[i+1])}
	case opBinInt2:
		if n += 2; n > len(b) {
			return val{}, 0
		}
		v = val{k: vInt, n: int64(binary.LittleEndian.Uint16(b[i+1:]))}
	case opBinInt:
		if n += 4; n > len(b) {
			return val{}, 0
		}
		v = val{k: vInt, n: int64(int32(binary.LittleEndian.Uint32(b[i+1:])))}
	case opLong1:
		if n+1 > len(b) || int(b[i+1]) > fastMaxLongBytes || n+1+int(b[i+1]) > len(b) {
			return val{}, 0
		}
		var ok bool
		if v, ok = longVal(b[n+1 : n+1+int(b[i+1])]); !ok {
			return val{}, 0
		}
		n += 1 + int(b[i+1])
	case opShortBinUni, opBinUnicode:
		return d.flatStr(b, i)
	case opNone:
		v = val{k: vNone}
	case opNewTrue:
		v = val{k: vBool, n: 1}
	case opNewFalse:
		v = val{k: vBool}
	case opBinFloat:
		if n += 8; n > len(b) {
			return val{}, 0
		}
		v = val{k: vFloat, n: int64(binary.BigEndian.Uint64(b[i+1:]))}
	default:
		return val{}, 0
	}
	// A memo store after a number is not what CPython writes; the VM keeps such values apart (memoVals).
	if n < len(b) && isMemoStore(b[n]) {
		return val{}, 0
	}
	return v, n
}

// flatStr reads a SHORT_BINUNICODE or BINUNICODE string at b[i:] and the memo stores that follow it.
func (d *fastDecoder) flatStr(b []byte, i int) (val, int) {
	var l, n int
	if b[i] == opShortBinUni {
		if i+2 > len(b) {
			return val{}, 0
		}
		l, n = int(b[i+1]), i+2
	} else {
		if i+5 > len(b) {
			return val{}, 0
		}
		u := binary.LittleEndian.Uint32(b[i+1:])
		if u > maxStringBytes || int(u) > len(b) {
			return val{}, 0
		}
		l, n = int(u), i+5
	}
	if n+l > len(b) {
		return val{}, 0
	}
	id, ok := d.intern(b[n : n+l])
	if !ok {
		return val{}, 0
	}
	n += l
	for {
		idx, m := memoIndex(b, n, d.flat.memoN)
		if m == 0 {
			return val{k: vStr, n: int64(id)}, n
		}
		d.flatStore(idx, cellStr|uint64(id))
		n += m
	}
}

// flatMaxFrames bounds the frames of a fresh list the shortcut reads: the pickler hands over at most a thousand
// items per APPENDS, and a longer list (several APPENDS) is left to the VM.
const flatMaxFrames = 1000

// flatFrames reads a fresh frames list at b[i:], as PyTorch writes an event's stack: EMPTY_LIST, at most one memo
// store, then its frames from the memo, by MARK … APPENDS or a single APPEND (none for an empty list). It returns
// the list's value, naming the list by the id it will get when the dict is made (flatDict makes it), or 0 when the
// opcodes are anything else.
func (d *fastDecoder) flatFrames(b []byte, i int) (val, int) {
	id := uint64(len(d.lists))
	if id > math.MaxInt32 {
		return val{}, 0
	}
	n := i + 1
	if idx, m := memoIndex(b, n, d.flat.memoN); m > 0 {
		if idx > math.MaxInt64 || idx == d.flat.self {
			return val{}, 0
		}
		d.flatStore(idx, cellList|id)
		d.flat.listMemo, n = idx+1, n+m
	}
	if n < len(b) && isMemoStore(b[n]) {
		return val{}, 0 // stored twice: the VM
	}
	frames := d.flat.frames[:0]
	// frame reads the memo fetch of a frame at b[n:] and moves n past it, or returns false and leaves n.
	frame := func() bool {
		var idx uint64
		m := n
		switch {
		case m+2 <= len(b) && b[m] == opBinGet:
			idx, m = uint64(b[m+1]), m+2
		case m+5 <= len(b) && b[m] == opLongBinGet:
			idx, m = uint64(binary.LittleEndian.Uint32(b[m+1:])), m+5
		default:
			return false
		}
		var c uint64
		if idx < d.flat.below {
			c = d.memo.at(idx)
		} else {
			c = d.flatCellSlow(idx)
		}
		if c&cellKind != cellFrame {
			return false
		}
		frames, n = append(frames, int32(c&^cellKind)), m
		return true
	}
	switch {
	case n < len(b) && b[n] == opMark:
		n++
		for n < len(b) && b[n] != opAppends {
			if len(frames) == flatMaxFrames || !frame() {
				return val{}, 0
			}
		}
		if n >= len(b) || len(frames) == 0 {
			return val{}, 0 // an empty MARK … APPENDS is not what the pickler writes
		}
		n++
	case frame():
		if n >= len(b) || b[n] != opAppend {
			return val{}, 0
		}
		n++
	}
	d.flat.frames, d.flat.list = frames, true
	return val{k: vList, n: int64(id)}, n
}

// isMemoStore reports whether op stores the top of the stack in the memo.
func isMemoStore(op byte) bool { return op == opMemoize || op == opBinPut || op == opLongBinPut }

// keySlots is the size of the decoder's key table (a power of two).
const keySlots = 256

// keySlot is one entry of the key table: the field of the string in memo cell cell−1 (cell 0: empty).
type keySlot struct {
	cell  uint64
	field uint8
}

// forgetKey clears the key table's slot of memo cell idx, which is being written.
func (d *fastDecoder) forgetKey(idx uint64) {
	if s := &d.keyField[idx&(keySlots-1)]; s.cell == idx+1 {
		s.cell = 0
	}
}
