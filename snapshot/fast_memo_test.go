package snapshot_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/memscan/memscan/snapshot"
)

// TestFastDecodeMemoStacks checks frames lists read back from the memo: an entry that takes a sealed list through
// BINGET gets the stack of the entry that sealed it, and a memo index stored again with another list afterwards
// gives that list, also when it was stored again before the first list was sealed, as the reference decoder reads
// the same pickle.
func TestFastDecodeMemoStacks(t *testing.T) {
	frames := func(p *pk, file string) {
		p.op(opMark, opEmptyDict, opMark).str("filename").str(file).str("line").int1(1).str("name").str("f").op(opSetItems, opAppends)
	}
	entry := func(p *pk, addr byte, framesOp func()) {
		p.op(opEmptyDict, opMark).str("action").str("alloc").str("addr").int1(addr).str("size").int1(8).str("stream").int1(0)
		p.str("frames")
		framesOp()
		p.op(opSetItems)
	}
	p := &pk{}
	p.op(opProto, 4, opEmptyDict, opMark).str("segments").op(opEmptyList)
	p.str("device_traces").op(opEmptyList, opEmptyList, opMark)
	entry(p, 16, func() { p.op(opEmptyList, opBinPut, 50); frames(p, "a.py") }) // seals list a at memo 50
	entry(p, 32, func() { p.op(opBinGet, 50) })                                 // list a again
	entry(p, 48, func() { p.op(opEmptyList, opBinPut, 50); frames(p, "b.py") }) // memo 50 now holds list b
	entry(p, 64, func() { p.op(opBinGet, 50) })                                 // list b
	// Memo 60 is stored again, with an empty list under a key the model ignores, before list c is sealed.
	entry(p, 80, func() { p.op(opEmptyList, opBinPut, 60); frames(p, "c.py"); p.str("x").op(opEmptyList, opBinPut, 60) })
	entry(p, 96, func() { p.op(opBinGet, 60) }) // the empty list: no stack
	p.op(opAppends, opAppend, opSetItems, opStop)
	data := p.Bytes()

	if diffOutcome(t, "memo-stacks", data) {
		t.Fatal("the fast decoder declined the pickle")
	}
	s, err := snapshot.DecodeFastPickle(context.Background(), "memo-stacks", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := s.DeviceTraces[0]
	if len(tr) != 6 {
		t.Fatalf("%d entries, want 6", len(tr))
	}
	if tr[5].Stack != 0 {
		t.Errorf("entry 5: stack %+v, want none (memo 60 was stored again before list c was sealed)", s.EntryStack(&tr[5]))
	}
	for i, want := range []string{"a.py", "a.py", "b.py", "b.py", "c.py"} {
		if st := s.EntryStack(&tr[i]); st == nil || len(st.Frames) != 1 || st.Frames[0].Filename != want {
			t.Errorf("entry %d: stack %+v, want one frame of %s", i, st, want)
		}
	}
	if tr[0].Stack != tr[1].Stack || tr[2].Stack != tr[3].Stack || tr[0].Stack == tr[2].Stack {
		t.Errorf("stacks not shared as the memo shares the lists")
	}
}
