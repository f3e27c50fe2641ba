package results

import (
	"context"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/report"
)

// TestKindCharts analyzes the tracer, timeline and log fixtures and draws their charts: each kind gets the
// charts of its own part, in the order README.md lists them.
func TestKindCharts(t *testing.T) {
	tests := []struct {
		file    string
		analyze func(context.Context, *load.Input, analyze.RuntimeOptions) (*report.Report, error)
		want    []string
	}{
		{"tracer/small_rank0.json", analyze.AnalyzeTracer, []string{ChartOverview, ChartTopConsumers, ChartCategories, ChartTracerPhases, ChartTracerModules}},
		{"timeline/small.raw.json.gz", analyze.AnalyzeTimeline, []string{ChartCategories, ChartTimeline}},
		{"logs/megatron.log", analyze.AnalyzeLog, []string{ChartLogMemory}},
		{"logs/torchtitan.log", analyze.AnalyzeLog, []string{ChartLogMemory}},
	}
	dir := t.TempDir()
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			in, err := load.DecodeFile(context.Background(), runtimeFixture(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			r, err := tc.analyze(context.Background(), in, analyze.RuntimeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			jobs := reportCharts(r)
			var names []string
			for _, j := range jobs {
				names = append(names, j.file.Path)
				p := filepath.Join(dir, filepath.Base(tc.file)+"_"+j.file.Path)
				if err := j.draw(p); err != nil {
					t.Fatalf("%s: %v", j.file.Path, err)
				}
				f, err := os.Open(p)
				if err != nil {
					t.Fatal(err)
				}
				img, err := png.Decode(f)
				f.Close()
				if err != nil || img.Bounds().Dx() < 100 {
					t.Errorf("%s: not a usable PNG: %v", p, err)
				}
			}
			if !reflect.DeepEqual(names, tc.want) {
				t.Errorf("charts = %v, want %v", names, tc.want)
			}
		})
	}
	// A snapshot with nothing reserved, categorized or traced has nothing to chart.
	if jobs := reportCharts(&report.Report{Header: report.Header{Format: "pickle-v4"}, Part: &report.SnapshotReport{}}); len(jobs) != 0 {
		t.Errorf("empty snapshot report got charts %v", jobs)
	}
}

func TestStripModulePrefix(t *testing.T) {
	tests := []struct {
		in     []string
		want   []string
		prefix string
	}{
		{[]string{"Unknown", "DDP.module.decoder.layers.*.mlp", "DDP.module.output_layer"}, []string{"Unknown", "decoder.layers.*.mlp", "output_layer"}, "DDP.module."},
		{[]string{"DDP.module.a", "DDP.module"}, []string{"module.a", "module"}, "DDP."}, // every label keeps a name
		{[]string{"a.b", "c.d"}, []string{"a.b", "c.d"}, ""},
		{[]string{"Unknown", "only.one"}, []string{"Unknown", "only.one"}, ""},
	}
	for _, tc := range tests {
		got, prefix := stripModulePrefix(tc.in)
		if !reflect.DeepEqual(got, tc.want) || prefix != tc.prefix {
			t.Errorf("stripModulePrefix(%v) = %v, %q; want %v, %q", tc.in, got, prefix, tc.want, tc.prefix)
		}
	}
}

func TestTracerCrossCharts(t *testing.T) {
	var reps []*report.Report
	for _, f := range []string{"run_r1_small.json", "small_rank0.json"} {
		in, err := load.DecodeFile(context.Background(), filepath.Join("..", "..", "tracer", "testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		r, err := analyze.AnalyzeTracer(context.Background(), in, analyze.RuntimeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		reps = append(reps, r)
	}
	jobs := tracerCrossCharts(analyze.CrossTracer(reps))
	if len(jobs) != 1 || jobs[0].input != -1 || jobs[0].file.Path != ChartTracerModulesByRank {
		t.Fatalf("jobs = %+v", jobs)
	}
	if err := jobs[0].draw(filepath.Join(t.TempDir(), "m.png")); err != nil {
		t.Fatal(err)
	}
	if tracerCrossCharts(nil) != nil {
		t.Error("nil cross view drew a chart")
	}
}
