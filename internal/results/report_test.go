package results

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/memscan/memscan/report"
)

var update = flag.Bool("update", false, "rewrite golden files")

// golden compares got with testdata/name, rewriting it under -update. On a mismatch it writes
// testdata/name.got for diffing.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		os.WriteFile(path+".got", got, 0o644)
		t.Errorf("%s differs from the golden file; see %s.got (go test -update accepts it)", name, path)
	}
}

func TestGoldenReports(t *testing.T) {
	tests := []struct {
		name   string
		run    *report.Run
		render func(*bytes.Buffer, *report.Run) error
	}{
		{"single.txt", singleRun(), func(b *bytes.Buffer, r *report.Run) error { return WriteText(b, r, TextOptions{}) }},
		{"several.txt", sampleRun(), func(b *bytes.Buffer, r *report.Run) error { return WriteText(b, r, TextOptions{Top: 2}) }},
		{"single.md", singleRun(), func(b *bytes.Buffer, r *report.Run) error {
			return WriteMarkdown(b, r, MarkdownOptions{InputPlots: [][]PlotFile{{{Path: ChartOverview, Title: "Memory overview"}}}})
		}},
		{"several.md", sampleRun(), func(b *bytes.Buffer, r *report.Run) error {
			return WriteMarkdown(b, r, MarkdownOptions{CrossPlots: []PlotFile{{Path: ChartRanks, Title: "Ranks"}}})
		}},
		{"views.txt", viewsRun(), func(b *bytes.Buffer, r *report.Run) error { return WriteText(b, r, TextOptions{}) }},
		{"views.md", viewsRun(), func(b *bytes.Buffer, r *report.Run) error { return WriteMarkdown(b, r, MarkdownOptions{}) }},
		{"repeated.txt", repeatedRun(), func(b *bytes.Buffer, r *report.Run) error { return WriteText(b, r, TextOptions{Top: 10}) }},
		{"repeated.md", repeatedRun(), func(b *bytes.Buffer, r *report.Run) error { return WriteMarkdown(b, r, MarkdownOptions{}) }},
		{"empty.txt", &report.Run{Version: 1, Tool: "memscan 0.1.0", Inputs: []*report.Report{{Header: report.Header{File: "empty.pickle", Format: "pickle-v4", TorchFormat: "2.1+", Rank: -1, Iteration: -1}, Part: &report.SnapshotReport{}}}}, func(b *bytes.Buffer, r *report.Run) error { return WriteText(b, r, TextOptions{}) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.render(&b, tt.run); err != nil {
				t.Fatal(err)
			}
			golden(t, tt.name, b.Bytes())
		})
	}
}

// TestTextReportNumbers checks the exact byte figures the text report must carry, independent of the golden file.
func TestTextReportNumbers(t *testing.T) {
	run := singleRun()
	r := snapshotPart(run.Inputs[0])
	var b bytes.Buffer
	if err := WriteText(&b, run, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	// sampleReport at scale 1: requested 30 GiB + 123 456 = 32 212 378 176; internal 200 MiB + 7 000 = 209 722 200;
	// external 2 GiB + 500 MiB = 2 671 771 648; reserved, their sum, 35 093 872 024.
	for _, want := range []string{
		"35 093 872 024", "32 212 378 176", "209 722 200", "2 671 771 648",
		"torchtitan/models/moe/moe.py:212:forward", "High cache overhead", "measured 8.9, threshold 10",
		"2023-11-14 22:13:21.000000 UTC", // the peak time, 1.700000001e15 µs since the epoch
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q", want)
		}
	}
	if r.ReservedBytes != r.RequestedBytes+r.InternalFreeBytes+r.ExternalFreeBytes {
		t.Fatal("sample report breaks reserved = requested + internal + external")
	}
}

func TestSummaryJSON(t *testing.T) {
	run := sampleRun()
	var b bytes.Buffer
	if err := WriteJSON(&b, run); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	dec := json.NewDecoder(&b)
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"version", "tool", "inputs", "failures", "cross"} {
		if _, ok := doc[key]; !ok {
			t.Errorf("summary.json lacks %q", key)
		}
	}
	inputs := doc["inputs"].([]any)
	if len(inputs) != 2 {
		t.Fatalf("%d inputs, want 2", len(inputs))
	}
	in0 := inputs[0].(map[string]any)
	want := snapshotPart(run.Inputs[0])
	for key, v := range map[string]int64{
		"reserved_bytes": want.ReservedBytes, "allocated_bytes": want.AllocatedBytes, "requested_bytes": want.RequestedBytes,
		"internal_free_bytes": want.InternalFreeBytes, "external_free_bytes": want.ExternalFreeBytes,
		"largest_free_block_bytes": want.LargestFreeBlockBytes,
	} {
		n, ok := in0[key].(json.Number)
		if !ok {
			t.Errorf("%s is %T, want an integer", key, in0[key])
			continue
		}
		if n.String() != strconvI(v) {
			t.Errorf("%s = %s, want %d", key, n, v)
		}
	}
	for _, key := range []string{"file", "format", "torch_format", "devices", "categories", "top", "peak", "ooms", "recommendations", "warnings", "efficiency_pct"} {
		if _, ok := in0[key]; !ok {
			t.Errorf("inputs[0] lacks %q", key)
		}
	}
	if _, ok := in0["timeline"]; ok {
		t.Error("the timeline belongs in report.msgpack, not summary.json")
	}
	// The second input has no OOMs, recommendations or warnings: lists stay [] rather than null.
	in1 := inputs[1].(map[string]any)
	for _, key := range []string{"ooms", "recommendations", "warnings"} {
		if l, ok := in1[key].([]any); !ok || len(l) != 0 {
			t.Errorf("inputs[1].%s = %#v, want []", key, in1[key])
		}
	}
	if run.Inputs[1].OOMs() != nil {
		t.Error("WriteJSON modified the run it rendered")
	}
}

func strconvI(v int64) string { return strconv.FormatInt(v, 10) }

func TestMsgpackRoundTrip(t *testing.T) {
	for _, run := range []*report.Run{sampleRun(), singleRun()} {
		path := filepath.Join(t.TempDir(), FileMsgpack)
		if err := WriteFile(path, func(w io.Writer) error { return WriteMsgpack(w, run) }); err != nil {
			t.Fatal(err)
		}
		got, err := ReadMsgpack(path)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, run) {
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(run)
			t.Errorf("round trip differs:\n got %s\nwant %s", gj, wj)
		}
		if gt, wt := snapshotPart(got.Inputs[0]).Timeline, snapshotPart(run.Inputs[0]).Timeline; len(gt) != 1 || gt[0].ByCategory[0][2] != wt[0].ByCategory[0][2] {
			t.Error("the timeline did not survive the round trip")
		}
	}
}

func TestReadMsgpackErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var good bytes.Buffer
	if err := WriteMsgpack(&good, singleRun()); err != nil {
		t.Fatal(err)
	}
	foreign := &report.Run{Version: 1, Tool: "something else"}
	var fb bytes.Buffer
	WriteMsgpack(&fb, foreign)
	future := singleRun()
	future.Version = report.ReportVersion + 1
	var vb bytes.Buffer
	WriteMsgpack(&vb, future)

	tests := []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "nope.msgpack"), "no such file"},
		{"empty", write("empty", nil), "empty file"},
		{"truncated", write("trunc", good.Bytes()[:good.Len()/2]), "byte "},
		{"garbage", write("garbage", []byte("\xc1\xc1\xc1 not msgpack")), "byte 0: 0xc1 is not a msgpack type"},
		{"nested", write("nested", bytes.Repeat([]byte{0x91}, 1<<20)), "byte 32: nested deeper than 32 levels"},
		{"foreign", write("foreign", fb.Bytes()), "not a memscan report"},
		{"future version", write("future", vb.Bytes()), "version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadMsgpack(tt.path)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestWriteRunDirectory(t *testing.T) {
	for _, tc := range []struct {
		name  string
		run   *report.Run
		files []string
	}{
		{"single", singleRun(), []string{ChartOverview, ChartTopConsumers, ChartCategories, ChartSizes, ChartEfficiency, ChartTimeline}},
		{"several", sampleRun(), []string{ChartRanks, "iter1_rank0/" + ChartTimeline, "iter1_rank1/" + ChartOverview, "iter1_rank1/" + ChartEfficiency}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w, err := Write(context.Background(), dir, tc.run, WriteOptions{Plots: true, Jobs: 2, Top: 50})
			if err != nil {
				t.Fatal(err)
			}
			if w.ChartErr != nil {
				t.Fatal(w.ChartErr)
			}
			for _, f := range append([]string{FileTextReport, FileReadme, FileSummary, FileMsgpack}, tc.files...) {
				fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f)))
				if err != nil || fi.Size() == 0 {
					t.Errorf("%s missing or empty: %v", f, err)
				}
			}
			readme, _ := os.ReadFile(filepath.Join(dir, FileReadme))
			for _, f := range tc.files {
				if !strings.Contains(string(readme), "]("+f+")") {
					t.Errorf("README.md does not embed %s", f)
				}
			}
			back, err := ReadMsgpack(filepath.Join(dir, FileMsgpack))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := back.Inputs[0].AllocatorTotals()
			want, _ := tc.run.Inputs[0].AllocatorTotals()
			if got.ReservedBytes != want.ReservedBytes {
				t.Errorf("report.msgpack reserved = %d, want %d", got.ReservedBytes, want.ReservedBytes)
			}
		})
	}
}

func TestWriteCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Write(ctx, t.TempDir(), singleRun(), WriteOptions{Plots: true, Jobs: 1}); err == nil {
		t.Error("Write with a cancelled context succeeded")
	}
}

func TestGroupDigits(t *testing.T) {
	if got := GroupDigits(13207024640); got != "13 207 024 640" {
		t.Errorf("GroupDigits = %q", got)
	}
	if got := GroupDigits(-1000); got != "-1 000" {
		t.Errorf("GroupDigits(-1000) = %q", got)
	}
}

func TestChartedInputsBounded(t *testing.T) {
	run := &report.Run{Version: 1, Tool: "memscan test", Cross: &report.Cross{}}
	for i := range 40 {
		r := sampleReport(fmt.Sprintf("iteration_1/rank%d_memory_snapshot.pickle", i), i, 1)
		snapshotPart(r).ReservedBytes = int64(i) << 30
		run.Inputs = append(run.Inputs, r)
	}
	run.Cross.OutlierFiles = []string{run.Inputs[3].File}
	got := chartedInputs(run)
	if len(got) != maxChartedInputs {
		t.Fatalf("%d inputs charted, want %d", len(got), maxChartedInputs)
	}
	if !got[3] {
		t.Error("the outlier rank 3 is not charted")
	}
	for i := 40 - (maxChartedInputs - 1); i < 40; i++ {
		if !got[i] {
			t.Errorf("rank %d, among the largest, is not charted", i)
		}
	}
}

// TestMsgpackDeterministic encodes one run many times: map-valued fields (trace_actions) must not make the
// bytes depend on Go's map iteration order.
func TestMsgpackDeterministic(t *testing.T) {
	run := sampleRun()
	snapshotPart(run.Inputs[0]).TraceActions = map[string]int{"alloc": 7, "free_requested": 5, "free_completed": 5, "segment_alloc": 2, "segment_free": 1, "oom": 1, "snapshot": 1}
	var first bytes.Buffer
	if err := WriteMsgpack(&first, run); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		var b bytes.Buffer
		if err := WriteMsgpack(&b, run); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b.Bytes(), first.Bytes()) {
			t.Fatalf("encoding %d differs from the first", i+1)
		}
	}
}
