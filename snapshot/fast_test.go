package snapshot_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/gen"
	"github.com/memscan/memscan/internal/realsnap"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/snapshot"
)

// TestFastDecodeRealSnapshots decodes every real snapshot with the fast decoder alone (no fallback allowed) and
// checks it against the manifest: counts, per-device trace lengths, actions, block states, and the exact
// _memory_viz stats totals (allocated = requested bytes of active_allocated blocks, free_int = their rounding
// slack, free_ext = every other block, reserved = sum of segment sizes).
func TestFastDecodeRealSnapshots(t *testing.T) {
	dir, manifest := realsnap.Load(t)
	for _, e := range manifest {
		t.Run(e.File, func(t *testing.T) {
			f, err := os.Open(filepath.Join(dir, e.File))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			s, err := snapshot.DecodeFastPickle(context.Background(), e.File, f)
			if err != nil {
				t.Fatalf("fast decoder: %v", err)
			}
			if s.Protocol != e.Proto {
				t.Errorf("protocol %d, want %d", s.Protocol, e.Proto)
			}
			if len(s.Segments) != e.Segments {
				t.Errorf("%d segments, want %d", len(s.Segments), e.Segments)
			}
			var reserved, alloc, freeInt, freeExt int64
			blocks := 0
			states := map[string]int{}
			for _, sg := range s.Segments {
				reserved += sg.TotalSize
				var sum int64
				for _, b := range sg.Blocks {
					blocks++
					states[b.State.String()]++
					sum += b.Size
					if b.State == snapshot.BlockActiveAllocated {
						alloc += b.RequestedSize
						freeInt += b.Size - b.RequestedSize
					} else {
						freeExt += b.Size
					}
				}
				if sum != sg.TotalSize {
					t.Errorf("segment %#x: blocks sum to %d, total_size %d", sg.Address, sum, sg.TotalSize)
				}
			}
			if blocks != e.Blocks {
				t.Errorf("%d blocks, want %d", blocks, e.Blocks)
			}
			for k, n := range e.States {
				if states[k] != n {
					t.Errorf("%d %s blocks, want %d", states[k], k, n)
				}
			}
			if reserved != e.Segsum.Reserved || alloc != e.Segsum.Allocated || freeInt != e.Segsum.FreeInt || freeExt != e.Segsum.FreeExt {
				t.Errorf("totals reserved/allocated/free_int/free_ext = %d/%d/%d/%d, want %d/%d/%d/%d",
					reserved, alloc, freeInt, freeExt, e.Segsum.Reserved, e.Segsum.Allocated, e.Segsum.FreeInt, e.Segsum.FreeExt)
			}
			if e.TraceLens == nil {
				if !s.BareList {
					t.Errorf("manifest says bare list; BareList=false")
				}
			} else {
				if len(s.DeviceTraces) != len(e.TraceLens) {
					t.Fatalf("%d device traces, want %d", len(s.DeviceTraces), len(e.TraceLens))
				}
				actions := map[string]int{}
				for i, tr := range s.DeviceTraces {
					if len(tr) != e.TraceLens[i] {
						t.Errorf("device %d: %d trace entries, want %d", i, len(tr), e.TraceLens[i])
					}
					for _, te := range tr {
						actions[s.ActionName(&te)]++
					}
				}
				for k, n := range e.Actions {
					if actions[k] != n {
						t.Errorf("%d %s entries, want %d", actions[k], k, n)
					}
				}
			}
		})
	}
}

// TestFastDecodeSharesStacks checks that a frames list the memo shares decodes to one *snapshot.Stack, and that equal
// lists written twice are interned to one too.
func TestFastDecodeSharesStacks(t *testing.T) {
	dir := testutil.SharedDir(t, "real_snapshots")
	f, err := os.Open(filepath.Join(dir, "Constructor-Sun__code_location__memory_snapshot.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := snapshot.DecodeFastPickle(context.Background(), "cs", f)
	if err != nil {
		t.Fatal(err)
	}
	refs, distinct := 0, map[*snapshot.Stack]bool{}
	byContent := map[string]*snapshot.Stack{}
	for _, tr := range s.DeviceTraces {
		for _, e := range tr {
			st := s.EntryStack(&e)
			if st == nil {
				continue
			}
			refs++
			distinct[st] = true
			var b strings.Builder
			for _, fr := range st.Frames {
				b.WriteString(fr.Filename + "\x00" + fr.Name + "\x00" + string(rune(fr.Line)) + "\x01")
			}
			if prev, ok := byContent[b.String()]; ok && prev != st {
				t.Fatalf("two *snapshot.Stack values with the same frames")
			}
			byContent[b.String()] = st
		}
	}
	if refs == 0 || len(distinct) >= refs {
		t.Errorf("%d stack references but %d distinct *snapshot.Stack: nothing shared", refs, len(distinct))
	}
}

// pk builds small pickles by hand for the table tests below.
type pk struct{ bytes.Buffer }

func (p *pk) op(b ...byte) *pk { p.Write(b); return p }
func (p *pk) str(s string) *pk {
	p.WriteByte(opShortBinUni)
	p.WriteByte(byte(len(s)))
	p.WriteString(s)
	return p
}
func (p *pk) int1(n byte) *pk { return p.op(opBinInt1, n) }

// minimal returns a valid protocol-4 snapshot dict with one segment of one active block and an empty trace.
func minimal() *pk {
	p := &pk{}
	p.op(opProto, 4, opEmptyDict, opMark)
	p.str("segments").op(opEmptyList, opMark, opEmptyDict, opMark)
	p.str("device").int1(0).str("address").op(opLong1, 2, 0x00, 0x10)
	p.str("total_size").op(opBinInt2, 0x00, 0x02).str("allocated_size").op(opBinInt2, 0x00, 0x02)
	p.str("active_size").op(opBinInt2, 0x00, 0x02).str("stream").int1(0).str("segment_type").str("small")
	p.str("blocks").op(opEmptyList, opEmptyDict, opMark)
	p.str("size").op(opBinInt2, 0x00, 0x02).str("requested_size").int1(100).str("state").str("active_allocated")
	p.op(opSetItems, opAppend, opSetItems, opAppends)
	p.str("device_traces").op(opEmptyList, opEmptyList, opAppend)
	p.op(opSetItems, opStop)
	return p
}

func TestFastDecodeCases(t *testing.T) {
	good := minimal().Bytes()
	tests := []struct {
		name    string
		data    []byte
		wantErr string // substring of a definite error; "" = success
		unsupp  bool   // expect snapshot.ErrFastUnsupported
	}{
		{"minimal", good, "", false},
		{"truncated", good[:len(good)-5], "truncated", false},
		{"no stop", good[:len(good)-1], "without a STOP", false},
		{"global", append([]byte{opProto, 4, opGlobal}, "os\nsystem\n"...), "would load a Python object", false},
		{"stack global", []byte{opProto, 4, opStackGlobal}, "byte 2: opcode 0x93", false},
		{"unknown opcode", []byte{opProto, 4, 0xff}, "unknown pickle opcode 0xff", false},
		{"huge string length", []byte{opProto, 4, opBinUnicode, 0xff, 0xff, 0xff, 0x7f, 'a'}, "a string of 2147483647 bytes", false},
		{"truncated string", []byte{opProto, 4, opBinUnicode, 0xff, 0xff, 0x00, 0x00, 'a'}, "truncated", false},
		{"dup is fallback", []byte{opProto, 4, opEmptyList, opDup, opStop}, "", true},
		{"non-string key", []byte{opProto, 4, opEmptyDict, opBinInt1, 1, opBinInt1, 2, opSetItem, opStop}, "", true},
		{"top-level int", []byte{opProto, 4, opBinInt1, 1, opStop}, "byte 2: the top-level value is an int", false},
		{"top-level None stream", append(append([]byte{opProto, 4}, bytes.Repeat([]byte{opNone}, 1000)...), opStop), "byte 2: the top-level value is None", false},
		{"top-level tuple under a MARK", append(append([]byte{opProto, 4, opMark}, bytes.Repeat([]byte{opNone}, 1000)...), opTuple, opStop), "byte 2: the top-level value is built under a MARK", false},
		{"self reference", []byte{opProto, 4, opEmptyDict, opMemoize, opMark, opShortBinUni, 1, 'x', opBinGet, 0, opSetItems, opStop}, "", true},
		{"empty bare list", []byte{opProto, 4, opEmptyList, opStop}, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := snapshot.DecodeFastPickle(context.Background(), "x.pickle", bytes.NewReader(tc.data))
			switch {
			case tc.unsupp:
				if !errors.Is(err, snapshot.ErrFastUnsupported) {
					t.Fatalf("err = %v, want snapshot.ErrFastUnsupported", err)
				}
			case tc.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || errors.Is(err, snapshot.ErrFastUnsupported) {
					t.Fatalf("err = %v, want a definite error containing %q", err, tc.wantErr)
				}
				if !strings.HasPrefix(err.Error(), "x.pickle: byte ") {
					t.Errorf("error %q does not start with the file and byte offset", err)
				}
			default:
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if s == nil {
					t.Fatal("nil snapshot")
				}
			}
		})
	}
}

// TestFastDecodeMinimal checks every field of the hand-built pickle, including the cumulative block address
// (no 'address' key in the block: segment address 0x1000 + 0).
func TestFastDecodeMinimal(t *testing.T) {
	s, err := snapshot.DecodeFastPickle(context.Background(), "m", bytes.NewReader(minimal().Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	want := snapshot.Segment{Device: 0, Address: 0x1000, TotalSize: 512, AllocatedSize: 512, ActiveSize: 512, Type: snapshot.SegmentSmall,
		Blocks: []snapshot.Block{{Address: 0x1000, Size: 512, RequestedSize: 100, State: snapshot.BlockActiveAllocated}}}
	if len(s.Segments) != 1 {
		t.Fatalf("segments = %d", len(s.Segments))
	}
	got := s.Segments[0]
	if got.Address != want.Address || got.TotalSize != want.TotalSize || got.Type != want.Type || !reflect.DeepEqual(got.Blocks, want.Blocks) {
		t.Errorf("segment = %+v, want %+v", got, want)
	}
	if len(s.DeviceTraces) != 1 || len(s.DeviceTraces[0]) != 0 {
		t.Errorf("device traces = %v, want one empty trace", s.DeviceTraces)
	}
	if s.Protocol != 4 || s.BareList {
		t.Errorf("protocol %d bare %v", s.Protocol, s.BareList)
	}
}

// TestFastDecodeCancel checks that a cancelled context stops the decoder.
func TestFastDecodeCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// A long run of opcodes so the periodic check fires.
	p := &pk{}
	p.op(opProto, 4, opEmptyList, opMark)
	for range snapshot.FastCheckEvery {
		p.int1(1)
	}
	p.op(opAppends, opStop)
	_, err := snapshot.DecodeFastPickle(ctx, "c", bytes.NewReader(p.Bytes()))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

// Pickle opcodes used by the hand-built test pickles.
const (
	opMark        = '('
	opStop        = '.'
	opNone        = 'N'
	opTuple       = 't'
	opDup         = '2'
	opBinInt1     = 'K'
	opBinInt2     = 'M'
	opAppend      = 'a'
	opGlobal      = 'c'
	opEmptyDict   = '}'
	opAppends     = 'e'
	opBinGet      = 'h'
	opLongBinGet  = 'j'
	opEmptyList   = ']'
	opSetItem     = 's'
	opSetItems    = 'u'
	opBinUnicode  = 'X'
	opProto       = 0x80
	opLong1       = 0x8a
	opTuple2      = 0x86
	opShortBinUni = 0x8c
	opStackGlobal = 0x93
	opMemoize     = 0x94
	opFrame       = 0x95
	opBinPut      = 'q'
)

// declinedPickle is a valid snapshot that the fast decoder declines: an allocator setting it does not know, which
// the reference decoder keeps as text.
func declinedPickle() []byte {
	p := &pk{}
	p.op(opProto, 4, opEmptyDict, opMark)
	p.str("segments").op(opEmptyList)
	p.str("allocator_settings").op(opEmptyDict).str("future_knob").str("on").op(opSetItem)
	p.op(opSetItems, opStop)
	return p.Bytes()
}

// checkDeclinedDecoded checks that declinedPickle was decoded, by the reference decoder.
func checkDeclinedDecoded(t *testing.T, in *load.Input) {
	t.Helper()
	if s := in.Snapshot; s == nil || s.AllocatorSettings == nil || s.AllocatorSettings.Other["future_knob"] != "on" || in.Format != "pickle-v4" {
		t.Errorf("decoded %+v, want allocator setting future_knob=on via the reference decoder", in)
	}
}

// TestDecodeFallsBack checks the dispatcher: a valid snapshot that the fast decoder declines (an allocator
// setting it does not know, which the reference keeps as text) still decodes through Decode, from a seekable
// file and from a plain stream, and the fast decoder really declined it.
func TestDecodeFallsBack(t *testing.T) {
	data := declinedPickle()
	if _, err := snapshot.DecodeFastPickle(context.Background(), "x", bytes.NewReader(data)); !errors.Is(err, snapshot.ErrFastUnsupported) {
		t.Fatalf("fast decoder: err = %v, want it to decline", err)
	}
	path := filepath.Join(t.TempDir(), "s.pickle")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	fromFile, err := load.DecodeFile(context.Background(), path)
	if err != nil {
		t.Fatalf("DecodeFile: %v", err)
	}
	// io.MultiReader hides the Seek method: the dispatcher must buffer instead.
	fromStream, err := load.Decode(context.Background(), "s.pickle", io.MultiReader(bytes.NewReader(data)))
	if err != nil {
		t.Fatalf("Decode(stream): %v", err)
	}
	for _, in := range []*load.Input{fromFile, fromStream} {
		checkDeclinedDecoded(t, in)
	}
}

// TestDecodeUsesFastPath checks that Decode's result equals the fast decoder's on a generated snapshot.
func TestDecodeUsesFastPath(t *testing.T) {
	var buf bytes.Buffer
	if _, err := gen.Write(&buf, gen.Config{Seed: 7, Entries: 500, Devices: 2}); err != nil {
		t.Fatal(err)
	}
	in, err := load.Decode(context.Background(), "g", bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	fast, err := snapshot.DecodeFastPickle(context.Background(), "g", bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in.Snapshot, fast) {
		t.Error("Decode and the fast decoder disagree")
	}
}
