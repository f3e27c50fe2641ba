package export

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memscan/memscan/snapshot"
)

func TestWriteJSONKeys(t *testing.T) {
	var buf bytes.Buffer
	if err := WriteJSON(context.Background(), &buf, fixtureSnapshot()); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Segments []struct {
			Device        int    `json:"device"`
			Address       uint64 `json:"address"`
			TotalSize     int64  `json:"total_size"`
			SegmentType   string `json:"segment_type"`
			SegmentPoolID []int  `json:"segment_pool_id"`
			Blocks        []struct {
				Size          int64            `json:"size"`
				RequestedSize int64            `json:"requested_size"`
				State         string           `json:"state"`
				Frames        []map[string]any `json:"frames"`
				History       []map[string]any `json:"history"`
			} `json:"blocks"`
		} `json:"segments"`
		DeviceTraces        [][]map[string]any `json:"device_traces"`
		AllocatorSettings   map[string]any     `json:"allocator_settings"`
		ExternalAnnotations []map[string]any   `json:"external_annotations"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("output is not JSON: %v", err)
	}
	if len(doc.Segments) != 3 || doc.Segments[1].Address != seg1Addr || doc.Segments[1].TotalSize != 20*mib ||
		doc.Segments[0].SegmentType != "small" || len(doc.Segments[0].SegmentPoolID) != 2 {
		t.Errorf("segments %+v", doc.Segments)
	}
	if b := doc.Segments[0].Blocks[0]; b.State != "active_allocated" || b.RequestedSize != 1000 || len(b.Frames) != 3 ||
		b.Frames[1]["filename"] != "/src/model.py" || b.Frames[1]["line"].(float64) != 10 {
		t.Errorf("block %+v", b)
	}
	if h := doc.Segments[2].Blocks[0].History; len(h) != 2 || h[1]["frames"] != nil || h[0]["real_size"].(float64) != 3000 {
		t.Errorf("history %+v", h)
	}
	if len(doc.DeviceTraces) != 2 || len(doc.DeviceTraces[0]) != 11 || len(doc.DeviceTraces[1]) != 0 {
		t.Fatalf("device_traces shape")
	}
	oom := doc.DeviceTraces[0][6]
	if oom["action"] != "oom" || oom["device_free"].(float64) != 123 || oom["addr"] != nil {
		t.Errorf("oom entry %v", oom)
	}
	if doc.AllocatorSettings["max_split_size"].(float64) != -1 || doc.ExternalAnnotations[0]["name"] != "ProfilerStep#1" {
		t.Errorf("settings %v annotations %v", doc.AllocatorSettings, doc.ExternalAnnotations)
	}
}

func TestJSONQuote(t *testing.T) {
	for _, s := range []string{"plain", `C:\a\b`, "tab\tnew\nline\"q\"", "\x01ctl", "ünï", "bad\xffutf8"} {
		var buf bytes.Buffer
		j := &jsonEncoder{w: bufioWriter(&buf)}
		j.str(s)
		j.w.Flush()
		var got string
		if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
			t.Fatalf("%q: %v (%s)", s, err, buf.Bytes())
		}
		want := strings.ToValidUTF8(s, "\uFFFD")
		if got != want {
			t.Errorf("%q round-tripped to %q", s, got)
		}
	}
}

// TestPickleLoadsInPython checks the encoder against Python's own unpickler: the loaded object, dumped as JSON,
// equals memscan's JSON export of the same snapshot, and only the opcodes PyTorch's files use appear.
func TestPickleLoadsInPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed: cannot cross-check the pickle with pickle.load")
	}
	for name, s := range map[string]*snapshot.Snapshot{"fixture": fixtureSnapshot(), "large": largeSnapshot(2500)} {
		t.Run(name, func(t *testing.T) { checkPickleInPython(t, py, s) })
	}
}

// largeSnapshot has more than one 1000-item batch per list and spans several 64 KiB pickle frames, with stacks
// shared between entries and frames shared between stacks.
func largeSnapshot(n int) *snapshot.Snapshot {
	s := fixtureSnapshot()
	tab := snapshot.NewTraceTables(s)
	var tr []snapshot.TraceEntry
	stacks := make([]*snapshot.Stack, 50)
	for i := range stacks {
		stacks[i] = &snapshot.Stack{Frames: []snapshot.Frame{
			{Filename: fmt.Sprintf("/src/layer%d.py", i), Line: i, Name: "forward"},
			stackOpt.Frames[1],
		}}
	}
	for i := 0; i < n; i++ {
		tr = append(tr, snapshot.TraceEntry{Action: snapshot.ActionAlloc, Addr: uint64(1<<40 + i*512), Size: int64(i) * 1_000_003,
			Stream: tab.Stream(0xffffffffffffff00), Stack: tab.Stack(stacks[i%len(stacks)]), TimeUS: int64(i), HasTime: true,
			Extra: tab.Extra(snapshot.TraceExtra{UserMetadata: strings.Repeat("m", i%300)})})
	}
	s.DeviceTraces[1] = tr
	return s
}

func checkPickleInPython(t *testing.T, py string, s *snapshot.Snapshot) {
	dir := t.TempDir()
	pk := filepath.Join(dir, "s.pickle")
	var pbuf, jbuf bytes.Buffer
	if err := WritePickle(context.Background(), &pbuf, s); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pk, pbuf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(context.Background(), &jbuf, s); err != nil {
		t.Fatal(err)
	}
	const script = `
import json, pickle, pickletools, sys
allowed = {"PROTO","FRAME","EMPTY_DICT","EMPTY_LIST","MARK","SETITEMS","APPENDS","APPEND","MEMOIZE","BINGET",
  "LONG_BINGET","BININT","BININT1","BININT2","LONG1","BINFLOAT","SHORT_BINUNICODE","BINUNICODE","NEWTRUE","NEWFALSE",
  "TUPLE2","STOP"}
data = open(sys.argv[1], "rb").read()
bad = sorted({op.name for op, _, _ in pickletools.genops(data)} - allowed)
if bad:
    sys.exit("unexpected opcodes: %s" % bad)
print(json.dumps(pickle.loads(data)))
`
	out, err := exec.Command(py, "-c", script, pk).CombinedOutput()
	if err != nil {
		t.Fatalf("python3: %v\n%s", err, out)
	}
	var fromPy, fromGo any
	if err := json.Unmarshal(out, &fromPy); err != nil {
		t.Fatalf("python output: %v\n%s", err, out)
	}
	if err := json.Unmarshal(jbuf.Bytes(), &fromGo); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromPy, fromGo) {
		t.Errorf("pickle.load result differs from the JSON export\npython: %s\ngo:     %s", out, jbuf.Bytes())
	}
}

func bufioWriter(b *bytes.Buffer) *bufio.Writer { return bufio.NewWriter(b) }
