package snapshot

import (
	"slices"
	"testing"
	"unsafe"
)

// A trace holds millions of entries, so the entry's size decides peak memory: the pickle spends 45–80 bytes on a
// typical event, and the decoded trace must be smaller.
func TestTraceEntrySize(t *testing.T) {
	if n := unsafe.Sizeof(TraceEntry{}); n > 40 {
		t.Errorf("TraceEntry is %d bytes, want at most 40", n)
	}
}

func TestActionNames(t *testing.T) {
	tests := []struct {
		name  string
		want  Action
		known bool
	}{
		{"alloc", ActionAlloc, true},
		{"free_requested", ActionFreeRequested, true},
		{"free_completed", ActionFreeCompleted, true},
		{"segment_alloc", ActionSegmentAlloc, true},
		{"segment_free", ActionSegmentFree, true},
		{"segment_map", ActionSegmentMap, true},
		{"segment_unmap", ActionSegmentUnmap, true},
		{"oom", ActionOOM, true},
		{"snapshot", ActionSnapshot, true},
		{"user_defined", ActionUserDefined, true},
		{"annotate", ActionAnnotate, true},
		{"future_action", ActionOther, false},
		{"", ActionOther, false},
		{"Alloc", ActionOther, false}, // names are case-sensitive, as in PyTorch
	}
	for _, tc := range tests {
		a, ok := ParseAction(tc.name)
		if a != tc.want || ok != tc.known {
			t.Errorf("ParseAction(%q) = %v, %v; want %v, %v", tc.name, a, ok, tc.want, tc.known)
		}
		// As the decoders keep it: the action, and an unknown one's name among the extras.
		s := &Snapshot{}
		e := TraceEntry{Action: a}
		if !ok {
			e.Extra = NewTraceTables(s).Extra(TraceExtra{OtherAction: tc.name})
		}
		if got := s.ActionName(&e); got != tc.name {
			t.Errorf("ActionName of %q = %q", tc.name, got)
		}
		if tc.known && a.String() != tc.name {
			t.Errorf("%v.String() = %q, want %q", a, a.String(), tc.name)
		}
		if (e.Extra != 0) != (!tc.known && tc.name != "") {
			t.Errorf("%q: Extra = %d (table %+v), want one only for a non-empty unknown name", tc.name, e.Extra, s.TraceExtras)
		}
	}
}

// TestTraceTables: the tables keep each stack (by pointer) and each extra (by value) once, 0 standing for none;
// a snapshot whose entries name none keeps nil tables; the accessors read the tables, and all-empty extras for
// an entry without any or with an index beyond them.
func TestTraceTables(t *testing.T) {
	s := &Snapshot{}
	tab := NewTraceTables(s)
	if tab.Stack(nil) != 0 || tab.Extra(TraceExtra{}) != 0 || s.TraceStacks != nil || s.TraceExtras != nil {
		t.Fatalf("naming nothing made tables %v %v", s.TraceStacks, s.TraceExtras)
	}
	st1, st2 := &Stack{Frames: []Frame{{Filename: "a.py", Line: 1, Name: "f"}}}, &Stack{Frames: []Frame{{Filename: "a.py", Line: 1, Name: "f"}}}
	if r1, r1again, r2 := tab.Stack(st1), tab.Stack(st1), tab.Stack(st2); r1 != 1 || r1again != 1 || r2 != 2 {
		t.Errorf("stack refs %d %d %d, want 1 1 2 (the same pointer once, another pointer apart)", r1, r1again, r2)
	}
	a := tab.Extra(TraceExtra{CompileContext: "N/A", UserMetadata: ""})
	b := tab.Extra(TraceExtra{CompileContext: "N/A"})
	c := tab.Extra(TraceExtra{CompileContext: "N/A", Pool: PoolID{0, 1}})
	if a != 1 || b != 1 || c != 2 || tab.Extra(TraceExtra{CompileContext: "N/A"}) != 1 {
		t.Errorf("extra refs %d %d %d, want 1 1 2", a, b, c)
	}
	if len(s.TraceStacks) != 3 || s.TraceStacks[0] != nil || len(s.TraceExtras) != 3 || s.TraceExtras[0] != (TraceExtra{}) {
		t.Fatalf("tables %v %+v, want 0 for none then each once", s.TraceStacks, s.TraceExtras)
	}
	e := TraceEntry{Stack: 2, Extra: c}
	if x := s.EntryExtra(&e); x.CompileContext != "N/A" || x.Pool != (PoolID{0, 1}) || x.UserMetadata != "" || s.EntryStack(&e) != st2 {
		t.Errorf("accessors on %+v: %+v, stack %p", e, *x, s.EntryStack(&e))
	}
	for _, none := range []TraceEntry{{}, {Stack: 9, Extra: 9}, {Stack: -1, Extra: -1}} {
		if s.EntryStack(&none) != nil || *s.EntryExtra(&none) != (TraceExtra{}) || s.ActionName(&none) != none.Action.String() {
			t.Errorf("accessors on %+v are not empty", none)
		}
	}
	// Stream 0 needs no table; other handles are numbered from 1 in the order met, each once, whether or not the
	// previous event was on the same stream.
	if tab.Stream(0) != 0 || s.TraceStreams != nil {
		t.Fatalf("stream 0 made a table %v", s.TraceStreams)
	}
	var got []StreamRef
	for _, h := range []uint64{7, 7, 1 << 63, 7, 0, 1 << 63, 3} {
		got = append(got, tab.Stream(h))
	}
	if want := []StreamRef{1, 1, 2, 1, 0, 2, 3}; !slices.Equal(got, want) || !slices.Equal(s.TraceStreams, []uint64{0, 7, 1 << 63, 3}) {
		t.Errorf("stream refs %v, table %v; want %v and [0 7 2^63 3]", got, s.TraceStreams, want)
	}
	for ref, want := range map[StreamRef]uint64{0: 0, 1: 7, 2: 1 << 63, 3: 3, 4: 0, -1: 0} {
		if h := s.EntryStream(&TraceEntry{Stream: ref}); h != want {
			t.Errorf("EntryStream of ref %d = %d, want %d", ref, h, want)
		}
	}
	// Tables made on a snapshot that has some go on from them.
	again := NewTraceTables(s)
	if again.Stack(st2) != 2 || again.Extra(TraceExtra{CompileContext: "N/A", Pool: PoolID{0, 1}}) != 2 || again.Stack(&Stack{}) != 3 ||
		again.Stream(1<<63) != 2 || again.Stream(5) != 4 {
		t.Errorf("resumed tables: %v %+v %v", s.TraceStacks, s.TraceExtras, s.TraceStreams)
	}
}
