package snapshot

import (
	"context"
	"encoding/binary"
	"errors"
	"math/big"
	"strings"
	"testing"

	"github.com/nlpodyssey/gopickle/types"
)

func le64(n uint64) string {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], n)
	return string(b[:])
}

// TestScanPickleAccepts covers opcodes the fixtures do not use (protocol 0/1 text forms, PUT/GET, stack
// manipulation, frames). Each pickle was written by hand; want is the Python value it denotes.
func TestScanPickleAccepts(t *testing.T) {
	tests := []struct {
		name string
		data string
		want func(v any) bool
	}{
		{"text INT, LONG, FLOAT in a tuple", "\x80\x02(I-7\nL123456789012345678901234567890L\nF2.5\nt.", func(v any) bool {
			tu := *v.(*types.Tuple)
			n, _ := new(big.Int).SetString("123456789012345678901234567890", 10)
			return tu[0] == -7 && tu[1].(*big.Int).Cmp(n) == 0 && tu[2] == 2.5
		}},
		{"INT 01 is True", "\x80\x02I01\n.", func(v any) bool { return v == true }},
		{"STRING and UNICODE", "\x80\x02(S'ab'\nVcd\nl.", func(v any) bool {
			l := *v.(*types.List)
			return l[0] == "ab" && l[1] == "cd"
		}},
		{"PUT/GET text memo", "\x80\x02]p7\n0g7\n.", func(v any) bool { _, ok := v.(*types.List); return ok }},
		{"LONG_BINPUT/LONG_BINGET", "\x80\x02}r\x00\x01\x00\x000j\x00\x01\x00\x00.", func(v any) bool { _, ok := v.(*types.Dict); return ok }},
		{"DUP and TUPLE3", "\x80\x02K\x0122\x87.", func(v any) bool { return len(*v.(*types.Tuple)) == 3 }},
		{"POP_MARK discards to the mark", "\x80\x02K\x05(K\x01K\x021.", func(v any) bool { return v == 5 }},
		{"POP on an empty segment pops the mark", "\x80\x02K\x05(0.", func(v any) bool { return v == 5 }},
		{"DICT from a mark", "\x80\x02(X\x01\x00\x00\x00aK\x01d.", func(v any) bool { return len(*v.(*types.Dict)) == 1 }},
		{"SETITEM", "\x80\x02}\x8c\x01aK\x01s.", func(v any) bool { return len(*v.(*types.Dict)) == 1 }},
		{"BINBYTES and SHORT_BINBYTES", "\x80\x03(B\x02\x00\x00\x00hiC\x01!l.", func(v any) bool { return len(*v.(*types.List)) == 2 }},
		{"two frames back to back", "\x80\x04\x95\x01\x00\x00\x00\x00\x00\x00\x00]\x95\x01\x00\x00\x00\x00\x00\x00\x00.", func(v any) bool { _, ok := v.(*types.List); return ok }},
		{"argument starting at a frame end", "\x80\x04\x95\x01\x00\x00\x00\x00\x00\x00\x00K\x07.", func(v any) bool { return v == 7 }},
		{"LONG1 of 9 bytes is 2^64-1", "\x80\x02\x8a\x09\xff\xff\xff\xff\xff\xff\xff\xff\x00.", func(v any) bool {
			_, u, c := intOf(v)
			return c == intUnsigned && u == 1<<64-1
		}},
		{"negative LONG1", "\x80\x02\x8a\x01\xfb.", func(v any) bool { return v == -5 }},
		{"bytes after STOP are ignored", "\x80\x02N.garbage", func(v any) bool { return v == nil }},
		{"BYTEARRAY8 (protocol 5)", "\x80\x05\x96" + le64(2) + "hi.", func(v any) bool { return v != nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := scanPickle(context.Background(), []byte(tc.data)); err != nil {
				t.Fatalf("scan: %v", err)
			}
			v, err := loadPickleValue("x", []byte(tc.data))
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			if !tc.want(v) {
				t.Errorf("value = %#v", v)
			}
		})
	}
}

// TestScanPickleRejects lists malformed or hostile opcode sequences with the offset of the opcode at fault.
func TestScanPickleRejects(t *testing.T) {
	tests := []struct {
		name   string
		data   string
		offset int64
		msg    string
	}{
		{"STOP on an empty stack", "\x80\x02.", 2, "STOP on an empty stack"},
		{"APPEND to a dict", "\x80\x02}K\x01a.", 5, "APPEND to a dict"},
		{"APPENDS to a scalar", "\x80\x02K\x01(K\x02e.", 7, "APPENDS to a scalar"},
		{"SETITEM on a list", "\x80\x02]K\x01K\x02s.", 7, "SETITEM on a list"},
		{"SETITEMS with odd items", "\x80\x02}(K\x01u.", 6, "odd number of items (1)"},
		{"DICT with odd items", "\x80\x02(K\x01d.", 5, "DICT with an odd number"},
		{"APPENDS without MARK", "\x80\x02]e.", 3, "APPENDS without a preceding MARK"},
		{"TUPLE2 with one item", "\x80\x02K\x01\x86.", 4, "TUPLE on an empty stack"},
		{"items below a MARK are out of reach", "\x80\x02K\x01(\x85.", 5, "TUPLE on an empty stack"},
		{"empty LONG1", "\x80\x02\x8a\x00.", 2, "integer with an empty payload"},
		{"17-byte LONG1", "\x80\x02\x8a\x11" + strings.Repeat("\x01", 17) + ".", 2, "integer of 17 bytes is too large"},
		{"long text INT", "\x80\x02I" + strings.Repeat("9", 100) + "\n.", 2, "100 bytes long"},
		{"INT without newline", "\x80\x02I12", 2, "no terminating newline"},
		{"unquoted STRING", "\x80\x02Sab\n.", 2, "not quoted"},
		{"negative BINSTRING", "\x80\x02T\xff\xff\xff\xff.", 2, "negative length"},
		{"BINBYTES past the end", "\x80\x03B\x10\x00\x00\x00abc.", 2, "needs 16 bytes but only 4 remain"},
		{"argument crosses a frame end", "\x80\x04\x95\x03\x00\x00\x00\x00\x00\x00\x00\x8c\x05hello.", 11, "crosses the end of its frame"},
		{"FRAME inside a frame", "\x80\x04\x95\x0a\x00\x00\x00\x00\x00\x00\x00\x95\x00\x00\x00\x00\x00\x00\x00\x00N.", 11, "FRAME begins before the current frame ends"},
		{"GET of an unset key", "\x80\x02g3\n.", 2, "memo key 3"},
		{"PUT with a bad key", "\x80\x02Np-1\n.", 3, "not a small non-negative integer"},
		{"MEMOIZE on an empty stack", "\x80\x04\x94.", 2, "MEMOIZE on an empty stack"},
		{"EMPTY_SET is refused", "\x80\x04\x8f.", 2, "refused opcode EMPTY_SET"},
		{"BUILD is refused", "\x80\x02}}b.", 4, "refused opcode BUILD"},
		{"PERSID is refused", "\x80\x02P1\n.", 2, "refused opcode PERSID"},
		{"EXT1 is refused", "\x80\x02\x82\x01.", 2, "refused opcode EXT1"},
		{"NEXT_BUFFER is refused", "\x80\x05\x97.", 2, "refused opcode NEXT_BUFFER"},
		{"opcode 0xff", "\x80\x02\xff.", 2, "unknown opcode 0xff"},
		{"protocol 6", "\x80\x06N.", 0, "unsupported pickle protocol 6"},
		{"no STOP", "\x80\x02N", 3, "ends without a STOP"},
		{"POP with nothing at all", "\x80\x020.", 2, "POP on an empty stack"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := scanPickle(context.Background(), []byte(tc.data))
			var se *scanError
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want a scan error", err)
			}
			if se.Offset != tc.offset || !strings.Contains(se.Msg, tc.msg) {
				t.Errorf("got byte %d %q, want byte %d ~%q", se.Offset, se.Msg, tc.offset, tc.msg)
			}
		})
	}
}

// TestMemoKeys checks that MEMOIZE numbers keys by the count of distinct keys (as CPython does) and that a huge
// explicit key does not allocate a dense table.
func TestMemoKeys(t *testing.T) {
	// BINPUT 0, then MEMOIZE (key 1), then a LONG_BINPUT far beyond the input size, then GET all three.
	data := "\x80\x04]q\x00\x94r\xff\xff\xff\x7f(h\x00h\x01j\xff\xff\xff\x7ft0."
	if _, err := scanPickle(context.Background(), []byte(data)); err != nil {
		t.Fatal(err)
	}
	s := &pickleScanner{data: []byte(data)}
	s.memoPut(1<<31-1, kList)
	if len(s.memo) != 0 || s.memoMap[1<<31-1] != kList || s.memoSize != 1 {
		t.Errorf("sparse key stored densely: len(memo)=%d", len(s.memo))
	}
}

func TestRenderValueBounded(t *testing.T) {
	// A list that contains itself renders with an ellipsis instead of recursing forever.
	l := types.NewList()
	l.Append(l)
	if got := renderValue(l); got != "[[[[...]]]]" {
		t.Errorf("self-referencing list renders as %q", got)
	}
	d := types.NewDict()
	d.Set("k", true)
	d.Set(3, nil)
	if got := renderValue(types.NewTupleFromSlice([]any{d, 1.5, "s", []byte("b")})); got != `({"k": True, 3: None}, 1.5, "s", b"b")` {
		t.Errorf("render = %s", got)
	}
}
