package export

import (
	"bytes"
	"context"
	"testing"

	"github.com/memscan/memscan/snapshot"
)

func TestWriteCollapsedFixture(t *testing.T) {
	// Expected lines derived by hand from fixtureSnapshot, following _memory_viz memory: frames root→leaf, filtered,
	// basename after the last '/', used bytes per block, rounding slack (and stale inactive sizes) as <gaps>.
	want := `stream_0;active_allocated;C:\proj\train.py:5:main;model.py:10:forward 1000
stream_0;active_allocated;<gaps> 24
stream_0;inactive;<non-python> 0
stream_0;inactive;<gaps> 2096128
stream_7;active_allocated;train.py:9:main;opt.py:20:step 10000000
stream_7;active_allocated;<gaps> 485760
stream_7;active_pending_free;C:\proj\train.py:5:main;model.py:10:forward 10485760
stream_0;active_allocated;train.py:9:main;opt.py:20:step 3000
stream_0;active_allocated;<no-context> 500
stream_0;active_allocated;<gaps> 596
`
	var buf bytes.Buffer
	if err := WriteCollapsed(context.Background(), &buf, fixtureSnapshot()); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != want {
		t.Errorf("collapsed output differs\n got:\n%s\nwant:\n%s", got, want)
	}
}

func TestCollapsedSumsToReserved(t *testing.T) {
	// Used bytes plus gaps cover every block, so the folded total equals reserved memory (2 MiB + 20 MiB + 4096).
	var buf bytes.Buffer
	if err := WriteCollapsed(context.Background(), &buf, fixtureSnapshot()); err != nil {
		t.Fatal(err)
	}
	if got, want := foldedTotal(t, buf.Bytes()), int64(22*mib+4096); got != want {
		t.Errorf("folded total %d, want %d", got, want)
	}
}

func foldedTotal(t *testing.T, b []byte) int64 {
	t.Helper()
	var total int64
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		i := bytes.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("line without a count: %q", line)
		}
		var n int64
		for _, c := range line[i+1:] {
			if c < '0' || c > '9' {
				t.Fatalf("bad count in %q", line)
			}
			n = n*10 + int64(c-'0')
		}
		total += n
	}
	return total
}

// TestCollapsedHostileFrameNames: a frame name holding ';' or a line break stays one frame on one line. With the
// names written raw, "evil;fake" read as two frames and "f\n stream_0;x 999999" as a stack of its own with a
// count of 999999.
func TestCollapsedHostileFrameNames(t *testing.T) {
	st := &snapshot.Stack{Frames: []snapshot.Frame{
		{Filename: "/src/model.py", Line: 3, Name: "evil;fake_frame"},
		{Filename: "/src/train\r.py", Line: 1, Name: "f\nstream_0;active_allocated;x 999999\x1b[2J"},
	}}
	s := &snapshot.Snapshot{Segments: []snapshot.Segment{{TotalSize: 4096, Blocks: []snapshot.Block{
		{Size: 4096, RequestedSize: 4096, State: snapshot.BlockActiveAllocated, Stack: st}}}}}
	var buf bytes.Buffer
	if err := WriteCollapsed(context.Background(), &buf, s); err != nil {
		t.Fatal(err)
	}
	want := `stream_0;active_allocated;train\r.py:1:f\nstream_0\x3bactive_allocated\x3bx 999999\x1b[2J;model.py:3:evil\x3bfake_frame 4096` + "\n"
	if got := buf.String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	if got := foldedTotal(t, buf.Bytes()); got != 4096 {
		t.Errorf("folded total %d, want 4096", got)
	}
}
