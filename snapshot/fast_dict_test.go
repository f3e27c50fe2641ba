package snapshot_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/export"
	"github.com/memscan/memscan/internal/gen"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/internal/traingen"
	"github.com/memscan/memscan/snapshot"
)

// The flat-dict shortcut reads most dicts of a snapshot straight from the buffer instead of through the VM. These
// tests hold it to the VM: every input decodes to the same model (or the same error) with the shortcut on and
// off, and the shortcut leaves to the VM every dict it cannot read exactly as the VM would.

// flatOutcome decodes data with the shortcut on (reading from r, which serves data) and off, fails the test when
// the two differ, and returns the number of dicts the shortcut read and the model.
func flatOutcome(t *testing.T, name string, data []byte, r io.Reader) (int, *snapshot.Snapshot, error) {
	t.Helper()
	ctx := context.Background()
	on, read, onErr := snapshot.DecodeFastPickleFlat(ctx, name, r, true)
	off, none, offErr := snapshot.DecodeFastPickleFlat(ctx, name, bytes.NewReader(data), false)
	if none != 0 {
		t.Fatalf("%s: the shortcut read %d dicts while off", name, none)
	}
	if fmt.Sprint(onErr) != fmt.Sprint(offErr) {
		t.Fatalf("%s: shortcut on: %v; off: %v", name, onErr, offErr)
	}
	// firstDiff names where two models differ, but formats a path at every element: only on a difference.
	if onErr == nil && !reflect.DeepEqual(on, off) {
		path, a, b := firstDiff(reflect.ValueOf(on), reflect.ValueOf(off), "Snapshot")
		t.Fatalf("%s: models differ at %s: shortcut on %s, off %s", name, path, a, b)
	}
	return read, on, onErr
}

// chunkReader serves at most n bytes a read, so that the decoder's buffer ends in the middle of dicts.
type chunkReader struct {
	r io.Reader
	n int
}

func (c chunkReader) Read(p []byte) (int, error) { return c.r.Read(p[:min(len(p), c.n)]) }

// flatGenerated are the generator settings the shortcut is checked on: every torch generation and stack setting,
// shared and unshared stacks, one and two devices, expandable segments and OOMs.
func flatGenerated() []gen.Config {
	out := generatedConfigs() // two devices; expandable and OOM vary along the list
	for i, g := range gen.Generations() {
		for _, stacks := range []gen.Stacks{gen.StacksNone, gen.StacksPython, gen.StacksAll} {
			out = append(out, gen.Config{
				Name: fmt.Sprintf("%s-%s-1dev", g, stacks), Seed: int64(100 + i), Generation: g, Devices: 1,
				Entries: 200, Stacks: stacks, ShareStack: i%2 == 0, Expandable: i%2 == 1, OOM: i%3 != 0,
			})
		}
	}
	return out
}

func TestFlatDictGenerated(t *testing.T) {
	for _, cfg := range flatGenerated() {
		t.Run(cfg.Name, func(t *testing.T) {
			var buf bytes.Buffer
			if _, err := gen.Write(&buf, cfg); err != nil {
				t.Fatal(err)
			}
			checkFlat(t, cfg.Name, buf.Bytes())
		})
	}
}

func TestFlatDictTraining(t *testing.T) {
	for _, run := range []traingen.TrainingLoop{
		{Iterations: 3, Layers: 4, WeightBytes: 64 << 20, ActivationBytes: 256 << 20, LogitsBytes: 512 << 20, Annotations: true},
		{Iterations: 4, Layers: 2, WeightBytes: 8 << 20, ActivationBytes: 32 << 20, LogitsBytes: 64 << 20, Keep: true,
			Scale: []float64{1, 3, 2, 4}, Annotations: true},
	} {
		t.Run(fmt.Sprintf("%d-iterations", run.Iterations), func(t *testing.T) {
			var buf bytes.Buffer
			if err := export.WritePickle(context.Background(), &buf, run.Build()); err != nil {
				t.Fatal(err)
			}
			checkFlat(t, "training", buf.Bytes())
		})
	}
}

// checkFlat holds the shortcut to the VM on a snapshot that decodes, read whole and in small pieces; the
// shortcut must have read most of its trace entries.
func checkFlat(t *testing.T, name string, data []byte) {
	t.Helper()
	read, s, err := flatOutcome(t, name, data, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	entries := 0
	for _, tr := range s.DeviceTraces {
		entries += len(tr)
	}
	if read < entries/2 {
		t.Errorf("%s: the shortcut read %d dicts of a snapshot with %d trace entries", name, read, entries)
	}
	// Refills that end in the middle of a dict: the shortcut leaves those dicts to the VM.
	pieces, _, _ := flatOutcome(t, name, data, chunkReader{bytes.NewReader(data), 997})
	if pieces > read || pieces < read/2 {
		t.Errorf("%s: read in pieces, the shortcut read %d dicts, %d when read whole", name, pieces, read)
	}
}

func TestFlatDictRealSnapshots(t *testing.T) {
	dir := testutil.SharedDir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "real_snapshots", "*.pickle"))
	gz, _ := filepath.Glob(filepath.Join(dir, "gpu_runs", "*.pickle.gz"))
	files = append(files, gz...)
	if len(files) == 0 {
		t.Skipf("no snapshots under %s", dir)
	}
	for _, p := range files {
		t.Run(filepath.Base(p), func(t *testing.T) {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(p, ".gz") {
				zr, err := gzip.NewReader(bytes.NewReader(data))
				if err != nil {
					t.Fatal(err)
				}
				if data, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			read, _, err := flatOutcome(t, filepath.Base(p), data, bytes.NewReader(data))
			if err != nil {
				t.Fatalf("real snapshot: %v", err)
			}
			t.Logf("the shortcut read %d dicts", read)
		})
	}
}

// entrySnap is a snapshot of no segments and one trace whose entries are the given dicts (each from EMPTY_DICT to
// SETITEMS), under a FRAME per part of frames when there are several.
func entrySnap(frames ...[]byte) []byte {
	var body bytes.Buffer
	body.Write([]byte{opEmptyDict, opMark})
	body.Write(str("segments"))
	body.Write([]byte{opEmptyList, opBinPut, 50}) // a memo cell far from MEMOIZE's count
	body.Write(str("device_traces"))
	body.Write([]byte{opEmptyList, opEmptyList, opMark})
	head := body.Bytes()
	tail := []byte{opAppends, opAppend, opSetItems, opStop}
	out := []byte{opProto, 4}
	if len(frames) == 1 {
		out = append(out, head...)
		out = append(out, frames[0]...)
		return append(out, tail...)
	}
	for i, f := range frames {
		if i == 0 {
			f = append(append([]byte(nil), head...), f...)
		}
		if i == len(frames)-1 {
			f = append(append([]byte(nil), f...), tail...)
		}
		out = append(out, opFrame)
		out = binary.LittleEndian.AppendUint64(out, uint64(len(f)))
		out = append(out, f...)
	}
	return out
}

func str(s string) []byte { return append([]byte{opShortBinUni, byte(len(s))}, s...) }

// entry is a trace entry dict: EMPTY_DICT, then the opcodes of its items between MARK and SETITEMS.
func entry(items ...[]byte) []byte {
	out := []byte{opEmptyDict, opMark}
	for _, it := range items {
		out = append(out, it...)
	}
	return append(out, opSetItems)
}

// alloc is the items of an ordinary alloc entry, its keys and action written out.
func alloc(addr byte) []byte {
	return bytes.Join([][]byte{str("action"), str("alloc"), str("addr"), {opBinInt1, addr}, str("size"),
		{opBinInt1, 64}, str("stream"), {opBinInt1, 0}}, nil)
}

func cat(b ...[]byte) []byte { return bytes.Join(b, nil) }

// frameDict is a frame's dict, stored in the memo.
func frameDict(file string, line byte) []byte {
	return cat([]byte{opEmptyDict, opMemoize, opMark}, str("filename"), str(file), str("line"), []byte{opBinInt1, line},
		str("name"), str("f"), []byte{opSetItems})
}

// longGets rewrites the BINGETs of items (pairs of opcode and one-byte index, and the one-byte BININT1 values
// between them) as LONG_BINGETs.
func longGets(items []byte) []byte {
	var out []byte
	for i := 0; i < len(items); i += 2 {
		if items[i] == opBinGet {
			out = append(out, opLongBinGet, items[i+1], 0, 0, 0)
		} else {
			out = append(out, items[i], items[i+1])
		}
	}
	return out
}

func TestFlatDictCases(t *testing.T) {
	memoized := cat(str("action"), []byte{opMemoize}, str("free"), []byte{opMemoize}, str("addr"), []byte{opMemoize},
		[]byte{opBinInt1, 7}, str("size"), []byte{opMemoize}, []byte{opBinInt1, 64}, str("stream"), []byte{opMemoize},
		[]byte{opBinInt1, 0})
	// MEMOIZE numbers cells by how many are set, not by the highest index: cell 50 is the only one before the
	// first entry, which is stored at 1 and its strings at 2 to 6.
	fromMemo := cat([]byte{opBinGet, 2}, []byte{opBinGet, 3}, []byte{opBinGet, 4}, []byte{opBinInt1, 9},
		[]byte{opBinGet, 5}, []byte{opBinInt1, 64}, []byte{opBinGet, 6}, []byte{opBinInt1, 0})
	split := entry(alloc(2))
	tests := []struct {
		name     string
		data     []byte
		wantRead int    // dicts the shortcut reads
		wantErr  string // "" when the snapshot decodes
	}{
		{"plain entries", entrySnap(cat(entry(alloc(1)), entry(alloc(2)))), 2, ""},
		{"keys from the memo", entrySnap(cat([]byte{opEmptyDict, opMemoize, opMark}, memoized, []byte{opSetItems},
			entry(fromMemo))), 2, ""},
		// Cell 4 ('addr', read as a key by the second entry) is stored again as 'size' by the third: the fourth,
		// an oom, reads it as 'size', not as the 'addr' the second read there.
		{"key cell stored again", entrySnap(cat([]byte{opEmptyDict, opMemoize, opMark}, memoized, []byte{opSetItems},
			entry(fromMemo),
			entry([]byte{opBinGet, 2, opBinGet, 3}, str("size"), []byte{opBinPut, 4, opBinInt1, 64}, str("addr"),
				[]byte{opBinInt1, 9, opBinGet, 6, opBinInt1, 0}),
			entry([]byte{opBinGet, 2}, str("oom"), []byte{opBinGet, 4, opBinInt1, 100, opBinGet, 6, opBinInt1, 0}))), 4, ""},
		// The same through LONG_BINGET, the form of keys memoized past cell 255.
		{"key cell stored again, long form", entrySnap(cat([]byte{opEmptyDict, opMemoize, opMark}, memoized, []byte{opSetItems},
			entry(longGets(fromMemo)),
			entry([]byte{opLongBinGet, 2, 0, 0, 0, opLongBinGet, 3, 0, 0, 0}, str("size"), []byte{opBinPut, 4, opBinInt1, 64},
				str("addr"), []byte{opBinInt1, 9, opLongBinGet, 6, 0, 0, 0, opBinInt1, 0}),
			entry([]byte{opLongBinGet, 2, 0, 0, 0}, str("oom"), []byte{opLongBinGet, 4, 0, 0, 0, opBinInt1, 100,
				opLongBinGet, 6, 0, 0, 0, opBinInt1, 0}))), 4, ""},
		{"key of type int", entrySnap(cat(entry(alloc(1)), entry(alloc(2), []byte{opBinInt1, 5, opBinInt1, 6}))), 1,
			"dict key of type int"},
		{"key from the memo that is a list", entrySnap(cat(entry(alloc(1)), entry(alloc(2), []byte{opBinGet, 50},
			[]byte{opBinInt1, 6}))), 1, "dict key of type list"},
		{"entry across a frame boundary", entrySnap(cat(entry(alloc(1)), split[:10]), cat(split[10:], entry(alloc(3)))),
			2, ""},
		{"duplicate key", entrySnap(cat(entry(alloc(1)), entry(alloc(2), str("size"), []byte{opBinInt1, 99}))), 1, ""},
		{"duplicate unknown key", entrySnap(entry(alloc(1), str("note"), str("a"), str("note"), str("b"))), 1, ""},
		{"reference to the entry itself", entrySnap(cat([]byte{opEmptyDict, opMemoize, opMark}, alloc(1),
			str("self"), []byte{opBinGet, 1, opSetItems})), 0, "still being built"},
		{"memo store after an int", entrySnap(entry(alloc(1), str("n"), []byte{opBinInt1, 5, opMemoize})), 0, ""},
		{"empty fresh frames list", entrySnap(entry(alloc(1), str("frames"), []byte{opEmptyList})), 1, ""},
		// Fresh frames lists of frames from the memo, as PyTorch writes an event's stack: the first entry's frames
		// are fresh dicts (the VM's, which stores them at 1 and 2), the next ones read their list whole (stored at
		// 3 and 4), twice-stored is the VM's, and the last reads the second's list back from the memo.
		{"fresh frames lists", entrySnap(cat(
			entry(alloc(1), str("frames"), []byte{opEmptyList, opMark}, frameDict("a.py", 1), frameDict("b.py", 2),
				[]byte{opAppends}),
			entry(alloc(2), str("frames"), []byte{opEmptyList, opMemoize, opMark, opBinGet, 1, opLongBinGet, 2, 0, 0, 0,
				opAppends}),
			entry(alloc(3), str("frames"), []byte{opEmptyList, opMemoize, opBinGet, 2, opAppend}),
			entry(alloc(4), str("frames"), []byte{opEmptyList, opMemoize, opMemoize, opMark, opBinGet, 1, opAppends}),
			entry(alloc(5), str("frames"), []byte{opBinGet, 3}))), 5, ""},
		{"fresh frames list holding a list", entrySnap(entry(alloc(1), str("frames"), []byte{opEmptyList, opMark,
			opBinGet, 50, opAppends})), 0, "list of lists"},
		// A record that does not read frames (here a frame) with a fresh list under 'frames': the list is made
		// only when the dict is, so the shortcut leaves the dict to the VM (it once indexed the list unmade).
		{"fresh frames list in a record that does not read it", entrySnap(cat(entry(alloc(1)), entry(str("filename"),
			str("a.py"), str("line"), []byte{opBinInt1, 1}, str("name"), str("f"), str("frames"), []byte{opEmptyList}))),
			1, "a trace holding a frame"},
		{"empty list under an unknown key", entrySnap(cat(entry(alloc(1)), entry(alloc(2), str("seen"),
			[]byte{opBinGet, 50}))), 2, ""},
		// 'alloc' stored at 6 and read back as an (unknown) key in the same dict, then as the next entry's action.
		{"memo read after a store in one dict", entrySnap(cat(
			entry(str("action"), str("alloc"), []byte{opBinPut, 6}, alloc(1)[len(str("action"))+len(str("alloc")):],
				[]byte{opBinGet, 6, opBinInt1, 1}),
			entry(str("action"), []byte{opBinGet, 6}, alloc(2)[len(str("action"))+len(str("alloc")):]))), 2, ""},
		// LONG1 of every length the decoder reads, signed, read by one load or (at the end) byte by byte.
		{"long integers", entrySnap(cat(
			entry(alloc(1), str("time_us"), []byte{opLong1, 7, 1, 2, 3, 4, 5, 6, 7}),
			entry(alloc(2), str("time_us"), []byte{opLong1, 0}),
			entry(alloc(3), str("time_us"), []byte{opLong1, 1, 0xff}),
			entry(alloc(4), str("time_us"), []byte{opLong1, 3, 0x00, 0x00, 0x80}),
			entry(alloc(5), str("time_us"), []byte{opLong1, 8, 1, 2, 3, 4, 5, 6, 7, 0xf0}),
			entry(str("action"), str("alloc"), str("size"), []byte{opBinInt1, 1}, str("stream"),
				[]byte{opLong1, 9, 1, 2, 3, 4, 5, 6, 7, 0xf0, 0}),
			entry(str("action"), str("alloc"), str("size"), []byte{opBinInt1, 1}, str("stream"),
				[]byte{opLong1, 6, 1, 2, 3, 4, 5, 0x86}))), 7, ""},
		{"two record kinds", entrySnap(entry(alloc(1), str("filename"), str("a.py"))), 0, "two record kinds"},
		{"size of the wrong type", entrySnap(entry(str("action"), str("alloc"), str("size"), str("big"),
			str("stream"), []byte{opBinInt1, 0})), 0, "size of type str"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			read, _, err := flatOutcome(t, tc.name, tc.data, bytes.NewReader(tc.data))
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("err = %v, want %q", err, tc.wantErr)
			}
			if read != tc.wantRead {
				t.Errorf("the shortcut read %d dicts, want %d", read, tc.wantRead)
			}
			// Every way the buffer can end inside a dict.
			for n := 1; n <= 16; n++ {
				flatOutcome(t, tc.name, tc.data, chunkReader{bytes.NewReader(tc.data), n})
			}
		})
	}
}

// FuzzFlatDict holds the shortcut to the VM on arbitrary pickles: the same model or the same error, whether the
// input is read whole or a few bytes at a time.
func FuzzFlatDict(f *testing.F) {
	f.Add(entrySnap(cat(entry(alloc(1)), entry(alloc(2)))))
	f.Add(entrySnap(cat([]byte{opEmptyDict, opMemoize, opMark}, alloc(1), []byte{opSetItems},
		entry(str("action"), []byte{opLong1, 6, 1, 2, 3, 4, 5, 0x86}, str("frames"), []byte{opBinGet, 50}))))
	for i, cfg := range flatGenerated() {
		if i%7 != 0 {
			continue // a few small seeds keep the fuzzer fast
		}
		cfg.Entries, cfg.Devices = 8, 1
		var buf bytes.Buffer
		if _, err := gen.Write(&buf, cfg); err == nil {
			f.Add(buf.Bytes())
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 || data[0] != 0x80 {
			return
		}
		flatOutcome(t, "fuzz.pickle", data, bytes.NewReader(data))
		flatOutcome(t, "fuzz.pickle", data, chunkReader{bytes.NewReader(data), 1 + len(data)%13})
	})
}

// TestEntryExtras: each trace entry gets the extra its own fields name, whether it repeats the previous entry's
// (shared without being read again), differs from it in one field, or returns to an earlier one; the fast
// decoder's model equals the reference decoder's.
func TestEntryExtras(t *testing.T) {
	na := cat(str("compile_context"), str("N/A"))
	pool := func(a, b byte) []byte { return cat(str("pool_id"), []byte{opBinInt1, a, opBinInt1, b, opTuple2}) }
	other := func(action string) []byte {
		return cat(str("action"), str(action), str("size"), []byte{opBinInt1, 1}, str("stream"), []byte{opBinInt1, 0})
	}
	oom := func(free byte) []byte {
		return cat(str("action"), str("oom"), str("size"), []byte{opBinInt1, 8}, str("stream"), []byte{opBinInt1, 0},
			str("device_free"), []byte{opBinInt1, free})
	}
	data := entrySnap(cat(
		entry(alloc(1), na), entry(alloc(2), na), entry(alloc(3), na, str("user_metadata"), str("u")),
		entry(alloc(4), na), entry(alloc(5)), entry(alloc(6), na, pool(0, 1)), entry(alloc(7), na, pool(0, 2)),
		entry(alloc(8), na, pool(0, 2)), entry(other("weird"), na), entry(other("odd"), na), entry(oom(100), na),
		entry(oom(200), na), entry(alloc(9), str("compile_context"), str("Torch-Compiled Region: 0/0")),
		entry(alloc(10), na, str("category"), str("activation")), entry(alloc(11), na)))
	if diffOutcome(t, "extras.pickle", data) {
		t.Fatal("the fast decoder declined the snapshot")
	}
	s, err := snapshot.DecodeFastPickle(context.Background(), "extras.pickle", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	naX := snapshot.TraceExtra{CompileContext: "N/A"}
	want := []snapshot.TraceExtra{naX, naX, {CompileContext: "N/A", UserMetadata: "u"}, naX, {},
		{CompileContext: "N/A", Pool: snapshot.PoolID{0, 1}}, {CompileContext: "N/A", Pool: snapshot.PoolID{0, 2}},
		{CompileContext: "N/A", Pool: snapshot.PoolID{0, 2}}, {OtherAction: "weird", CompileContext: "N/A"},
		{OtherAction: "odd", CompileContext: "N/A"}, {CompileContext: "N/A", DeviceFree: 100},
		{CompileContext: "N/A", DeviceFree: 200}, {CompileContext: "Torch-Compiled Region: 0/0"},
		{CompileContext: "N/A", Category: "activation"}, naX}
	tr := s.DeviceTraces[0]
	if len(tr) != len(want) {
		t.Fatalf("%d entries, want %d", len(tr), len(want))
	}
	for i := range tr {
		if got := s.EntryExtra(&tr[i]); *got != want[i] {
			t.Errorf("entry %d: extra %+v, want %+v", i, got, want[i])
		}
	}
	// Equal extras share one row of the table.
	if tr[0].Extra != tr[3].Extra || tr[0].Extra != tr[14].Extra || tr[6].Extra != tr[7].Extra || tr[4].Extra != 0 {
		t.Errorf("extra refs %d %d %d, %d %d, %d: equal extras not shared", tr[0].Extra, tr[3].Extra, tr[14].Extra, tr[6].Extra, tr[7].Extra, tr[4].Extra)
	}
}
