package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/memscan/memscan/internal/export"
	"github.com/memscan/memscan/internal/results"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/snapshot"
)

// writeExportFixture pickles a small hand-built snapshot: one 2 MiB segment on stream 0 with a live 1000-byte
// tensor (block 1024) and a free remainder, and a trace that allocates and frees a 4096-byte tensor and then
// allocates the live one.
func writeExportFixture(t *testing.T, dir string) string {
	t.Helper()
	st := &snapshot.Stack{Frames: []snapshot.Frame{
		{Filename: "/home/user/proj/model.py", Line: 12, Name: "forward"},
		{Filename: "/home/user/proj/train.py", Line: 40, Name: "main"},
	}}
	const seg = 0x7f0000000000
	s := &snapshot.Snapshot{
		Segments: []snapshot.Segment{{Device: 0, Address: seg, TotalSize: 2 << 20, AllocatedSize: 1024, ActiveSize: 1024,
			RequestedSize: 1000, Type: snapshot.SegmentSmall, Blocks: []snapshot.Block{
				{Address: seg, Size: 1024, RequestedSize: 1000, State: snapshot.BlockActiveAllocated, Stack: st},
				{Address: seg + 1024, Size: 2<<20 - 1024, State: snapshot.BlockInactive},
			}}},
		TraceStacks: []*snapshot.Stack{nil, st}, // the entries' Stack 1
		DeviceTraces: [][]snapshot.TraceEntry{{
			{Action: snapshot.ActionSegmentAlloc, Addr: seg, Size: 2 << 20, TimeUS: 100, HasTime: true, Stack: 1},
			{Action: snapshot.ActionAlloc, Addr: seg + 4096, Size: 4096, TimeUS: 110, HasTime: true, Stack: 1},
			{Action: snapshot.ActionFreeRequested, Addr: seg + 4096, Size: 4096, TimeUS: 120, HasTime: true, Stack: 1},
			{Action: snapshot.ActionFreeCompleted, Addr: seg + 4096, Size: 4096, TimeUS: 120, HasTime: true, Stack: 1},
			{Action: snapshot.ActionAlloc, Addr: seg, Size: 1000, TimeUS: 130, HasTime: true, Stack: 1},
		}},
		ExternalAnnotations: []snapshot.Annotation{},
	}
	path := filepath.Join(dir, "fixture.pickle")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := export.WritePickle(context.Background(), f, s); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestExportFormats(t *testing.T) {
	tmp := t.TempDir()
	in := writeExportFixture(t, tmp)
	tests := []struct {
		name  string
		args  []string
		check func(t *testing.T, data []byte)
	}{
		{"pprof", []string{"--format", "pprof"}, func(t *testing.T, data []byte) {
			p, err := profile.ParseData(data)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Sample) != 1 || p.Sample[0].Value[1] != 1000 || p.Sample[0].Value[2] != 1024 {
				t.Errorf("samples %v", p.Sample)
			}
		}},
		// At the peak (after the 4096-byte alloc, event 1) the live set is that tensor alone: the 1000-byte one is
		// allocated later, at event 4.
		{"pprof-peak", []string{"--format", "pprof", "--at", "peak"}, func(t *testing.T, data []byte) {
			p, err := profile.ParseData(data)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Sample) != 1 || p.Sample[0].Value[1] != 4096 {
				t.Errorf("peak samples %v", p.Sample)
			}
		}},
		{"collapsed", []string{"--format", "collapsed"}, func(t *testing.T, data []byte) {
			want := "stream_0;active_allocated;train.py:40:main;model.py:12:forward 1000\n" +
				"stream_0;active_allocated;<gaps> 24\n" +
				"stream_0;inactive;<non-python> 0\n" +
				"stream_0;inactive;<gaps> 2096128\n"
			if string(data) != want {
				t.Errorf("got\n%s\nwant\n%s", data, want)
			}
		}},
		{"perfetto", []string{"--format", "perfetto", "--rank", "5"}, func(t *testing.T, data []byte) {
			var tr export.Trace
			if err := json.Unmarshal(data, &tr); err != nil {
				t.Fatal(err)
			}
			var maxAlloc int64
			for _, e := range tr.TraceEvents {
				if e.PID != 5 {
					t.Errorf("pid %d, want rank 5", e.PID)
				}
				if e.Name == "GPU0 memory" {
					maxAlloc = max(maxAlloc, int64(e.Args["allocated"].(float64)))
				}
			}
			if maxAlloc != 4096 {
				t.Errorf("max allocated %d, want 4096", maxAlloc)
			}
		}},
		{"json", []string{"--format", "json"}, func(t *testing.T, data []byte) {
			var doc map[string]any
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			if len(doc["segments"].([]any)) != 1 || len(doc["device_traces"].([]any)[0].([]any)) != 5 {
				t.Errorf("json shape %v", doc)
			}
		}},
		{"slice", []string{"--format", "slice", "--window", "1:4"}, func(t *testing.T, data []byte) {
			in, err := load.Decode(context.Background(), "slice", bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if tr := in.Snapshot.DeviceTraces[0]; len(tr) != 3 || tr[0].Action != snapshot.ActionAlloc || tr[0].Size != 4096 {
				t.Errorf("sliced trace %+v", tr)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(tmp, tc.name+".out")
			var stdout, stderr bytes.Buffer
			args := append(append([]string{"export"}, tc.args...), "-o", out, in)
			if code := run(context.Background(), args, &stdout, &stderr); code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			data, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, data)
		})
	}
	// Text formats can go to stdout.
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"export", "--format", "collapsed", in}, &stdout, &stderr); code != exitOK || !strings.HasPrefix(stdout.String(), "stream_0;") {
		t.Errorf("collapsed to stdout: exit %d, %q", code, stdout.String())
	}
}

func TestExportErrors(t *testing.T) {
	tmp := t.TempDir()
	in := writeExportFixture(t, tmp)
	logFile := filepath.Join(tmp, "train.log")
	os.WriteFile(logFile, []byte("step 1 loss 2.0\n"), 0o644)
	tests := []cliErrorCase{
		{"no format", []string{"export", in}, exitUsage, "--format is required"},
		{"bad format", []string{"export", "--format", "svg", in}, exitUsage, "unknown export format"},
		{"at with perfetto", []string{"export", "--format", "perfetto", "--at", "peak", in}, exitUsage, "--at applies"},
		{"bad at", []string{"export", "--format", "pprof", "--at", "end", in}, exitUsage, "--at"},
		{"window with json", []string{"export", "--format", "json", "--window", "1:2", in}, exitUsage, "apply to --format slice"},
		{"slice without cut", []string{"export", "--format", "slice", "-o", filepath.Join(tmp, "x"), in}, exitUsage, "needs --window"},
		{"bad window", []string{"export", "--format", "slice", "--window", "5:1", in}, exitUsage, "end is before start"},
		{"two inputs", []string{"export", "--format", "json", in, in}, exitUsage, "exactly one INPUT"},
		{"missing input", []string{"export", "--format", "json", filepath.Join(tmp, "none.pickle")}, exitFailed, "none.pickle"},
		{"not a snapshot", []string{"export", "--format", "json", "-o", filepath.Join(tmp, "y"), logFile}, exitFailed, "train.log"},
	}
	checkCLIErrors(t, tests)
	if _, err := os.Stat(filepath.Join(tmp, "y")); err == nil {
		t.Error("a failed export left its output file")
	}
}

// TestExportRealSliceTop slices a real snapshot by its top 3 sites through the CLI and decodes the result: fewer
// trace events, the same segments.
func TestExportRealSliceTop(t *testing.T) {
	dir := testutil.SharedDir(t, "real_snapshots")
	in := filepath.Join(dir, "MAGMA27__assignment2-systems__memory_snapshot.pickle")
	out := filepath.Join(t.TempDir(), "top.pickle")
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"export", "--format", "slice", "--top", "3", "-o", out, in}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if n := strings.Count(stderr.String(), "kept site "); n != 3 {
		t.Errorf("%d kept sites reported:\n%s", n, stderr.String())
	}
	orig, err := load.DecodeFile(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := load.DecodeFile(context.Background(), out)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Snapshot.DeviceTraces[0]) >= len(orig.Snapshot.DeviceTraces[0]) || len(got.Snapshot.Segments) != len(orig.Snapshot.Segments) {
		t.Errorf("slice kept %d of %d events and %d of %d segments", len(got.Snapshot.DeviceTraces[0]), len(orig.Snapshot.DeviceTraces[0]),
			len(got.Snapshot.Segments), len(orig.Snapshot.Segments))
	}
}

// TestExportPeakWithoutTrace: --at peak on a snapshot without an allocator trace (a bare segment list) still
// writes the snapshot's live blocks, and says so on stderr; a snapshot with a trace gets no warning.
func TestExportPeakWithoutTrace(t *testing.T) {
	tmp := t.TempDir()
	for _, tc := range []struct {
		fixture string
		warn    bool
	}{
		{"snapshot/testdata/bare_list.pickle", true},
		{"testdata/example/rank0_memory_snapshot.pickle", false},
	} {
		out := filepath.Join(tmp, filepath.Base(tc.fixture)+".pb.gz")
		code, _, stderr := runCLI(t, "export", "--format", "pprof", "--at", "peak", "-o", out, fixture(t, tc.fixture))
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", tc.fixture, code, stderr)
		}
		if got := strings.Contains(stderr, "no allocator trace"); got != tc.warn {
			t.Errorf("%s: warning %v, want %v (stderr %q)", tc.fixture, got, tc.warn, stderr)
		}
	}
}

// TestExportMemscanOutput gives export the files of a memscan run: the error says which commands read them,
// as analyze's does.
func TestExportMemscanOutput(t *testing.T) {
	tmp := t.TempDir()
	in := writeExportFixture(t, tmp)
	out := filepath.Join(tmp, "results")
	if code, _, stderr := runCLI(t, "analyze", "--quiet", "--no-plots", "--out", out, in); code != exitOK {
		t.Fatalf("analyze: exit %d: %s", code, stderr)
	}
	const hint = "compare run directories with memscan compare, merge rank summaries with memscan merge"
	var tests []cliErrorCase
	for _, name := range []string{results.FileSummary, results.FileMsgpack} {
		path := filepath.Join(out, results.LatestName, name)
		tests = append(tests, cliErrorCase{name, []string{"export", "--format", "json", path}, exitFailed, hint})
	}
	checkCLIErrors(t, tests)
}
