package snapshot

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/input"
)

const mib = 1 << 20

// The fixtures come from testdata/gen/gen.py; the expectations below are computed by hand from the values that
// script writes (its docstrings describe each fixture).

// decodeFixture decodes a fixture with the reference decoder (gopickle plus the converter), and checks that the
// public DecodePickle path, which may use a faster decoder, builds exactly the same model.
func decodeFixture(t *testing.T, path string) (format string, _ *Snapshot) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := decodePickleBytes(context.Background(), path, data)
	if err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fast, err := DecodePickle(context.Background(), path, f)
	if err != nil {
		t.Fatalf("DecodePickle %s: %v", path, err)
	}
	if !reflect.DeepEqual(fast, s) {
		t.Errorf("DecodePickle(%s) builds a different model than the reference decoder", path)
	}
	return PickleFormat(fast.Protocol), s
}

func TestDecodeFixtures(t *testing.T) {
	type totals struct{ reserved, requested, freeInt, freeExt int64 }
	tests := []struct {
		file        string
		format      string
		torchFormat string
		segments    int
		traceLens   []int // nil: no device_traces
		totals      totals
		check       func(t *testing.T, s *Snapshot)
	}{
		{
			file: "v20_history.pickle", format: "pickle-v4", torchFormat: "2.0-history", segments: 2, traceLens: []int{1},
			// requested: 1000 (requested_size) + 400 (history[0].real_size) + 20 MiB (size fallback);
			// internal: (1024-1000) + (512-400); external: the inactive 2 MiB - 1536.
			totals: totals{22 * mib, 1400 + 20*mib, 24 + 112, 2*mib - 1536},
			check: func(t *testing.T, s *Snapshot) {
				const base = 0x7F0000000000
				b := s.Segments[0].Blocks
				wantAddr := []uint64{base, base + 1024, base + 1536}
				for i, w := range wantAddr {
					if b[i].Address != w {
						t.Errorf("block %d address = %#x, want %#x (cumulative)", i, b[i].Address, w)
					}
				}
				if b[1].RequestedSize != 400 || len(b[1].History) != 2 || b[1].History[1].RealSize != 512 {
					t.Errorf("block 1 = %+v, want requested 400 from history[0].real_size and 2 history entries", b[1])
				}
				if b[0].Stack == nil || b[0].Stack.Frames[0] != (Frame{"/home/u/proj/model.py", 42, "forward"}) {
					t.Errorf("block 0 stack = %+v, want history[0].frames", b[0].Stack)
				}
				if b[0].Stack != b[1].Stack {
					t.Error("the frames list memoized once must give one *Stack")
				}
				if b[2].Stack != nil || b[2].History[1].Addr != base+4096 {
					t.Errorf("inactive block = %+v, want no stack and history[1].addr %#x", b[2], base+4096)
				}
				if r := s.Segments[1].Blocks[0].RequestedSize; r != 20*mib {
					t.Errorf("block without requested_size or history: requested %d, want size %d", r, 20*mib)
				}
				if s.Segments[0].Pool != (PoolID{}) || s.Segments[0].IsExpandable {
					t.Error("pool and is_expandable must default to (0, 0) and false")
				}
				e := s.DeviceTraces[0][0]
				if e.Action != ActionSnapshot || e.Size != 20*mib+1400 || e.HasTime {
					t.Errorf("trace entry = %+v", e)
				}
			},
		},
		{
			file: "bare_list.pickle", format: "pickle-v4", torchFormat: "list", segments: 2,
			totals: totals{22 * mib, 4*mib - 100 + 8, 100 + 504, 16*mib + 2*mib - 512},
			check: func(t *testing.T, s *Snapshot) {
				if !s.BareList || s.DeviceTraces != nil {
					t.Errorf("BareList = %v, DeviceTraces = %v; want true, nil", s.BareList, s.DeviceTraces)
				}
				if s.Segments[0].Device != 1 || s.Segments[1].Type != SegmentSmall {
					t.Errorf("segments = %+v", s.Segments)
				}
			},
		},
		{
			file: "v21_multi_device.pickle", format: "pickle-v2", torchFormat: "2.1+", segments: 2, traceLens: []int{4, 2, 0},
			totals: totals{40 * mib, 26*mib - 512, 512, 14 * mib},
			check: func(t *testing.T, s *Snapshot) {
				if s.Protocol != 2 {
					t.Errorf("protocol = %d", s.Protocol)
				}
				if s.Segments[1].Stream != 0x55AA00 || s.Segments[1].Device != 1 {
					t.Errorf("segment 1 = device %d stream %#x", s.Segments[1].Device, s.Segments[1].Stream)
				}
				// One frames list object is referenced by both segments, both allocated blocks and the trace
				// entries; protocol 2 memoizes it with BINPUT.
				st := s.Segments[0].Stack
				if st == nil || s.Segments[1].Stack != st || s.Segments[0].Blocks[0].Stack != st || s.EntryStack(&s.DeviceTraces[1][1]) != st {
					t.Error("shared frames list did not decode to one *Stack")
				}
				if free := s.DeviceTraces[0][3]; free.Action != ActionSegmentFree || free.Stack != 0 || free.HasTime {
					t.Errorf("segment_free entry = %+v, want no frames and no time", free)
				}
			},
		},
		{
			file: "v22_oom.pickle", format: "pickle-v3", torchFormat: "2.2+", segments: 1, traceLens: []int{3},
			totals: totals{40 * mib, 40 * mib, 0, 0},
			check: func(t *testing.T, s *Snapshot) {
				oom := s.DeviceTraces[0][2]
				want := TraceEntry{Action: ActionOOM, Size: 80 << 30, TimeUS: 1700000000000009, HasTime: true}
				if oom.Action != want.Action || oom.Size != want.Size || s.EntryExtra(&oom).DeviceFree != 3*mib ||
					oom.TimeUS != want.TimeUS || !oom.HasTime || oom.Addr != 0 {
					t.Errorf("oom = %+v, want %+v", oom, want)
				}
			},
		},
		{
			file: "v28_expandable.pickle", format: "pickle-v4", torchFormat: "2.8+", segments: 1, traceLens: []int{4},
			totals: totals{34 * mib, 30*mib - 1024, 1024, 4 * mib},
			check: func(t *testing.T, s *Snapshot) {
				if !s.Segments[0].IsExpandable {
					t.Error("is_expandable lost")
				}
				var actions []Action
				for _, e := range s.DeviceTraces[0] {
					actions = append(actions, e.Action)
				}
				if !reflect.DeepEqual(actions, []Action{ActionSegmentMap, ActionSegmentMap, ActionAlloc, ActionSegmentUnmap}) {
					t.Errorf("actions = %v", actions)
				}
				if c := s.EntryExtra(&s.DeviceTraces[0][2]).CompileContext; c != "Torch-Compiled Region: 0/0" {
					t.Errorf("compile_context = %q", c)
				}
				as := s.AllocatorSettings
				if as == nil || !as.ExpandableSegments || as.AllocConf != "expandable_segments:True" || as.MaxSplitSize != -1 ||
					len(as.RoundupPower2Divisions) != 16 || as.RoundupPower2Divisions["1024"] != 4 {
					t.Errorf("allocator settings = %+v", as)
				}
			},
		},
		{
			file: "v25_pools.pickle", format: "pickle-v4", torchFormat: "2.5+", segments: 3, traceLens: []int{0},
			// external free counts active_pending_free blocks in full, as _memory_viz does: 1 + 1 + 6 MiB.
			totals: totals{14 * mib, 6*mib - 4096, 4096, 8 * mib},
			check: func(t *testing.T, s *Snapshot) {
				pools := []PoolID{s.Segments[0].Pool, s.Segments[1].Pool, s.Segments[2].Pool}
				if !reflect.DeepEqual(pools, []PoolID{{0, 0}, {0, 1}, {0, 2}}) {
					t.Errorf("pools = %v", pools)
				}
				if st := s.Segments[2].Blocks[1].State; st != BlockActivePendingFree {
					t.Errorf("state = %v", st)
				}
				a := s.ExternalAnnotations
				if len(a) != 2 || a[1].Stage != "END" || a[1].Name != "forward" || a[1].TimeUS != 1730000000000900 || a[1].Extra["tag"] != "step1" {
					t.Errorf("annotations = %+v", a)
				}
				as := s.AllocatorSettings
				if as.GarbageCollectionThreshold != 0.5 || !as.GraphCaptureRecordStreamReuse || as.Other["some_future_knob"] != `[1, "two"]` {
					t.Errorf("allocator settings = %+v", as)
				}
			},
		},
		{
			file: "v210_user_metadata.pickle", format: "pickle-v5", torchFormat: "2.10+", segments: 1, traceLens: []int{3},
			totals: totals{20 * mib, 20 * mib, 0, 0},
			check: func(t *testing.T, s *Snapshot) {
				if f := s.Segments[0].Stack.Frames[0]; f.Filename != `D:\Dev\proj\model.py` || f.Line != 77 {
					t.Errorf("windows frame = %+v", f)
				}
				tr := s.DeviceTraces[0]
				if tr[1].Action != ActionAnnotate || s.EntryExtra(&tr[1]).UserMetadata != `{"layer": 3}` || s.EntryExtra(&tr[1]).InternalMetadata != "mallocWithAddress" {
					t.Errorf("annotate entry = %+v", tr[1])
				}
				if tr[2].Action != ActionOther || s.ActionName(&tr[2]) != "future_action" || s.EntryExtra(&tr[2]).Category != "ACTIVATION" || s.EntryExtra(&tr[2]).Pool != (PoolID{}) {
					t.Errorf("unknown action = %v %q, want it kept", tr[2].Action, s.ActionName(&tr[2]))
				}
				if len(s.HostSegments) != 1 || s.HostSegments[0].Device != -1 || len(s.HostTraces) != 1 || len(s.HostTraces[0]) != 1 {
					t.Errorf("host segments/traces = %+v / %+v", s.HostSegments, s.HostTraces)
				}
			},
		},
		{
			file: "empty_snapshot.pickle", format: "pickle-v4", torchFormat: "2.5+", segments: 0, traceLens: []int{0},
			check: func(t *testing.T, s *Snapshot) {
				if s.AllocatorSettings == nil || s.AllocatorSettings.PinnedNumRegisterThreads != 1 {
					t.Errorf("allocator settings = %+v", s.AllocatorSettings)
				}
			},
		},
		{
			file: "shared_frames.pickle", format: "pickle-v4", torchFormat: "2.1+", segments: 1, traceLens: []int{50},
			totals: totals{2 * mib, 50 * 512, 0, 2*mib - 50*512},
			check: func(t *testing.T, s *Snapshot) {
				distinct := map[*Stack]int{}
				for _, b := range s.Segments[0].Blocks[:50] {
					distinct[b.Stack]++
				}
				for _, e := range s.DeviceTraces[0] {
					distinct[s.EntryStack(&e)]++
				}
				if len(distinct) != 1 {
					t.Fatalf("50 blocks and 50 entries sharing one frames list gave %d stacks", len(distinct))
				}
				seg := s.Segments[0].Stack
				if distinct[seg] != 0 || !reflect.DeepEqual(seg, s.Segments[0].Blocks[0].Stack) {
					t.Error("an equal but distinct list must stay a distinct *Stack with equal frames")
				}
			},
		},
		{
			file: "large_ints.pickle", format: "pickle-v4", torchFormat: "2.1+", segments: 1, traceLens: []int{1},
			totals: totals{6 << 30, 6<<30 - 512, 512, 0},
			check: func(t *testing.T, s *Snapshot) {
				seg := s.Segments[0]
				if seg.Address != 0xFFFF800000000000 || seg.Stream != 0x8000000000000001 || seg.Blocks[0].Address != 0xFFFF800000000000 {
					t.Errorf("segment address %#x stream %#x", seg.Address, seg.Stream)
				}
				if e := s.DeviceTraces[0][0]; e.Addr != 0xFFFF800000000000 || s.EntryStream(&e) != 0x8000000000000001 {
					t.Errorf("entry = %+v", e)
				}
			},
		},
		{
			file: "contradictory.pickle", format: "pickle-v4", torchFormat: "2.1+", segments: 2, traceLens: []int{0},
			totals: totals{6 * mib, 4*mib + 100, -100, 1 * mib},
			check: func(t *testing.T, s *Snapshot) {
				w := s.Validate()
				want := []string{
					"segments[0].blocks[0].requested_size: 2097252 > size 2097152 on an active block",
					"segments[0].total_size: 4194304, but its 2 blocks sum to 3145728",
					"segments[0].allocated_size: 3145728, but its active_allocated blocks sum to 2097152",
					"segments[0].active_size: 3145728, but its active blocks sum to 2097152",
					"segments[1]: overlaps segments[0] on device 0",
				}
				if len(w) != len(want) {
					t.Fatalf("warnings = %q, want %d", w, len(want))
				}
				for i := range want {
					if !strings.HasPrefix(w[i], want[i]) {
						t.Errorf("warning %d = %q, want prefix %q", i, w[i], want[i])
					}
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			format, s := decodeFixture(t, filepath.Join("testdata", tc.file))
			if format != tc.format || s.TorchFormat != tc.torchFormat {
				t.Errorf("format %q torch format %q, want %q %q", format, s.TorchFormat, tc.format, tc.torchFormat)
			}
			if len(s.Segments) != tc.segments {
				t.Errorf("segments = %d, want %d", len(s.Segments), tc.segments)
			}
			if tc.traceLens == nil {
				if s.DeviceTraces != nil {
					t.Errorf("device traces = %v, want none", s.DeviceTraces)
				}
			} else {
				var lens []int
				for _, tr := range s.DeviceTraces {
					lens = append(lens, len(tr))
				}
				if !reflect.DeepEqual(lens, tc.traceLens) {
					t.Errorf("trace lengths = %v, want %v", lens, tc.traceLens)
				}
			}
			r, q, fi, fe := segsum(s)
			if got := (totals{r, q, fi, fe}); got != tc.totals {
				t.Errorf("totals = %+v, want %+v", got, tc.totals)
			}
			if tc.file != "contradictory.pickle" {
				if w := s.Validate(); len(w) != 0 {
					t.Errorf("unexpected contradictions: %q", w)
				}
			}
			if tc.check != nil {
				tc.check(t, s)
			}
		})
	}
}

func TestDecodeBadInputs(t *testing.T) {
	tests := []struct {
		file   string
		offset int64  // -1: the error names a field instead
		field  string // expected Error.Field
		msg    string // substring of Error.Msg
	}{
		{"empty.pickle", 0, "", "empty file"},
		{"truncated.pickle", 2, "", "truncated: FRAME claims 39 bytes but only 14 remain"},
		{"global.pickle", 2, "", `refused opcode GLOBAL (0x63) "collections.OrderedDict"`},
		{"stack_global.pickle", 39, "", "refused opcode STACK_GLOBAL"},
		{"reduce.pickle", 4, "", "refused opcode REDUCE"},
		{"inst.pickle", 3, "", `refused opcode INST (0x69) "os.system"`},
		{"huge_unicode8.pickle", 2, "", "a string of 2147483648 bytes (limit 67108864)"},
		{"huge_frame.pickle", 2, "", "FRAME claims 2147483648 bytes but only 2 remain"},
		{"huge_long4.pickle", 2, "", "integer of 2147483647 bytes is too large"},
		{"deep_lists.pickle", -1, "", "not a snapshot: a list of list"},
		{"deep_marks.pickle", 2, "", "the top-level value is built under a MARK"},
		{"int.pickle", 2, "", "the top-level value is an int; a snapshot is a dict"},
		{"dict_without_segments.pickle", -1, "", "no 'segments' key (keys: bar, foo)"},
		{"list_of_ints.pickle", -1, "", "not a snapshot: a list of int"},
		{"negative_size.pickle", -1, "segments[0].blocks[1].size", "negative (-5)"},
		{"missing_stream.pickle", -1, "segments[0].stream", "missing"},
		{"random.pickle", 2, "", "unknown opcode 0xa5"},
		{"proto1.pickle", 0, "", "unsupported pickle protocol 1"},
		{"memo_missing.pickle", 2, "", "memo key 5 is read before it was stored"},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata", "bad", tc.file)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, err = decodePickleBytes(context.Background(), path, data)
			var de *input.Error
			if !errors.As(err, &de) {
				t.Fatalf("err = %v (%T), want *Error", err, err)
			}
			if de.File != path || de.Offset != tc.offset || de.Field != tc.field || !strings.Contains(de.Msg, tc.msg) {
				t.Errorf("error = file %q offset %d field %q msg %q; want %q %d %q ~%q", de.File, de.Offset, de.Field, de.Msg,
					path, tc.offset, tc.field, tc.msg)
			}
			// The public path (whichever decoder it picks) must fail too, with one *Error naming the file.
			_, perr := DecodePickle(context.Background(), path, bytes.NewReader(data))
			var pe *input.Error
			if !errors.As(perr, &pe) || pe.File != path {
				t.Errorf("DecodePickle error = %v, want an *Error naming %s", perr, path)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans several lines: %q", err)
			}
		})
	}
}

// TestDecodeHostileInMemory covers inputs too large to commit: a million nested lists or MARKs, and
// self-referencing lists, must fail cleanly (iteratively, without exhausting the goroutine stack).
func TestDecodeHostileInMemory(t *testing.T) {
	const n = 1_000_000
	deep := append([]byte{0x80, 4}, bytes.Repeat([]byte{']'}, n)...)
	deep = append(deep, bytes.Repeat([]byte{'a'}, n-1)...)
	deep = append(deep, '.')
	marks := append([]byte{0x80, 4, '}'}, bytes.Repeat([]byte{'('}, n)...)
	tests := []struct {
		name  string
		data  []byte
		field string
		msg   string
	}{
		{"million nested lists", deep, "", "a list of list"},
		{"million marks", marks, "", "more than 1000 nested MARKs"},
		// {'segments': L} where L contains itself.
		{"self-referencing segments", []byte("\x80\x04}\x8c\x08segments]\x94h\x00as."), "segments[0]", "got list, want dict"},
		// A frames list that contains itself.
		{"self-referencing frames", []byte("\x80\x04]}(\x8c\x06device\x4b\x00\x8c\x07address\x4b\x00\x8c\x0atotal_size\x4b\x00" +
			"\x8c\x0eallocated_size\x4b\x00\x8c\x0bactive_size\x4b\x00\x8c\x06stream\x4b\x00\x8c\x0csegment_type\x8c\x05large" +
			"\x8c\x06blocks](}(\x8c\x04size\x4b\x00\x8c\x05state\x8c\x08inactive\x8c\x06frames]\x94h\x00aue" +
			"ua."), "segments[0].blocks[0].frames[0]", "got list, want dict"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := boundCtx()
			defer cancel()
			_, err := decodePickleBytes(ctx, "mem", tc.data)
			var de *input.Error
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want *Error", err)
			}
			if de.Field != tc.field || !strings.Contains(de.Msg, tc.msg) {
				t.Errorf("error = %v; want field %q and %q", err, tc.field, tc.msg)
			}
		})
	}
}

// TestDecodeMemoAmplification: a 0.4 MB pickle whose segments list references one 1000-block segment dict
// 200,000 times (2 bytes per reference) would expand to 2e8 blocks; it must be refused, not built.
func TestDecodeMemoAmplification(t *testing.T) {
	str := func(s string) string { return "\x8c" + string(rune(len(s))) + s }
	block := "}(" + str("size") + "K\x00" + str("state") + str("inactive") + "u"
	seg := "}("
	for _, k := range []string{"device", "address", "total_size", "allocated_size", "active_size", "stream"} {
		seg += str(k) + "K\x00"
	}
	seg += str("segment_type") + str("large") + str("blocks") + "](" + strings.Repeat(block, 1000) + "eu"
	data := "\x80\x04}" + str("segments") + "](" + seg + "\x94" + strings.Repeat("h\x00", 200000) + "es."
	ctx, cancel := boundCtx()
	defer cancel()
	_, err := decodePickleBytes(ctx, "amp", []byte(data))
	var de *input.Error
	if !errors.As(err, &de) || !strings.Contains(de.Msg, "expands to more objects") {
		t.Fatalf("err = %v, want the expansion refused", err)
	}
	if !strings.HasPrefix(de.Field, "segments[") {
		t.Errorf("field = %q, want a segments path", de.Field)
	}
}

// TestDecodeEveryPrefix decodes every proper prefix of a protocol-2 and a protocol-4 fixture: each must fail
// with an *Error at an offset inside the prefix, never panic or succeed.
func TestDecodeEveryPrefix(t *testing.T) {
	for _, f := range []string{"v21_multi_device.pickle", "v22_oom.pickle", "v210_user_metadata.pickle"} {
		data, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n < len(data); n++ {
			_, err := decodePickleBytes(context.Background(), f, data[:n])
			var de *input.Error
			if !errors.As(err, &de) {
				t.Fatalf("%s[:%d]: err = %v, want *Error", f, n, err)
			}
			if de.Offset < 0 || de.Offset > int64(n) {
				t.Fatalf("%s[:%d]: offset %d outside the prefix (%v)", f, n, de.Offset, err)
			}
		}
	}
}

func TestDecodeCancelled(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "v22_oom.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := decodePickleBytes(ctx, "x", data); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// TestJSONRenditionMatchesPickle checks that the JSON rendition of a snapshot (written by the same generator
// from the same dict) converts to the same model as the pickle.
func TestJSONRenditionMatchesPickle(t *testing.T) {
	for _, base := range []string{"v22_oom", "v210_user_metadata"} {
		t.Run(base, func(t *testing.T) {
			_, want := decodeFixture(t, filepath.Join("testdata", base+".pickle"))
			raw, err := os.ReadFile(filepath.Join("testdata", base+".json"))
			if err != nil {
				t.Fatal(err)
			}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.UseNumber()
			var v any
			if err := dec.Decode(&v); err != nil {
				t.Fatal(err)
			}
			got, err := decodeSnapshotJSON(base+".json", v)
			if err != nil {
				t.Fatal(err)
			}
			want.Protocol = 0
			if !reflect.DeepEqual(got, want) {
				t.Errorf("JSON model differs from pickle model:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestDecodeSnapshotJSONErrors(t *testing.T) {
	tests := []struct {
		json  string
		field string
		msg   string
	}{
		{`{"segments": [{"device": 0}]}`, "segments[0].address", "missing"},
		{`{"segments": [], "device_traces": [[{"action": "alloc", "addr": -1, "size": 1, "stream": 0}]]}`, "device_traces[0][0].addr", "negative address (-1)"},
		{`{"segments": [], "device_traces": [[{"action": "alloc", "addr": 1, "size": 1.5, "stream": 0}]]}`, "device_traces[0][0].size", "got number, want int"},
		{`{"segments": [], "device_traces": [[{"action": "alloc", "addr": 18446744073709551616, "size": 1, "stream": 0}]]}`, "device_traces[0][0].addr", "beyond 64 bits"},
		{`{"nothing": 1}`, "", "no 'segments' key"},
		{`[1]`, "", "a list of number"},
	}
	for _, tc := range tests {
		dec := json.NewDecoder(strings.NewReader(tc.json))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		_, err := decodeSnapshotJSON("in.json", v)
		var de *input.Error
		if !errors.As(err, &de) || de.Field != tc.field || !strings.Contains(de.Msg, tc.msg) || de.Offset != -1 {
			t.Errorf("%s: err = %v, want field %q msg ~%q", tc.json, err, tc.field, tc.msg)
		}
	}
}

// TestExampleSnapshot checks the README example: a realistic training step whose analysis has something to say.
func TestExampleSnapshot(t *testing.T) {
	path := filepath.Join("..", "testdata", "example", "rank0_memory_snapshot.pickle")
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() >= 1<<20 {
		t.Errorf("example is %d bytes, want < 1 MB", fi.Size())
	}
	format, s := decodeFixture(t, path)
	if format != "pickle-v4" || s.TorchFormat != "2.10+" || len(s.DeviceTraces) != 1 {
		t.Fatalf("format %s/%s, %d traces", format, s.TorchFormat, len(s.DeviceTraces))
	}
	if w := s.Validate(); len(w) != 0 {
		t.Errorf("contradictions: %q", w)
	}
	reserved, requested, freeInt, freeExt := segsum(s)
	if reserved != requested+freeInt+freeExt {
		t.Error("totals do not add up")
	}
	// The replayed peak (live requested bytes) must exceed what is still allocated at the end, and cached free
	// memory must be large enough to trigger fragmentation advice (over 10% of reserved).
	var live, peak int64
	counts := map[Action]int{}
	for _, e := range s.DeviceTraces[0] {
		counts[e.Action]++
		switch e.Action {
		case ActionAlloc:
			live += e.Size
		case ActionFreeCompleted:
			live -= e.Size
		}
		peak = max(peak, live)
		if e.Stack == 0 {
			t.Fatalf("trace entry without a stack: %+v", e)
		}
	}
	if live != requested {
		t.Errorf("replayed live bytes %d != requested bytes of live blocks %d", live, requested)
	}
	if peak <= 2*requested {
		t.Errorf("peak %d not clearly above final allocation %d", peak, requested)
	}
	if freeExt*10 < reserved {
		t.Errorf("cached free %d is under 10%% of reserved %d", freeExt, reserved)
	}
	if counts[ActionSegmentAlloc] == 0 || counts[ActionFreeRequested] != counts[ActionFreeCompleted] {
		t.Errorf("action counts = %v", counts)
	}
	sites := map[string]bool{}
	for _, seg := range s.Segments {
		for _, b := range seg.Blocks {
			if b.Stack != nil {
				for _, f := range b.Stack.Frames {
					sites[filepath.Base(f.Filename)+":"+f.Name] = true
				}
			}
		}
	}
	for _, want := range []string{"model.py:__init__", "train.py:main", "linear.py:__init__", "adamw.py:_init_group", "graph.py:_engine_run_backward", "sparse.py:__init__", "normalization.py:__init__"} {
		if !sites[want] {
			t.Errorf("no live block allocated at %s", want)
		}
	}
}
