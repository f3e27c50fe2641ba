package snapshot

import (
	"context"
	"errors"
	"strings"

	"github.com/memscan/memscan/internal/input"
)

// OldPickleError refuses a pickle of protocol 0 or 1 (input.KindOldPickle) from its first bytes, head, without
// reading further: no snapshot is written with those protocols. A GLOBAL or INST among the first opcodes is
// named, since that is the real danger of such a file.
func OldPickleError(ctx context.Context, name string, head []byte) error {
	s := &pickleScanner{data: head, proto: -1}
	for s.pos < len(s.data) && ctx.Err() == nil {
		_, err := s.step()
		var se *scanError
		if errors.As(err, &se) && se.refused {
			return &input.Error{File: name, Offset: se.Offset, Msg: "pickle (protocol 0 or 1): " + se.Msg}
		}
		if err != nil {
			break
		}
	}
	return &input.Error{File: name, Offset: 0, Msg: "a pickle of protocol 0 or 1 (it has no PROTO opcode); snapshots are pickled with protocol 2 or later"}
}

// Top-level shape. Every snapshot pickle begins its top-level dict (or, before torch 2.0, its list of segments)
// with the first opcode after PROTO and FRAME and leaves it alone on the stack at STOP. A stream whose outermost
// value is anything else is refused within a few opcodes, whatever follows and however long it is: without that,
// a file of millions of NONE opcodes was loaded whole before its top-level value was looked at. The few opcodes
// of grace let an object opcode that follows some pushes (GLOBAL's or REDUCE's arguments) be named instead.
const (
	shapeSlack    = 16 // values that may be stacked on a wrong outermost value
	shapeSlackOps = 64 // opcodes that may follow it
)

// topShape tracks whether the outermost value went wrong, and since when.
type topShape struct {
	set  bool
	at   int64 // offset of the opcode that made it wrong
	what string
	ops  int
}

func (t *topShape) wrong(at int64, what string) {
	if !t.set {
		*t = topShape{set: true, at: at, what: what}
	}
}

// due counts one more opcode and reports whether the refusal can wait no longer.
func (t *topShape) due(stackLen int) bool {
	t.ops++
	return stackLen > shapeSlack || t.ops > shapeSlackOps
}

func (t *topShape) msg() string {
	return "the top-level value is " + t.what + "; a snapshot is a dict (or a list of segments) begun by the first opcode"
}

// underMark names an outermost value built between MARK and TUPLE, LIST or DICT.
const underMark = "built under a MARK (a tuple, or a protocol-0 list or dict)"

// withArticle turns a type word into a phrase: "None", "an int", "a str".
func withArticle(w string) string {
	switch {
	case w == "None", w == "bytes":
		return w
	case strings.ContainsRune("aeiou", rune(w[0])):
		return "an " + w
	}
	return "a " + w
}

// opValueWord names the type of the value an opcode pushes, for the top-level shape error.
func opValueWord(op byte) string {
	switch op {
	case opNone:
		return "None"
	case opNewTrue, opNewFalse:
		return "bool"
	case opInt, opBinInt, opBinInt1, opBinInt2, opLong, opLong1, opLong4:
		return "int"
	case opFloat, opBinFloat:
		return "float"
	case opString, opBinString, opShortBinString, opUnicode, opBinUnicode, opShortBinUni, opBinUnicode8:
		return "str"
	case opBinBytes, opShortBinBytes, opBinBytes8, opByteArray8:
		return "bytes"
	case opEmptyTuple, opTuple, opTuple1, opTuple2, opTuple3:
		return "tuple"
	case opGet, opBinGet, opLongBinGet:
		return "memo reference"
	}
	return "value"
}
