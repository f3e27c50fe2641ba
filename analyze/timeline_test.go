package analyze

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/memtimeline"
	"github.com/memscan/memscan/report"
)

// The timeline fixtures (see snapshot/timeline_test.go) have totals 1000, 1500, 1500, 1400, 3400, 1400 at
// times 100, 100, 200, 300, 400, 500 µs: the peak is 3400 bytes at point 4 (400 µs), made of optimizer state
// 2000, parameters 1000 and gradients 400.
func TestAnalyzeTimelineFixtures(t *testing.T) {
	for _, file := range []string{"small_memory_timeline.json", "small.raw.json.gz"} {
		in, err := load.DecodeFile(context.Background(), filepath.Join("..", "memtimeline", "testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		r, err := AnalyzeTimeline(context.Background(), in, RuntimeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		v := partOf[*report.TimelineReport](t, r).MemoryTimeline
		if r.Format != "memory-timeline" || v.Points != 6 || v.StartUS != 100 || v.EndUS != 500 {
			t.Errorf("%s: format %q points %d span %d..%d", file, r.Format, v.Points, v.StartUS, v.EndUS)
		}
		if v.PeakBytes != 3400 || v.PeakIndex != 4 || v.PeakTimeUS != 400 || v.FinalBytes != 1400 {
			t.Errorf("%s: peak %d at %d (%d µs), final %d", file, v.PeakBytes, v.PeakIndex, v.PeakTimeUS, v.FinalBytes)
		}
		wantComp := []report.CategoryStat{{Name: "Optimizer state", Bytes: 2000}, {Name: "Parameter", Bytes: 1000}, {Name: "Gradient", Bytes: 400}}
		if !reflect.DeepEqual(v.PeakComposition, wantComp) {
			t.Errorf("%s: composition %+v", file, v.PeakComposition)
		}
		// The report's categories are the same bytes under memscan's names, so they line up with a snapshot's.
		wantCanon := []report.CategoryStat{{Name: categorize.OptimizerState, Bytes: 2000}, {Name: categorize.Parameters, Bytes: 1000}, {Name: categorize.Gradient, Bytes: 400}}
		if !reflect.DeepEqual(r.Categories, wantCanon) || r.Peak == nil || !reflect.DeepEqual(r.Peak.Categories, wantCanon) {
			t.Errorf("%s: report categories %+v, want %+v", file, r.Categories, wantCanon)
		}
		wantNames := []string{categorize.Parameters, categorize.OptimizerState, categorize.DataInput, "Temporary",
			categorize.Activation, categorize.Gradient, categorize.Autograd, categorize.Unknown}
		if !reflect.DeepEqual(v.Categories, memtimeline.Categories[:]) || !reflect.DeepEqual(v.MemscanCategories, wantNames) {
			t.Errorf("%s: categories %v mapped to %v", file, v.Categories, v.MemscanCategories)
		}
		// Each category's own maximum: optimizer 2000, parameter 1000, activation 400, gradient 400,
		// temporary 100, the rest 0 (ties keep category order).
		wantMax := []int64{2000, 1000, 400, 400, 100, 0, 0, 0}
		var gotMax []int64
		for _, c := range v.CategoryMax {
			gotMax = append(gotMax, c.Bytes)
		}
		if !reflect.DeepEqual(gotMax, wantMax) || v.CategoryMax[2].Name != "Activation" {
			t.Errorf("%s: category max %+v", file, v.CategoryMax)
		}
		if r.Peak == nil || r.Peak.Bytes != 3400 || r.Peak.TimeUS != 400 {
			t.Errorf("%s: peak %+v", file, r.Peak)
		}
		if s := v.Series; s == nil || len(s.TimesUS) != 6 || s.PeakIndex != 4 {
			t.Errorf("%s: series %+v", file, s)
		}
	}
}

// TestTimelineDownsampleKeepsPeak builds a long timeline whose single highest point must survive downsampling.
func TestTimelineDownsampleKeepsPeak(t *testing.T) {
	const n = 10007
	const peak = 7777
	tl := &memtimeline.Timeline{Form: "plot", Categories: []string{"Parameter", "Activation"}, Bytes: [][]int64{make([]int64, n), make([]int64, n)}}
	for i := range n {
		tl.TimesUS = append(tl.TimesUS, int64(i))
		tl.Bytes[0][i] = 100
		tl.Bytes[1][i] = int64(i % 50)
	}
	tl.Bytes[1][peak] = 1000
	r, err := AnalyzeTimeline(context.Background(), &load.Input{Path: "long.json", Format: "memory-timeline", Timeline: tl}, RuntimeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	v := partOf[*report.TimelineReport](t, r).MemoryTimeline
	s := v.Series
	if len(s.TimesUS) != maxTimelinePlotPoints || s.PeakIndex < 0 || s.TimesUS[s.PeakIndex] != peak || s.Bytes[1][s.PeakIndex] != 1000 {
		t.Errorf("%d points, peak index %d", len(s.TimesUS), s.PeakIndex)
	}
	for i := 1; i < len(s.TimesUS); i++ {
		if s.TimesUS[i] <= s.TimesUS[i-1] {
			t.Fatalf("downsampled times not increasing at %d", i)
		}
	}
	if v.PeakBytes != 1100 {
		t.Errorf("peak %d, want 100 + 1000", v.PeakBytes)
	}
}

// TestTimelineCategory covers every spelling torch.profiler uses (its display names and the enum names trace
// exports carry) and leaves names it does not know alone.
func TestTimelineCategory(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"Parameter", categorize.Parameters}, {"PARAMETER", categorize.Parameters},
		{"Optimizer state", categorize.OptimizerState}, {"OPTIMIZER_STATE", categorize.OptimizerState},
		{"Input", categorize.DataInput}, {"Temporary", "Temporary"}, {"Activation", categorize.Activation},
		{"Gradient", categorize.Gradient}, {"Autograd detail", categorize.Autograd}, {"AUTOGRAD_DETAIL", categorize.Autograd},
		{"Unknown", categorize.Unknown}, {"Parameters/Weights", categorize.Parameters}, {"custom", "custom"},
	} {
		if got := TimelineCategory(tc.in); got != tc.want {
			t.Errorf("TimelineCategory(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
