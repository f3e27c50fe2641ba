package analyze

import (
	"context"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/snapshot"
	"github.com/memscan/memscan/tracer"
)

// tracerFixture is the hand-written tracer file shared with the snapshot tests. Its tensors (bytes, module,
// phase, creation site):
//
//	4194304  Unknown             setup_model_and_optimizer  buffers.py:12 (self.grad_data = torch.zeros)
//	2097152  Net.layers.0.mlp    forward_backward_iter_0    net.py:31 (via torch/nn/functional.py gelu)
//	2097152  Net.layers.1.mlp    forward_backward_iter_0    net.py:31
//	1048576  Net.layers.1.mlp    forward_backward_iter_0    net.py:30
//	1048576  Net.layers.10.attn  forward_backward_iter_0    net.py:77
//	 524288  "" (no module)      optimizer_step_iter_0      torch/optim/adam.py:178
//	 262144  Unknown             my custom phase            train.py:70
//
// peak_memory_mb 12.5 → 13107200 bytes; listed 11272192; gap 1835008.
func tracerFixture(t *testing.T, name string) *load.Input {
	t.Helper()
	in, err := load.DecodeFile(context.Background(), filepath.Join("..", "tracer", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestModulePattern(t *testing.T) {
	tests := []struct{ in, want string }{
		{"decoder.layers.0.mlp", "decoder.layers.*.mlp"},
		{"decoder.layers.17.mlp.experts.local_experts.3.linear_fc1", "decoder.layers.*.mlp.experts.local_experts.*.linear_fc1"},
		{"embedding", "embedding"},
		{"layer1.conv", "layer1.conv"}, // digits inside a name are not an index
		{"0", "*"},
		{"", report.UnknownModule},
		{"Unknown", report.UnknownModule},
	}
	for _, tc := range tests {
		if got := ModulePattern(tc.in); got != tc.want {
			t.Errorf("ModulePattern(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestAnalyzeTracerFixture(t *testing.T) {
	r, err := AnalyzeTracer(context.Background(), tracerFixture(t, "small_rank0.json"), RuntimeOptions{Top: 3})
	if err != nil {
		t.Fatal(err)
	}
	tp := partOf[*report.TracerReport](t, r)
	if r.Format != "tracer-json" || r.Rank != 0 || !reflect.DeepEqual(r.Devices, []int{0}) {
		t.Errorf("format %q rank %d devices %v", r.Format, r.Rank, r.Devices)
	}
	if tp.PeakBytes != 13107200 || tp.ListedBytes != 11272192 {
		t.Errorf("peak %d listed %d, want 13107200 and 11272192", tp.PeakBytes, tp.ListedBytes)
	}
	p := tp.Tracer.Primary()
	if tp.Tracer.Device != "cuda:0" || p == nil || len(tp.Tracer.Devices) != 2 {
		t.Fatalf("primary %q, %d devices", tp.Tracer.Device, len(tp.Tracer.Devices))
	}
	if p.GapBytes != 1835008 || p.SmallestListedBytes != 262144 || p.InferredMinMemoryMB != 0 || p.ReleasedTensors != 2 || p.Tensors != 7 {
		t.Errorf("gap %d smallest %d filter %d released %d tensors %d", p.GapBytes, p.SmallestListedBytes, p.InferredMinMemoryMB, p.ReleasedTensors, p.Tensors)
	}
	if !strings.Contains(p.GapExplanation, "1.8 MiB of the 12.5 MiB peak") || strings.Contains(p.GapExplanation, "filter") {
		t.Errorf("gap explanation = %q", p.GapExplanation)
	}

	// Phases: forward 2097152×2 + 1048576×2 = 6291456 (4); setup 4194304 (1); optimizer 524288 (1); custom 262144 (1).
	wantPhases := []report.PhaseStat{
		{Name: "forward_backward_iter_0", Bytes: 6291456, Count: 4},
		{Name: "setup_model_and_optimizer", Bytes: 4194304, Count: 1},
		{Name: "optimizer_step_iter_0", Bytes: 524288, Count: 1},
		{Name: "my custom phase", Bytes: 262144, Count: 1},
	}
	checkShares(t, "phases", len(tp.Phases), func(i int) (int64, float64) { return tp.Phases[i].Bytes, tp.Phases[i].SharePct }, tp.ListedBytes)
	for i := range tp.Phases {
		tp.Phases[i].SharePct = 0
	}
	if !reflect.DeepEqual(tp.Phases, wantPhases) {
		t.Errorf("phases = %+v\nwant %+v", tp.Phases, wantPhases)
	}

	// Merged patterns: layers.0.mlp and layers.1.mlp merge (2 modules, 3 tensors); the empty module and
	// "Unknown" are one group (4194304 + 524288 + 262144 = 4980736); layers.10.attn stays a single module.
	wantMods := []report.ModuleStat{
		{Pattern: "Net.layers.*.mlp", Bytes: 5242880, Count: 3, MergedModules: 2},
		{Pattern: report.UnknownModule, Bytes: 4980736, Count: 3, MergedModules: 1},
		{Pattern: "Net.layers.*.attn", Bytes: 1048576, Count: 1, MergedModules: 1},
	}
	checkShares(t, "modules", len(tp.Modules), func(i int) (int64, float64) { return tp.Modules[i].Bytes, tp.Modules[i].SharePct }, tp.ListedBytes)
	for i := range tp.Modules {
		tp.Modules[i].SharePct = 0
	}
	if !reflect.DeepEqual(tp.Modules, wantMods) {
		t.Errorf("modules = %+v\nwant %+v", tp.Modules, wantMods)
	}

	// Hierarchy: parents include their children; layers.* merges layers.0, layers.1 and layers.10.
	wantTree := []report.ModuleNode{
		{Pattern: "Net", Name: "Net", Depth: 0, Bytes: 6291456, Count: 4, MergedModules: 1},
		{Pattern: "Net.layers", Name: "layers", Depth: 1, Bytes: 6291456, Count: 4, MergedModules: 1},
		{Pattern: "Net.layers.*", Name: "*", Depth: 2, Bytes: 6291456, Count: 4, MergedModules: 3},
		{Pattern: "Net.layers.*.mlp", Name: "mlp", Depth: 3, Bytes: 5242880, OwnBytes: 5242880, Count: 3, MergedModules: 2},
		{Pattern: "Net.layers.*.attn", Name: "attn", Depth: 3, Bytes: 1048576, OwnBytes: 1048576, Count: 1, MergedModules: 1},
		{Pattern: report.UnknownModule, Name: report.UnknownModule, Depth: 0, Bytes: 4980736, OwnBytes: 4980736, Count: 3, MergedModules: 1},
	}
	if !reflect.DeepEqual(p.ModuleTree, wantTree) {
		t.Errorf("tree = %+v\nwant %+v", p.ModuleTree, wantTree)
	}

	// Categories: the grad buffer is Gradient, forward tensors with a module are Activation, the optimizer
	// phase is Optimizer State; every listed byte lands in exactly one category.
	cats := map[string]report.CategoryStat{}
	var catSum int64
	for _, c := range r.Categories {
		cats[c.Name] = c
		catSum += c.Bytes
	}
	if catSum != tp.ListedBytes {
		t.Errorf("categories sum to %d, want %d", catSum, tp.ListedBytes)
	}
	for name, want := range map[string]report.CategoryStat{
		categorize.Gradient:       {Name: categorize.Gradient, Bytes: 4194304, Count: 1},
		categorize.Activation:     {Name: categorize.Activation, Bytes: 6291456, Count: 4},
		categorize.OptimizerState: {Name: categorize.OptimizerState, Bytes: 524288, Count: 1},
	} {
		if cats[name] != want {
			t.Errorf("category %s = %+v, want %+v", name, cats[name], want)
		}
	}

	// Sites: torch's functional.gelu frame is skipped, so both mlp tensors group at net.py:31.
	wantSites := []struct {
		site  string
		bytes int64
		count int
	}{
		{"/home/user/buffers.py:12:__init__", 4194304, 1},
		{"/home/user/net.py:31:forward", 4194304, 2},
		{"/home/user/net.py:30:forward", 1048576, 1},
	}
	if len(p.Sites) != 3 {
		t.Fatalf("sites = %+v (top 3)", p.Sites)
	}
	for i, w := range wantSites {
		if s := p.Sites[i]; s.Site != w.site || s.Bytes != w.bytes || s.Count != w.count {
			t.Errorf("site %d = %+v, want %+v", i, s, w)
		}
	}
	if p.Sites[0].Code != "self.grad_data = torch.zeros(n, device='cuda')" {
		t.Errorf("site code = %q", p.Sites[0].Code)
	}
	if len(p.Stacks) != 3 || p.Stacks[1].Count != 2 || p.Stacks[1].Frames[0] != "torch/nn/functional.py:1901:gelu" {
		t.Errorf("stacks = %+v", p.Stacks)
	}

	// Largest tensors: 4194304 bytes over 1048576 elements → 4-byte elements.
	if len(p.Top) != 3 {
		t.Fatalf("top = %+v", p.Top)
	}
	if top := p.Top[0]; top.Bytes != 4194304 || top.Shape != "[1048576]" || top.ElemBytes != 4 || top.Module != report.UnknownModule || top.Category != categorize.Gradient || top.Released {
		t.Errorf("top[0] = %+v", top)
	}
	if top := p.Top[1]; top.Module != "Net.layers.0.mlp" || top.Pattern != "Net.layers.*.mlp" || !top.Released {
		t.Errorf("top[1] = %+v (equal sizes keep file order)", top)
	}
}

// checkShares checks that the parts sum to the whole and that each share is its bytes over the whole.
func checkShares(t *testing.T, what string, n int, at func(int) (int64, float64), whole int64) {
	t.Helper()
	var sum int64
	for i := range n {
		b, share := at(i)
		sum += b
		if want := float64(b) / float64(whole) * 100; math.Abs(share-want) > 1e-9 {
			t.Errorf("%s[%d] share %v, want %v", what, i, share, want)
		}
	}
	if sum != whole {
		t.Errorf("%s sum to %d, want the listed %d", what, sum, whole)
	}
}

func TestCrossTracer(t *testing.T) {
	r0, err := AnalyzeTracer(context.Background(), tracerFixture(t, "small_rank0.json"), RuntimeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r1, err := AnalyzeTracer(context.Background(), tracerFixture(t, "run_r1_small.json"), RuntimeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if CrossTracer([]*report.Report{r0}) != nil {
		t.Error("one tracer input must give no cross view")
	}
	// Input order must not matter.
	for _, in := range [][]*report.Report{{r0, r1}, {r1, r0, {Header: report.Header{Format: "pickle-v4"}}}} {
		c := CrossTracer(in)
		if c == nil || len(c.Ranks) != 2 || c.Ranks[0].Rank != 0 || c.Ranks[1].Rank != 1 {
			t.Fatalf("ranks = %+v", c)
		}
		// Peaks 13107200 and 16777216: the median of two is the lower one (index ⌊(2−1)·50/100⌋ = 0), as merge has it.
		if c.MaxPeakBytes != 16777216 || c.MaxPeakRank != 1 || c.MinPeakBytes != 13107200 || c.MedianPeakBytes != 13107200 {
			t.Errorf("peaks max %d (rank %d) min %d median %d", c.MaxPeakBytes, c.MaxPeakRank, c.MinPeakBytes, c.MedianPeakBytes)
		}
		if want := (16777216.0/13107200 - 1) * 100; math.Abs(c.ImbalancePct-want) > 1e-9 {
			t.Errorf("imbalance %v, want %v", c.ImbalancePct, want)
		}
		// Rank 1 has a 8 MiB grad buffer (Unknown: 8388608 + 524288 + 262144 = 9175040 vs 4980736) and no
		// layers.10.attn, so Unknown differs most, then attn, and mlp not at all.
		want := []report.TracerModuleAcross{
			{Pattern: report.UnknownModule, Bytes: []int64{4980736, 9175040}, MaxBytes: 9175040, MinBytes: 4980736, SpreadBytes: 4194304},
			{Pattern: "Net.layers.*.attn", Bytes: []int64{1048576, 0}, MaxBytes: 1048576, MinBytes: 0, SpreadBytes: 1048576},
			{Pattern: "Net.layers.*.mlp", Bytes: []int64{5242880, 5242880}, MaxBytes: 5242880, MinBytes: 5242880, SpreadBytes: 0},
		}
		if !reflect.DeepEqual(c.Modules, want) {
			t.Errorf("modules = %+v\nwant %+v", c.Modules, want)
		}
		if c.Phases[0].Name != "setup_model_and_optimizer" || !reflect.DeepEqual(c.Phases[0].Bytes, []int64{4194304, 8388608}) {
			t.Errorf("phases = %+v", c.Phases)
		}
	}
}

// TestAnalyzeTracerSharedExamples checks the documented example: a 501.2 MiB gap (a 500 MiB trigger plus
// filtered small tensors) and layers.0/layers.1 merging with the count of modules, not tensors.
func TestAnalyzeTracerSharedExamples(t *testing.T) {
	dir := testutil.SharedDir(t, "docs", "examples")
	in, err := load.DecodeFile(context.Background(), filepath.Join(dir, "tracer_rank0.json"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := AnalyzeTracer(context.Background(), in, RuntimeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tp := partOf[*report.TracerReport](t, r)
	// 4061.955078125 MiB × 2^20 = 4259268608; the file's tensors sum to 3733716992 (checked against
	// encoding/json in the snapshot tests); 4259268608 − 3733716992 = 525551616 = 501.2 MiB.
	p := tp.Tracer.Primary()
	if tp.PeakBytes != 4259268608 || tp.ListedBytes != 3733716992 || p.GapBytes != 525551616 {
		t.Errorf("peak %d listed %d gap %d", tp.PeakBytes, tp.ListedBytes, p.GapBytes)
	}
	if p.InferredMinMemoryMB < 1 || !strings.Contains(p.GapExplanation, "min_memory_mb") {
		t.Errorf("filter %d, explanation %q", p.InferredMinMemoryMB, p.GapExplanation)
	}
	// linear_fc1 of layers 0 and 1: 67108864 + 16777216 each → 167772160 bytes, 4 tensors, 2 modules.
	var fc1 *report.ModuleStat
	for i := range tp.Modules {
		if tp.Modules[i].Pattern == "DistributedDataParallel.module.module.decoder.layers.*.mlp.linear_fc1" {
			fc1 = &tp.Modules[i]
		}
	}
	if fc1 == nil || fc1.Bytes != 167772160 || fc1.Count != 4 || fc1.MergedModules != 2 {
		t.Errorf("linear_fc1 pattern = %+v", fc1)
	}
	var phaseSum int64
	for _, ph := range tp.Phases {
		phaseSum += ph.Bytes
	}
	if phaseSum != tp.ListedBytes {
		t.Errorf("phases sum to %d, want %d", phaseSum, tp.ListedBytes)
	}
	// Creation sites skip the tracer's frames: no site may point into the tracer or torch's pytree.
	for _, s := range p.Sites {
		if strings.Contains(s.Site, "memory_dispatch_mode") || strings.Contains(s.Site, "_pytree") {
			t.Errorf("site %q is a tracer frame", s.Site)
		}
	}
}

// TestTracerSetupOptimizer: a tensor created in the setup phase is optimizer state only when optimizer code (as
// the snapshot rules know it, by path segment) or Megatron's main-parameter builders made it; a training loop's
// optimization/ folder is not optimizer code.
func TestTracerSetupOptimizer(t *testing.T) {
	stack := func(file, fn string) *snapshot.Stack {
		return &snapshot.Stack{Frames: []snapshot.Frame{{Filename: file, Line: 10, Name: fn}}}
	}
	cz := categorize.NewCategorizer(nil)
	for _, tc := range []struct {
		name string
		user *snapshot.Stack
		want string
	}{
		{"torch optimizer", stack("/usr/lib/python3/site-packages/torch/optim/adamw.py", "_init_group"), categorize.OptimizerState},
		{"megatron main params", stack("/src/megatron/training/training.py", "_build_main_params"), categorize.OptimizerState},
		{"lightning's optimization loop", stack("/venv/lib/python3.11/site-packages/lightning/pytorch/loops/optimization/automatic.py", "_training_step"), categorize.Parameters},
		{"model code", stack("/src/model.py", "__init__"), categorize.Parameters},
		{"no stack", nil, categorize.Parameters},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _ := tracerCategory(&tracer.Tensor{Phase: "setup_model_and_optimizer", Module: report.UnknownModule}, tc.user, cz)
			if got != tc.want {
				t.Errorf("category %s, want %s", got, tc.want)
			}
		})
	}
}
