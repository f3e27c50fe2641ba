package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/internal/results"
	"github.com/memscan/memscan/report"
)

// TestCompareInput reads each side of a comparison: a run directory rebuilds its one report with its kind,
// a snapshot file comes with its segments, and a run of several inputs or a directory without a report is refused.
func TestCompareInput(t *testing.T) {
	ctx := context.Background()
	tmp := t.TempDir()
	runDir := func(name string, reps ...*report.Report) string {
		dir := filepath.Join(tmp, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		run := &report.Run{Version: report.ReportVersion, Tool: "memscan test", Inputs: reps}
		f, err := os.Create(filepath.Join(dir, results.FileMsgpack))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := results.WriteMsgpack(f, run); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	tracer := &report.Report{Header: report.Header{File: "t.json", Format: "tracer-json"},
		Part: &report.TracerReport{PeakBytes: 3 << 20, Tracer: &report.TracerView{Device: "cuda:0"}}}
	one := runDir("one", tracer)
	two := runDir("two", tracer, tracer)
	empty := filepath.Join(tmp, "empty")
	os.MkdirAll(empty, 0o755)

	in, err := CompareInput(ctx, one, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if peak, _ := in.Report.RecordedPeak(); in.Report.Kind() != report.KindTracer || peak != 3<<20 || in.Segments != nil {
		t.Errorf("run directory: kind %q, peak %d, %d segments; want tracer, %d, none", in.Report.Kind(), peak, len(in.Segments), 3<<20)
	}

	snap := filepath.Join("..", "..", "testdata", "example", "rank0_memory_snapshot.pickle")
	in, err = CompareInput(ctx, snap, analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tot, _ := in.Report.AllocatorTotals(); in.Report.Kind() != report.KindSnapshot || len(in.Segments) != tot.Segments {
		t.Errorf("snapshot: kind %q, %d segment ids for %d segments", in.Report.Kind(), len(in.Segments), tot.Segments)
	}

	for _, tc := range []struct{ path, want string }{
		{two, "holds 2 inputs"},
		{empty, "not a memscan run directory"},
		{filepath.Join(tmp, "missing"), "missing"},
	} {
		if _, err := CompareInput(ctx, tc.path, analyze.Options{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.path, err, tc.want)
		}
	}
}
