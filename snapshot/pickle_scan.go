package snapshot

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
)

// Pickle opcodes (the names follow Python's pickletools).
const (
	opMark           = '('
	opStop           = '.'
	opPop            = '0'
	opPopMark        = '1'
	opDup            = '2'
	opFloat          = 'F'
	opInt            = 'I'
	opBinInt         = 'J'
	opBinInt1        = 'K'
	opLong           = 'L'
	opBinInt2        = 'M'
	opNone           = 'N'
	opPersID         = 'P'
	opBinPersID      = 'Q'
	opReduce         = 'R'
	opString         = 'S'
	opBinString      = 'T'
	opShortBinString = 'U'
	opUnicode        = 'V'
	opBinUnicode     = 'X'
	opAppend         = 'a'
	opBuild          = 'b'
	opGlobal         = 'c'
	opDict           = 'd'
	opEmptyDict      = '}'
	opAppends        = 'e'
	opGet            = 'g'
	opBinGet         = 'h'
	opInst           = 'i'
	opLongBinGet     = 'j'
	opList           = 'l'
	opEmptyList      = ']'
	opObj            = 'o'
	opPut            = 'p'
	opBinPut         = 'q'
	opLongBinPut     = 'r'
	opSetItem        = 's'
	opTuple          = 't'
	opEmptyTuple     = ')'
	opSetItems       = 'u'
	opBinFloat       = 'G'
	opProto          = 0x80
	opNewObj         = 0x81
	opExt1           = 0x82
	opExt2           = 0x83
	opExt4           = 0x84
	opTuple1         = 0x85
	opTuple2         = 0x86
	opTuple3         = 0x87
	opNewTrue        = 0x88
	opNewFalse       = 0x89
	opLong1          = 0x8a
	opLong4          = 0x8b
	opBinBytes       = 'B'
	opShortBinBytes  = 'C'
	opShortBinUni    = 0x8c
	opBinUnicode8    = 0x8d
	opBinBytes8      = 0x8e
	opEmptySet       = 0x8f
	opAddItems       = 0x90
	opFrozenSet      = 0x91
	opNewObjEx       = 0x92
	opStackGlobal    = 0x93
	opMemoize        = 0x94
	opFrame          = 0x95
	opByteArray8     = 0x96
	opNextBuffer     = 0x97
	opReadOnlyBuffer = 0x98
)

// refusedOps are the opcodes that import, call or construct Python objects, or reach outside the stream.
// A snapshot is plain data (dict/list/tuple/str/int/float/bool), so any of them means the file is not one,
// and accepting them would be unsafe.
var refusedOps = [256]string{
	opGlobal:         "GLOBAL",
	opStackGlobal:    "STACK_GLOBAL",
	opInst:           "INST",
	opObj:            "OBJ",
	opNewObj:         "NEWOBJ",
	opNewObjEx:       "NEWOBJ_EX",
	opReduce:         "REDUCE",
	opBuild:          "BUILD",
	opPersID:         "PERSID",
	opBinPersID:      "BINPERSID",
	opExt1:           "EXT1",
	opExt2:           "EXT2",
	opExt4:           "EXT4",
	opNextBuffer:     "NEXT_BUFFER",
	opReadOnlyBuffer: "READONLY_BUFFER",
	opEmptySet:       "EMPTY_SET",
	opFrozenSet:      "FROZENSET",
	opAddItems:       "ADDITEMS",
}

// Limits of the pre-scan. Real snapshots stay far below them; they exist so that hostile input cannot make the
// decoder allocate or compute without bound.
const (
	// maxMarkDepth bounds open MARKs: gopickle allocates a fresh stack slice per MARK.
	maxMarkDepth = 1000
	// maxIntBytes bounds LONG1/LONG4 payloads: an address needs at most 9 bytes, and gopickle converts longer
	// payloads in quadratic time.
	maxIntBytes = 16
	// maxNumberLine bounds the text forms INT, LONG and FLOAT.
	maxNumberLine = 64
	// maxStackValues bounds the values on the stack at once: gopickle holds each in a 16-byte interface, and a
	// snapshot pickle, whose writer batches lists and dicts by 1000, never has more than a few thousand.
	maxStackValues = 1 << 20
	// scanCheckEvery is how many opcodes pass between context checks.
	scanCheckEvery = 1 << 16
)

// Kinds of values the pre-scan tracks on its simulated stack.
const (
	kAbsent byte = iota // memo slot not set
	kScalar
	kList
	kDict
	kTuple
)

// scanError is a pre-scan failure at a byte offset.
type scanError struct {
	Offset int64
	Msg    string
	// refused: the opcode would load a Python object (see refusedOps).
	refused bool
}

func (e *scanError) Error() string { return fmt.Sprintf("byte %d: %s", e.Offset, e.Msg) }

// pickleScanner validates a whole pickle before gopickle sees it: every opcode is known and allowed, every
// length prefix fits in the bytes that remain (so no claimed 2 GB string is ever allocated), frames are well
// formed, the stack and memo are used consistently (APPEND only to lists, SETITEMS only to dicts with an even
// item count, GET only of set memo slots), MARK depth is bounded and integers are short. Everything gopickle
// could fail on, panic on, or allocate without bound is caught here with the offset of the opcode at fault.
type pickleScanner struct {
	data     []byte
	pos      int // next byte to read
	opStart  int // offset of the opcode being scanned
	frameEnd int // end of the current frame, 0 outside frames
	proto    int

	stack    []byte // kinds of the values above the innermost MARK, and below it
	marks    []int  // stack heights at each open MARK
	memo     []byte // dense memo kinds, indexed by memo key
	memoMap  map[uint64]byte
	memoSize int // number of distinct memo keys set (MEMOIZE uses it as the next key)
	shape    topShape
}

// scanPickle validates data and returns its protocol (0 when it has no PROTO opcode).
func scanPickle(ctx context.Context, data []byte) (int, error) {
	return scan(ctx, data, false)
}

// scanSnapshotPickle is scanPickle that also refuses, within a few opcodes, a pickle whose outermost value is
// not a snapshot's shape (see topShape).
func scanSnapshotPickle(ctx context.Context, data []byte) (int, error) {
	return scan(ctx, data, true)
}

func scan(ctx context.Context, data []byte, snapshotShape bool) (int, error) {
	s := &pickleScanner{data: data, proto: -1}
	for n := 0; ; n++ {
		if n%scanCheckEvery == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		if s.pos >= len(s.data) {
			if s.pos == 0 {
				return 0, s.fail("empty pickle")
			}
			return 0, &scanError{Offset: int64(s.pos), Msg: "truncated: the pickle ends without a STOP opcode"}
		}
		done, err := s.step()
		if err == nil && snapshotShape {
			err = s.checkShape(done)
		}
		if err != nil {
			return 0, err
		}
		if done {
			if s.proto < 0 {
				s.proto = 0
			}
			return s.proto, nil
		}
	}
}

func (s *pickleScanner) fail(format string, args ...any) error {
	return &scanError{Offset: int64(s.opStart), Msg: fmt.Sprintf(format, args...)}
}

// take consumes n argument bytes, honouring frame boundaries the way CPython's unframer does: a read either lies
// inside the current frame or starts exactly at its end (which leaves the frame).
func (s *pickleScanner) take(n uint64, what string) ([]byte, error) {
	if s.frameEnd > 0 {
		if s.pos == s.frameEnd {
			s.frameEnd = 0
		} else if n > uint64(s.frameEnd-s.pos) {
			return nil, s.fail("%s of %d bytes crosses the end of its frame (at byte %d)", what, n, s.frameEnd)
		}
	}
	if n > uint64(len(s.data)-s.pos) {
		return nil, s.fail("truncated: %s needs %d bytes but only %d remain", what, n, len(s.data)-s.pos)
	}
	b := s.data[s.pos : s.pos+int(n)]
	s.pos += int(n)
	return b, nil
}

// line consumes a newline-terminated argument and returns it without the newline.
func (s *pickleScanner) line(what string, max int) ([]byte, error) {
	if s.frameEnd > 0 && s.pos == s.frameEnd {
		s.frameEnd = 0
	}
	end := len(s.data)
	if s.frameEnd > 0 {
		end = s.frameEnd
	}
	i := bytes.IndexByte(s.data[s.pos:end], '\n')
	if i < 0 {
		return nil, s.fail("truncated: %s argument has no terminating newline", what)
	}
	if max > 0 && i > max {
		return nil, s.fail("%s argument is %d bytes long (limit %d)", what, i, max)
	}
	b := s.data[s.pos : s.pos+i]
	s.pos += i + 1
	return b, nil
}

func (s *pickleScanner) u8(what string) (uint64, error) {
	b, err := s.take(1, what)
	if err != nil {
		return 0, err
	}
	return uint64(b[0]), nil
}

func (s *pickleScanner) u32(what string) (uint64, error) {
	b, err := s.take(4, what)
	if err != nil {
		return 0, err
	}
	return uint64(binary.LittleEndian.Uint32(b)), nil
}

func (s *pickleScanner) u64(what string) (uint64, error) {
	b, err := s.take(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

func (s *pickleScanner) push(k byte) { s.stack = append(s.stack, k) }

// base is the stack height at the innermost open MARK.
func (s *pickleScanner) base() int {
	if len(s.marks) == 0 {
		return 0
	}
	return s.marks[len(s.marks)-1]
}

func (s *pickleScanner) pop(name string) (byte, error) {
	if len(s.stack) <= s.base() {
		return 0, s.fail("%s on an empty stack", name)
	}
	k := s.stack[len(s.stack)-1]
	s.stack = s.stack[:len(s.stack)-1]
	return k, nil
}

func (s *pickleScanner) top(name string) (byte, error) {
	if len(s.stack) <= s.base() {
		return 0, s.fail("%s on an empty stack", name)
	}
	return s.stack[len(s.stack)-1], nil
}

// popMark removes the items above the innermost MARK and the MARK itself, returning how many items there were.
func (s *pickleScanner) popMark(name string) (int, error) {
	if len(s.marks) == 0 {
		return 0, s.fail("%s without a preceding MARK", name)
	}
	b := s.marks[len(s.marks)-1]
	s.marks = s.marks[:len(s.marks)-1]
	n := len(s.stack) - b
	s.stack = s.stack[:b]
	return n, nil
}

func (s *pickleScanner) memoGet(key uint64) (byte, error) {
	var k byte
	if key < uint64(len(s.memo)) {
		k = s.memo[key]
	} else if s.memoMap != nil {
		k = s.memoMap[key]
	}
	if k == kAbsent {
		return 0, s.fail("memo key %d is read before it was stored", key)
	}
	return k, nil
}

func (s *pickleScanner) memoPut(key uint64, k byte) {
	// Keep the memo dense while keys stay proportional to the input, so a single huge key cannot make the scan
	// allocate a huge slice.
	if key < uint64(len(s.memo)) {
		if s.memo[key] == kAbsent {
			s.memoSize++
		}
		s.memo[key] = k
		return
	}
	if key <= uint64(2*len(s.data)+1024) && key < math.MaxInt32 {
		if s.memoMap != nil {
			if _, ok := s.memoMap[key]; ok {
				delete(s.memoMap, key)
				s.memoSize--
			}
		}
		for uint64(len(s.memo)) <= key {
			s.memo = append(s.memo, kAbsent)
		}
		s.memo[key] = k
		s.memoSize++
		return
	}
	if s.memoMap == nil {
		s.memoMap = make(map[uint64]byte)
	}
	if _, ok := s.memoMap[key]; !ok {
		s.memoSize++
	}
	s.memoMap[key] = k
}

func (s *pickleScanner) memoStore(key uint64, name string) error {
	k, err := s.top(name)
	if err != nil {
		return err
	}
	s.memoPut(key, k)
	return nil
}

// checkShape refuses, within a few opcodes of where it went wrong, a stream whose outermost value is not a
// snapshot's shape (see topShape), and one with more values on the stack than any snapshot pickle holds. done is
// true after STOP.
func (s *pickleScanner) checkShape(done bool) error {
	if !s.shape.set {
		if len(s.marks) == 0 && len(s.stack) > 0 && s.stack[0] != kDict && s.stack[0] != kList {
			s.shape.wrong(int64(s.opStart), withArticle(opValueWord(s.data[s.opStart])))
		} else if len(s.marks) > 0 && s.marks[0] == 0 {
			s.shape.wrong(int64(s.opStart), underMark)
		}
	}
	if s.shape.set && (done || s.shape.due(len(s.stack))) {
		return &scanError{Offset: s.shape.at, Msg: s.shape.msg()}
	}
	if len(s.stack) > maxStackValues {
		return s.fail("%s", stackOverflowMsg)
	}
	return nil
}

// maxStringBytes bounds one string: a snapshot's strings are file, function and key names, and gopickle would
// copy a longer one whole.
const maxStringBytes = 64 << 20

// longStringMsg refuses a string longer than maxStringBytes.
func longStringMsg(n uint64) string {
	return fmt.Sprintf("a string of %d bytes (limit %d); a snapshot's strings are names and paths", n, maxStringBytes)
}

// stackOverflowMsg refuses a pickle that stacks more than maxStackValues values.
var stackOverflowMsg = fmt.Sprintf("more than %d values on the pickle stack at once; a snapshot pickle holds a few thousand", maxStackValues)

// step scans one opcode. It reports true after STOP.
func (s *pickleScanner) step() (bool, error) {
	if s.frameEnd > 0 && s.pos == s.frameEnd {
		s.frameEnd = 0
	}
	s.opStart = s.pos
	op := s.data[s.pos]
	s.pos++
	if name := refusedOps[op]; name != "" {
		return false, s.refuse(op, name)
	}
	switch op {
	case opProto:
		v, err := s.u8("PROTO")
		if err != nil {
			return false, err
		}
		if v < 2 || v > 5 {
			return false, s.fail("unsupported pickle protocol %d (snapshots use protocols 2 to 5)", v)
		}
		if s.proto < 0 {
			s.proto = int(v)
		}
	case opFrame:
		if s.frameEnd > 0 && s.pos-1 != s.frameEnd {
			return false, s.fail("FRAME begins before the current frame ends (at byte %d)", s.frameEnd)
		}
		s.frameEnd = 0
		n, err := s.u64("FRAME length")
		if err != nil {
			return false, err
		}
		if n > uint64(len(s.data)-s.pos) {
			return false, s.fail("truncated: FRAME claims %d bytes but only %d remain", n, len(s.data)-s.pos)
		}
		if n > 0 {
			s.frameEnd = s.pos + int(n)
		}
	case opStop:
		if _, err := s.top("STOP"); err != nil {
			return false, err
		}
		if len(s.stack) != 1 || len(s.marks) != 0 {
			return false, s.fail("STOP leaves %d values and %d open MARKs on the stack; a snapshot pickle leaves only its top-level value", len(s.stack), len(s.marks))
		}
		return true, nil
	case opMark:
		if len(s.marks) >= maxMarkDepth {
			return false, s.fail("more than %d nested MARKs", maxMarkDepth)
		}
		s.marks = append(s.marks, len(s.stack))
	case opPop:
		if len(s.stack) <= s.base() {
			// CPython discards the MARK itself when nothing is above it.
			if _, err := s.popMark("POP"); err != nil {
				return false, s.fail("POP on an empty stack")
			}
			break
		}
		s.stack = s.stack[:len(s.stack)-1]
	case opPopMark:
		if _, err := s.popMark("POP_MARK"); err != nil {
			return false, err
		}
	case opDup:
		k, err := s.top("DUP")
		if err != nil {
			return false, err
		}
		s.push(k)
	case opNone, opNewTrue, opNewFalse:
		s.push(kScalar)
	case opBinInt1:
		return false, s.scalar(s.take(1, "BININT1"))
	case opBinInt2:
		return false, s.scalar(s.take(2, "BININT2"))
	case opBinInt:
		return false, s.scalar(s.take(4, "BININT"))
	case opBinFloat:
		return false, s.scalar(s.take(8, "BINFLOAT"))
	case opLong1, opLong4:
		var n uint64
		var err error
		if op == opLong1 {
			n, err = s.u8("LONG1 length")
		} else {
			n, err = s.u32("LONG4 length")
		}
		if err != nil {
			return false, err
		}
		if n == 0 {
			// Valid Python for 0, but no writer emits it and gopickle cannot decode it.
			return false, s.fail("integer with an empty payload")
		}
		if n > maxIntBytes {
			return false, s.fail("integer of %d bytes is too large (limit %d bytes)", n, maxIntBytes)
		}
		return false, s.scalar(s.take(n, "integer payload"))
	case opInt, opLong, opFloat:
		if _, err := s.line("number", maxNumberLine); err != nil {
			return false, err
		}
		s.push(kScalar)
	case opString, opUnicode:
		b, err := s.line("string", maxStringBytes)
		if err != nil {
			return false, err
		}
		if op == opString && !(len(b) >= 2 && b[0] == b[len(b)-1] && (b[0] == '\'' || b[0] == '"')) {
			return false, s.fail("STRING argument is not quoted")
		}
		s.push(kScalar)
	case opShortBinString, opShortBinBytes, opShortBinUni:
		n, err := s.u8("string length")
		if err != nil {
			return false, err
		}
		return false, s.scalar(s.take(n, "string"))
	case opBinString, opBinBytes, opBinUnicode:
		n, err := s.u32("string length")
		if err != nil {
			return false, err
		}
		if op == opBinString && n >= 1<<31 {
			return false, s.fail("BINSTRING has a negative length")
		}
		if n > maxStringBytes {
			return false, s.fail("%s", longStringMsg(n))
		}
		return false, s.scalar(s.take(n, "string"))
	case opBinUnicode8, opBinBytes8, opByteArray8:
		n, err := s.u64("string length")
		if err != nil {
			return false, err
		}
		if n > maxStringBytes {
			return false, s.fail("%s", longStringMsg(n))
		}
		return false, s.scalar(s.take(n, "string"))
	case opEmptyList:
		s.push(kList)
	case opEmptyDict:
		s.push(kDict)
	case opEmptyTuple:
		s.push(kTuple)
	case opTuple1, opTuple2, opTuple3:
		for i := 0; i < int(op-opTuple1)+1; i++ {
			if _, err := s.pop("TUPLE"); err != nil {
				return false, err
			}
		}
		s.push(kTuple)
	case opTuple, opList:
		if _, err := s.popMark("TUPLE/LIST"); err != nil {
			return false, err
		}
		if op == opTuple {
			s.push(kTuple)
		} else {
			s.push(kList)
		}
	case opDict:
		n, err := s.popMark("DICT")
		if err != nil {
			return false, err
		}
		if n%2 != 0 {
			return false, s.fail("DICT with an odd number of items (%d)", n)
		}
		s.push(kDict)
	case opAppend:
		if _, err := s.pop("APPEND"); err != nil {
			return false, err
		}
		k, err := s.top("APPEND")
		if err != nil {
			return false, err
		}
		if k != kList {
			return false, s.fail("APPEND to a %s, want a list", kindName(k))
		}
	case opAppends:
		if _, err := s.popMark("APPENDS"); err != nil {
			return false, err
		}
		k, err := s.top("APPENDS")
		if err != nil {
			return false, err
		}
		if k != kList {
			return false, s.fail("APPENDS to a %s, want a list", kindName(k))
		}
	case opSetItem:
		for i := 0; i < 2; i++ {
			if _, err := s.pop("SETITEM"); err != nil {
				return false, err
			}
		}
		k, err := s.top("SETITEM")
		if err != nil {
			return false, err
		}
		if k != kDict {
			return false, s.fail("SETITEM on a %s, want a dict", kindName(k))
		}
	case opSetItems:
		n, err := s.popMark("SETITEMS")
		if err != nil {
			return false, err
		}
		if n%2 != 0 {
			return false, s.fail("SETITEMS with an odd number of items (%d)", n)
		}
		k, err := s.top("SETITEMS")
		if err != nil {
			return false, err
		}
		if k != kDict {
			return false, s.fail("SETITEMS on a %s, want a dict", kindName(k))
		}
	case opMemoize:
		if err := s.memoStore(uint64(s.memoSize), "MEMOIZE"); err != nil {
			return false, err
		}
	case opBinPut:
		key, err := s.u8("BINPUT")
		if err != nil {
			return false, err
		}
		return false, s.memoStore(key, "BINPUT")
	case opLongBinPut:
		key, err := s.u32("LONG_BINPUT")
		if err != nil {
			return false, err
		}
		return false, s.memoStore(key, "LONG_BINPUT")
	case opPut:
		key, err := s.decimalKey("PUT")
		if err != nil {
			return false, err
		}
		return false, s.memoStore(key, "PUT")
	case opBinGet, opLongBinGet, opGet:
		var key uint64
		var err error
		switch op {
		case opBinGet:
			key, err = s.u8("BINGET")
		case opLongBinGet:
			key, err = s.u32("LONG_BINGET")
		default:
			key, err = s.decimalKey("GET")
		}
		if err != nil {
			return false, err
		}
		k, err := s.memoGet(key)
		if err != nil {
			return false, err
		}
		s.push(k)
	default:
		return false, s.fail("unknown opcode 0x%02x", op)
	}
	return false, nil
}

// scalar finishes an opcode that pushes a scalar after reading its argument.
func (s *pickleScanner) scalar(_ []byte, err error) error {
	if err != nil {
		return err
	}
	s.push(kScalar)
	return nil
}

func (s *pickleScanner) decimalKey(name string) (uint64, error) {
	b, err := s.line(name, maxNumberLine)
	if err != nil {
		return 0, err
	}
	if len(b) == 0 || len(b) > 9 {
		return 0, s.fail("%s key %q is not a small non-negative integer", name, b)
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, s.fail("%s key %q is not a small non-negative integer", name, b)
		}
		v = v*10 + uint64(c-'0')
	}
	return v, nil
}

// refuse builds the error for an opcode that would import or construct Python objects, naming the global when
// the opcode carries it inline.
func (s *pickleScanner) refuse(op byte, name string) error {
	what := ""
	if op == opGlobal || op == opInst {
		mod, err1 := s.line(name, 256)
		sym, err2 := s.line(name, 256)
		if err1 == nil && err2 == nil {
			what = fmt.Sprintf(" %q", string(mod)+"."+string(sym))
		}
	}
	err := s.fail("refused opcode %s (0x%02x)%s: it would load or build a Python object; a snapshot holds only plain data", name, op, what)
	err.(*scanError).refused = true
	return err
}

func kindName(k byte) string {
	switch k {
	case kList:
		return "list"
	case kDict:
		return "dict"
	case kTuple:
		return "tuple"
	default:
		return "scalar"
	}
}
