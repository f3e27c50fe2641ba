package results

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/report"
)

// runtimeFixture maps a fixture name such as "tracer/small_rank0.json" (the name the golden files carry) to the
// file in its decoder package's testdata.
func runtimeFixture(name string) string {
	kind, file, _ := strings.Cut(name, "/")
	dirs := map[string][]string{
		"tracer":   {"..", "..", "tracer", "testdata"},
		"timeline": {"..", "..", "memtimeline", "testdata"},
		"logs":     {"..", "..", "trainlog", "testdata"},
	}
	return filepath.Join(append(dirs[kind], filepath.FromSlash(file))...)
}

// runtimeRun analyzes one fixture of each runtime source into a Run.
func runtimeRun(t *testing.T) *report.Run {
	t.Helper()
	run := &report.Run{Version: report.ReportVersion, Tool: "memscan test"}
	for _, tc := range []struct {
		file string
		fn   func(context.Context, *load.Input, analyze.RuntimeOptions) (*report.Report, error)
	}{
		{"tracer/small_rank0.json", analyze.AnalyzeTracer},
		{"tracer/run_r1_small.json", analyze.AnalyzeTracer},
		{"timeline/small_memory_timeline.json", analyze.AnalyzeTimeline},
		{"logs/megatron.log", analyze.AnalyzeLog},
	} {
		// Slash paths keep the golden file identical on every OS.
		in, err := load.DecodeFile(context.Background(), runtimeFixture(tc.file))
		if err != nil {
			t.Fatal(err)
		}
		in.Path = tc.file
		r, err := tc.fn(context.Background(), in, analyze.RuntimeOptions{Top: 3})
		if err != nil {
			t.Fatal(err)
		}
		run.Inputs = append(run.Inputs, r)
	}
	run.Cross = &report.Cross{Tracer: analyze.CrossTracer(run.Inputs)}
	return run
}

// TestRuntimeSummaryJSON pins summary.json for tracer, timeline and log inputs (golden file) and checks the
// contract: a tracer input carries integer peak_bytes, listed_bytes, phases[] and modules[].
func TestRuntimeSummaryJSON(t *testing.T) {
	run := runtimeRun(t)
	var buf bytes.Buffer
	if err := WriteJSON(&buf, run); err != nil {
		t.Fatal(err)
	}
	golden(t, "runtime_summary.json", buf.Bytes())

	var doc struct {
		Inputs []map[string]json.RawMessage `json:"inputs"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	tr := doc.Inputs[0]
	var peak, listed int64
	var phases []struct {
		Name  string `json:"name"`
		Bytes int64  `json:"bytes"`
		Count int    `json:"count"`
	}
	var modules []struct {
		Pattern string `json:"pattern"`
		Bytes   int64  `json:"bytes"`
		Count   int    `json:"count"`
		Merged  int    `json:"merged_modules"`
	}
	for key, dst := range map[string]any{"peak_bytes": &peak, "listed_bytes": &listed, "phases": &phases, "modules": &modules} {
		if err := json.Unmarshal(tr[key], dst); err != nil {
			t.Fatalf("%s: %v (raw %s)", key, err, tr[key])
		}
	}
	if peak != 13107200 || listed != 11272192 || len(phases) != 4 || len(modules) != 3 || modules[0].Merged != 2 {
		t.Errorf("peak %d listed %d phases %+v modules %+v", peak, listed, phases, modules)
	}
	if string(tr["format"]) != `"tracer-json"` || string(doc.Inputs[2]["format"]) != `"memory-timeline"` || string(doc.Inputs[3]["format"]) != `"megatron-log"` {
		t.Errorf("formats %s %s %s", tr["format"], doc.Inputs[2]["format"], doc.Inputs[3]["format"])
	}
}

// TestRuntimeMsgpackRoundTrip checks that report.msgpack keeps every runtime view, plot series included.
func TestRuntimeMsgpackRoundTrip(t *testing.T) {
	run := runtimeRun(t)
	var buf bytes.Buffer
	if err := WriteMsgpack(&buf, run); err != nil {
		t.Fatal(err)
	}
	back, err := DecodeMsgpack("report.msgpack", buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for i := range run.Inputs {
		a, b := run.Inputs[i], back.Inputs[i]
		if !reflect.DeepEqual(a.Part, b.Part) {
			t.Errorf("input %d (%s) changed in the msgpack round trip", i, a.File)
		}
	}
	if !reflect.DeepEqual(run.Cross.Tracer, back.Cross.Tracer) {
		t.Error("cross tracer view changed in the msgpack round trip")
	}
}
