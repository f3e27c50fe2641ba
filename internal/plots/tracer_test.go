package plots

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestRuntimeCharts draws every chart of the tracer, timeline and log views from small plain data.
func TestRuntimeCharts(t *testing.T) {
	dir := outDir(t)
	tests := []struct {
		name string
		draw func(path string) error
		w, h int // points; 0 skips the size check
	}{
		{"tracer_phases.png", func(p string) error {
			return TracerPhases(p, "Phases: rank0.json, cuda:0", []string{"forward_backward_iter_0", "setup_model_and_optimizer", "optimizer_step_iter_0"},
				[]int64{6 << 20, 4 << 20, 512 << 10}, []int{4, 1, 1}, 11<<20)
		}, 900, 250}, // three bars: 130 + 40 × 3 points high

		{"tracer_modules.png", func(p string) error {
			return TracerModules(p, "Modules: rank0.json, cuda:0", []string{"Net.layers.*.mlp", "Unknown", "Net.layers.*.attn"},
				[]int64{5 << 20, 4 << 20, 1 << 20}, []int{2, 1, 1}, "Unknown", 11<<20)
		}, 900, 250},
		{"tracer_modules_by_rank.png", func(p string) error {
			return TracerModulesByRank(p, "Modules by rank", []string{"Unknown", "layers.*.mlp", "layers.*.attn"}, []string{"rank 0", "rank 1"},
				[][]int64{{5 << 20, 9 << 20}, {5 << 20, 5 << 20}, {1 << 20, 0}})
		}, 0, 0},
		{"memory_timeline.png", func(p string) error {
			return ProfilerTimeline(p, "Memory timeline", []int64{100, 100, 200, 300, 400, 500}, []string{"Parameter", "Optimizer state", "Gradient"},
				[][]int64{{1000, 1000, 1000, 1000, 1000, 1000}, {0, 0, 0, 0, 2000, 0}, {0, 0, 400, 400, 400, -5}}, 4)
		}, 1050, 520},
		{"log_memory.png", func(p string) error {
			return LogMemory(p, "Memory per iteration", "iteration", []LogLine{
				{Name: "rank 0 allocated", X: []float64{1, 2, 3}, Values: []float64{1 << 30, 2 << 30, 2 << 30}},
				{Name: "rank 0 max reserved", X: []float64{1, 2, 3}, Values: []float64{3 << 30, -1, 4 << 30}, Dashed: true},
			})
		}, 1050, 520},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(dir, tc.name)
			if err := tc.draw(p); err != nil {
				t.Fatal(err)
			}
			w, h := 0, 0
			if tc.w > 0 {
				w, h = px(float64(tc.w)), px(float64(tc.h))
			}
			checkPNG(t, p, w, h)
		})
	}
}

func TestRuntimeChartErrors(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.png")
	// Each error names its chart kind and title ("t"), and what is wrong.
	for name, tc := range map[string]struct {
		err  error
		want string
	}{
		"phases lengths":   {TracerPhases(p, "t", []string{"a"}, []int64{1, 2}, []int{1}, 3), "tracer phases t: 1 names, 2 byte values, 1 counts"},
		"modules lengths":  {TracerModules(p, "t", []string{"a"}, []int64{1}, nil, "Unknown", 1), "tracer modules t: 1 patterns, 1 byte values, 0 merge counts"},
		"ranks empty":      {TracerModulesByRank(p, "t", nil, nil, nil), "tracer modules by rank t: no data"},
		"ranks ragged":     {TracerModulesByRank(p, "t", []string{"a"}, []string{"r0", "r1"}, [][]int64{{1}}), `tracer modules by rank t: pattern "a" has 1 values for 2 ranks`},
		"timeline lengths": {ProfilerTimeline(p, "t", []int64{1, 2}, []string{"a"}, [][]int64{{1}}, 0), `profiler timeline t: category "a" has 1 values for 2 times`},
		"log no lines":     {LogMemory(p, "t", "iteration", nil), "log memory t: no lines"},
		"log no values":    {LogMemory(p, "t", "iteration", []LogLine{{Name: "a", X: []float64{1}, Values: []float64{-1}}}), "log memory t: no values"},
	} {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want it to contain %q", name, tc.err, tc.want)
		}
	}
}
