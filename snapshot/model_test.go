package snapshot

import (
	"testing"
	"unsafe"
)

// A trace holds millions of entries, so the entry's size decides peak memory: the pickle spends 60–80 bytes on a
// typical event, and the decoded trace must not be much larger.
func TestTraceEntrySize(t *testing.T) {
	if n := unsafe.Sizeof(TraceEntry{}); n > 64 {
		t.Errorf("TraceEntry is %d bytes, want at most 64", n)
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
		var in ExtraInterner
		var e TraceEntry
		e.SetAction(tc.name, &in)
		if got := e.ActionName(); got != tc.name {
			t.Errorf("ActionName after SetAction(%q) = %q", tc.name, got)
		}
		if tc.known && a.String() != tc.name {
			t.Errorf("%v.String() = %q, want %q", a, a.String(), tc.name)
		}
		if (e.Extra != nil) != (!tc.known && tc.name != "") {
			t.Errorf("SetAction(%q): Extra = %+v, want it only for a non-empty unknown name", tc.name, e.Extra)
		}
	}
}

func TestExtraInterner(t *testing.T) {
	var in ExtraInterner
	if p := in.Intern(TraceExtra{}); p != nil {
		t.Errorf("all-empty extras interned to %+v, want nil", p)
	}
	a := in.Intern(TraceExtra{CompileContext: "N/A", UserMetadata: ""})
	b := in.Intern(TraceExtra{CompileContext: "N/A"})
	c := in.Intern(TraceExtra{CompileContext: "N/A", Pool: PoolID{0, 1}})
	if a == nil || a != b {
		t.Errorf("equal extras not shared: %p %p", a, b)
	}
	if c == a || c.Pool != (PoolID{0, 1}) || c.CompileContext != "N/A" {
		t.Errorf("distinct extras = %+v (shared with %p: %v)", c, a, c == a)
	}
	e := TraceEntry{Extra: c}
	if e.CompileContext() != "N/A" || e.Pool() != (PoolID{0, 1}) || e.UserMetadata() != "" || e.Category() != "" || e.InternalMetadata() != "" {
		t.Errorf("accessors on %+v", *c)
	}
	var none TraceEntry
	if none.CompileContext() != "" || none.Pool() != (PoolID{}) || none.ActionName() != "" {
		t.Error("accessors on an entry without extras are not empty")
	}
	var nilIn *ExtraInterner
	if p := nilIn.Intern(TraceExtra{Category: "X"}); p == nil || p.Category != "X" {
		t.Errorf("nil interner: %+v", p)
	}
}
