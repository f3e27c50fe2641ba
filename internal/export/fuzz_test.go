package export

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/snapshot"
)

// FuzzPickleRoundTrip builds a snapshot from the fuzz input, writes it as a pickle and decodes it with memscan's
// decoder: every field must come back (strings as valid UTF-8).
func FuzzPickleRoundTrip(f *testing.F) {
	f.Add("forward", "/src/model.py", 10, int64(1000), uint64(0x7f0000000000), uint64(7), uint8(3))
	f.Add("", "", 0, int64(-1), uint64(1<<63+5), uint64(0), uint8(0))
	f.Add(strings.Repeat("x", 300), "C:\\a\\b.py", -5, int64(1<<40), uint64(1), uint64(1<<62), uint8(200))
	f.Fuzz(func(t *testing.T, name, file string, line int, size int64, addr, stream uint64, n uint8) {
		if size < int64(n) {
			t.Skip("the decoder rightly rejects negative sizes")
		}
		st := &snapshot.Stack{Frames: []snapshot.Frame{{Filename: file, Line: line, Name: name}, {Filename: file, Line: line + 1, Name: name}}}
		s := &snapshot.Snapshot{
			Segments: []snapshot.Segment{{Device: 0, Address: addr, TotalSize: size, Stream: stream, Type: snapshot.SegmentLarge, Stack: st,
				Blocks: []snapshot.Block{{Address: addr, Size: size, RequestedSize: size / 2, State: snapshot.BlockActiveAllocated, Stack: st}}}},
		}
		var tr []snapshot.TraceEntry
		tab := snapshot.NewTraceTables(s)
		for i := 0; i < int(n); i++ {
			e := snapshot.TraceEntry{Action: snapshot.ActionAlloc, Addr: addr + uint64(i), Size: size - int64(i), Stream: tab.Stream(stream),
				TimeUS: int64(i) * size, HasTime: i%2 == 0, Extra: tab.Extra(snapshot.TraceExtra{UserMetadata: name})}
			if i%3 == 0 {
				e.Stack = tab.Stack(st)
			}
			tr = append(tr, e)
		}
		s.DeviceTraces = [][]snapshot.TraceEntry{tr}
		var buf bytes.Buffer
		if err := WritePickle(context.Background(), &buf, s); err != nil {
			t.Fatal(err)
		}
		in, err := load.Decode(context.Background(), "fuzz.pickle", &buf)
		if err != nil {
			t.Fatalf("decoding our own pickle: %v", err)
		}
		got := in.Snapshot
		valid := func(x string) string { return strings.ToValidUTF8(x, "\uFFFD") }
		g := got.Segments[0]
		if g.Address != addr || g.TotalSize != size || g.Stream != stream || g.Blocks[0].RequestedSize != size/2 {
			t.Fatalf("segment %+v", g)
		}
		if f := g.Blocks[0].Stack.Frames[1]; f.Name != valid(name) || f.Filename != valid(file) || f.Line != line+1 {
			t.Fatalf("frame %+v", f)
		}
		if len(got.DeviceTraces) != 1 || len(got.DeviceTraces[0]) != int(n) {
			t.Fatalf("trace lengths")
		}
		for i, e := range got.DeviceTraces[0] {
			w := tr[i]
			if e.Addr != w.Addr || e.Size != w.Size || e.HasTime != w.HasTime || (w.HasTime && e.TimeUS != w.TimeUS) ||
				got.EntryExtra(&e).UserMetadata != valid(s.EntryExtra(&w).UserMetadata) || (e.Stack == 0) != (w.Stack == 0) {
				t.Fatalf("event %d: %+v, want %+v", i, e, w)
			}
		}
	})
}
