package calibrate

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/internal/snapbuild"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/memtimeline"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/snapshot"
	"github.com/memscan/memscan/static"
	"github.com/memscan/memscan/tracer"
)

const mib = 1 << 20

// Stacks that the default categorization rules decide unambiguously.
var (
	stWeights   = snapbuild.Stack("site-packages/torch/nn/modules/module.py:1160:_apply", "train.py:20:main")
	stOptimizer = snapbuild.Stack("site-packages/torch/optim/adamw.py:120:_init_group", "train.py:40:main")
	stGrad      = snapbuild.Stack("train.py:33:accumulate_grad", "train.py:40:main")
	stAct       = snapbuild.Stack("site-packages/torch/nn/functional.py:2140:softmax", "model.py:12:forward")
	stUnknown   = snapbuild.Stack("mystery.py:1:helper")
)

// builtSnapshot records weights 100 MiB, optimizer states 200 MiB and gradients 50 MiB before the first forward,
// which stay; in the forward 300 MiB of activations, freed in the backward, and 10 MiB nobody can place, which
// stays; the backward (autograd's thread, no stack) adds a 1 MiB temporary: live at the peak 661 MiB, allocated at
// the end 360 MiB.
func builtSnapshot() *load.Input {
	b := snapbuild.NewSnap(1)
	b.Segment(snapbuild.SegOpts{},
		snapbuild.Live(100*mib, 100*mib, stWeights),
		snapbuild.Live(200*mib, 200*mib, stOptimizer),
		snapbuild.Live(50*mib, 50*mib, stGrad),
		snapbuild.Free(300*mib),
		snapbuild.Live(10*mib, 10*mib, stUnknown),
		snapbuild.Free(1*mib))
	addr := func(j int) uint64 { return b.BlockAddr(0, j) }
	b.Event(0,
		snapbuild.Ev(snapshot.ActionSegmentAlloc, addr(0), 661*mib, stWeights),
		snapbuild.Ev(snapshot.ActionAlloc, addr(0), 100*mib, stWeights),
		snapbuild.Ev(snapshot.ActionAlloc, addr(1), 200*mib, stOptimizer),
		snapbuild.Ev(snapshot.ActionAlloc, addr(2), 50*mib, stGrad),
		snapbuild.Ev(snapshot.ActionAlloc, addr(3), 300*mib, stAct),
		snapbuild.Ev(snapshot.ActionAlloc, addr(4), 10*mib, stUnknown),
		snapbuild.Ev(snapshot.ActionAlloc, addr(5), 1*mib, nil),
		snapbuild.Ev(snapshot.ActionFreeRequested, addr(3), 300*mib, stAct),
		snapbuild.Ev(snapshot.ActionFreeCompleted, addr(3), 300*mib, stAct),
		snapbuild.Ev(snapshot.ActionFreeRequested, addr(5), 1*mib, nil),
		snapbuild.Ev(snapshot.ActionFreeCompleted, addr(5), 1*mib, nil))
	return testutil.Input(b, "rank0_memory_snapshot.pickle")
}

// TestAttributeSnapshotPeak: the components at the peak come from the analysis' stack-and-lifetime attribution:
// kept from the setup with a stack that names them (weights, optimizer states, gradients), forward results freed
// in the backward (activations), the backward's transient (temporaries), and what no rule or lifetime places
// (other). The peak falls in step 1's backward.
func TestAttributeSnapshotPeak(t *testing.T) {
	rep, err := analyze.Analyze(context.Background(), builtSnapshot(), analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	at := Attribute(rep)
	if at == nil {
		t.Fatal("no attribution")
	}
	if at.Source != "snapshot-peak-lifetime" {
		t.Fatalf("source %q, want snapshot-peak-lifetime (the trace has a peak and phases)", at.Source)
	}
	want := map[string]int64{Weights: 100 * mib, Optimizer: 200 * mib, Gradients: 50 * mib, Activations: 300 * mib,
		Temporaries: 1 * mib, Other: 10 * mib}
	for _, c := range Components() {
		if got := at.Bytes(c); got != want[c] {
			t.Errorf("%s = %d MiB, want %d MiB", c, got/mib, want[c]/mib)
		}
	}
	if at.UnattributedBytes != 0 || at.TotalBytes != 661*mib {
		t.Errorf("unattributed %d MiB of %d MiB, want 0 of 661", at.UnattributedBytes/mib, at.TotalBytes/mib)
	}
	if at.Confidence <= 0 || at.Confidence >= 1 {
		t.Errorf("confidence %g, want in (0, 1)", at.Confidence)
	}
	if got := ObservedPeakStageOf(rep, at); got != "backward" {
		t.Errorf("observed peak stage %q, want backward (step 1 peaks when the backward's first allocation lands)", got)
	}

	m := MeasuredOf([]*report.Report{rep})
	if m.PeakAllocatedBytes != 661*mib || m.EndOfStepBytes != 360*mib {
		t.Errorf("measured peak %d MiB, end %d MiB; want 661 and 360", m.PeakAllocatedBytes/mib, m.EndOfStepBytes/mib)
	}
}

func TestAttributeTimeline(t *testing.T) {
	cats := memtimeline.Categories[:]
	// One point per column: the peak is the second point (sum 1000 MiB).
	bytes := map[string][]int64{
		"Parameter": {100, 100}, "Optimizer state": {0, 200}, "Input": {10, 10}, "Temporary": {0, 40},
		"Activation": {300, 500}, "Gradient": {0, 100}, "Autograd detail": {0, 20}, "Unknown": {0, 30},
	}
	tl := &memtimeline.Timeline{Form: "plot", Categories: cats, TimesUS: []int64{1, 2}, Rank: -1}
	for _, c := range cats {
		row := bytes[c]
		tl.Bytes = append(tl.Bytes, []int64{row[0] * mib, row[1] * mib})
	}
	rep, err := analyze.AnalyzeTimeline(context.Background(), &load.Input{Path: "t.json", Format: "memory-timeline", Timeline: tl}, analyze.RuntimeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	at := Attribute(rep)
	want := map[string]int64{Weights: 100 * mib, Optimizer: 200 * mib, Other: 10 * mib, Temporaries: 40 * mib,
		Activations: 520 * mib, Gradients: 100 * mib}
	for _, c := range Components() {
		if got := at.Bytes(c); got != want[c] {
			t.Errorf("%s = %d MiB, want %d", c, got/mib, want[c]/mib)
		}
	}
	if at.UnattributedBytes != 30*mib || at.Source != "timeline" {
		t.Errorf("unattributed %d MiB from %s, want 30 from timeline", at.UnattributedBytes/mib, at.Source)
	}
}

func TestAttributeTracer(t *testing.T) {
	tr := &tracer.File{Rank: 0, Devices: []tracer.Device{{Name: "cuda:0", PeakBytes: 1000 * mib, PeakMB: 1000,
		Tensors: []tracer.Tensor{
			{SizeBytes: 400 * mib, Module: "model.layers.0", Phase: "forward_backward_iter_1"},
			{SizeBytes: 300 * mib, Module: "Unknown", Phase: "setup_model_and_optimizer"},
			{SizeBytes: 200 * mib, Module: "Unknown", Phase: "optimizer_step"},
			{SizeBytes: 50 * mib, Module: "Unknown", Phase: "eval"},
		}}}}
	rep, err := analyze.AnalyzeTracer(context.Background(), &load.Input{Path: "tr.json", Format: "tracer-json", Tracer: tr}, analyze.RuntimeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	at := Attribute(rep)
	want := map[string]int64{Activations: 400 * mib, Weights: 300 * mib, Optimizer: 200 * mib}
	for _, c := range Components() {
		if got := at.Bytes(c); got != want[c] {
			t.Errorf("%s = %d MiB, want %d", c, got/mib, want[c]/mib)
		}
	}
	if at.UnattributedBytes != 50*mib {
		t.Errorf("unattributed %d MiB, want 50 (phase eval has no rule)", at.UnattributedBytes/mib)
	}
	if m := MeasuredOf([]*report.Report{rep}); m.PeakAllocatedBytes != 1000*mib {
		t.Errorf("measured peak %d MiB, want the tracer's 1000", m.PeakAllocatedBytes/mib)
	}
}

func TestErrorArithmetic(t *testing.T) {
	tests := []struct {
		pred, meas int64
		want       float64
	}{
		{110, 100, 10}, {90, 100, -10}, {100, 100, 0}, {300, 200, 50}, {1, 4, -75}, {5, 0, 0},
	}
	for _, tc := range tests {
		if got := ErrorPct(tc.pred, tc.meas); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("ErrorPct(%d, %d) = %g, want %g", tc.pred, tc.meas, got, tc.want)
		}
	}
	r := NewRow("a", MetricPeakAllocated, MetricPeakAllocated, 120, 100, 1)
	if r.ErrorBytes != 20 || r.ErrorPct == nil || *r.ErrorPct != 20 {
		t.Errorf("row error %d B %v %%, want 20 B 20 %%", r.ErrorBytes, r.ErrorPct)
	}
	// |errors| of weights: 10, 30, 20, 40 → median 25, max 40 (run d); activations: 5 → 5.
	rows := []Row{
		NewRow("a", MetricAtPeak, Weights, 110, 100, 1), NewRow("b", MetricAtPeak, Weights, 70, 100, 1),
		NewRow("c", MetricAtPeak, Weights, 120, 100, 1), NewRow("d", MetricAtPeak, Weights, 140, 100, 1),
		NewRow("a", MetricAtPeak, Activations, 95, 100, 1),
	}
	s := Summarize(rows)
	if w := s[Weights]; w.N != 4 || math.Abs(w.MedianAbsPct-25) > 1e-9 || math.Abs(w.MaxAbsPct-40) > 1e-9 || w.MaxID != "d" {
		t.Errorf("weights summary %+v, want n 4 median 25 max 40 (d)", w)
	}
	if a := s[Activations]; a.N != 1 || math.Abs(a.MedianAbsPct-5) > 1e-9 {
		t.Errorf("activations summary %+v, want median 5", a)
	}
	if got := units.Median([]float64{3, 1, 2}); got != 2 {
		t.Errorf("median of 3 values = %g", got)
	}
}

// smallConfig is a small, quick training config.
func smallConfig(t *testing.T, mut func(*static.Config)) static.Config {
	t.Helper()
	c := static.DefaultConfig()
	c.Model = static.ModelConfig{Preset: "llama3.2-1b"}
	c.Training.MicroBatchSize, c.Training.SeqLength = 2, 2048
	c.Hardware.NumGPUs = 1
	if mut != nil {
		mut(&c)
	}
	if err := c.Resolve(); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEvaluateReportsExactAndOff(t *testing.T) {
	cfg := smallConfig(t, nil)
	rep, err := static.Estimate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := rep.Stages[rep.WorstStage]
	// Measured exactly what was predicted: every error is zero.
	res, err := EvaluateReports("exact", cfg, "worst", nil, Measured{PeakAllocatedBytes: st.PeakAllocated,
		PeakReservedBytes: st.PeakReserved, EndOfStepBytes: st.EndOfStepAllocated}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 3 {
		t.Fatalf("%d rows, want 3 totals", len(res.Rows))
	}
	for _, r := range res.Rows {
		if r.ErrorBytes != 0 || r.ErrorPct == nil || *r.ErrorPct != 0 {
			t.Errorf("%s: error %d B %v %%, want 0", r.Component, r.ErrorBytes, r.ErrorPct)
		}
	}
	// Measured 25 % more than predicted: the prediction is 20 % low.
	res, err = EvaluateReports("low", cfg, "worst", nil, Measured{PeakAllocatedBytes: st.PeakAllocated * 5 / 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Rows[0].ErrorPct; got == nil || math.Abs(*got+20) > 1e-6 {
		t.Errorf("error %v %%, want -20 %%", got)
	}
	if _, err := EvaluateReports("none", cfg, "worst", nil, Measured{}, nil); err == nil {
		t.Error("nothing measured: want an error")
	}
	if _, err := EvaluateReports("badstage", cfg, "7", nil, Measured{PeakAllocatedBytes: 1}, nil); err == nil {
		t.Error("stage 7 of a 1-stage run: want an error")
	}
}

func TestEvaluateSnapshotComponents(t *testing.T) {
	rep, err := analyze.Analyze(context.Background(), builtSnapshot(), analyze.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := smallConfig(t, nil)
	res, err := EvaluateReports("snap", cfg, "worst", []*report.Report{rep}, Measured{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, r := range res.Rows {
		if r.Metric != MetricAtPeak {
			continue
		}
		want := res.Prediction.AtPeak[r.Component]
		if r.PredictedBytes != want || r.ErrorBytes != r.PredictedBytes-r.MeasuredBytes {
			t.Errorf("%s: predicted %d (want %d), error %d", r.Component, r.PredictedBytes, want, r.ErrorBytes)
		}
		if r.Component == Optimizer {
			found++
			if r.MeasuredBytes != 200*mib {
				t.Errorf("optimizer measured %d MiB, want 200", r.MeasuredBytes/mib)
			}
		}
	}
	if found != 1 {
		t.Errorf("optimizer row missing")
	}
	if len(res.Misses) == 0 {
		t.Error("no misses explained")
	}
}

// synthetic makes samples whose "measurements" are the estimator's own prediction with known factors, so a fit
// must recover exactly those factors.
func synthetic(t *testing.T, persistent, activation float64) []Sample {
	var out []Sample
	for i, mut := range []func(*static.Config){
		nil,
		func(c *static.Config) { c.Training.MicroBatchSize = 4 },
		func(c *static.Config) { c.Training.SeqLength = 4096 },
		func(c *static.Config) { c.Model = static.ModelConfig{Preset: "llama3.2-3b"} },
	} {
		cfg := smallConfig(t, mut)
		rep, err := static.Estimate(scaled(cfg, persistent, activation))
		if err != nil {
			t.Fatal(err)
		}
		st := rep.Stages[rep.WorstStage]
		out = append(out, Sample{ID: string(rune('a' + i)), Config: cfg, Stage: rep.WorstStage,
			Measured: Measured{PeakAllocatedBytes: st.PeakAllocated, EndOfStepBytes: st.EndOfStepAllocated, PeakReservedBytes: st.PeakAllocated * 11 / 10}})
	}
	return out
}

func TestFitRecoversKnownFactors(t *testing.T) {
	samples := synthetic(t, 1.1, 0.7)
	m, err := Fit(context.Background(), samples)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(m.PersistentScale-1.1) > 1e-3 {
		t.Errorf("persistent scale %g, want 1.1", m.PersistentScale)
	}
	if len(m.Groups) != 1 || math.Abs(m.Groups[0].Scale-0.7) > 2e-3 {
		t.Errorf("groups %+v, want one with scale 0.7", m.Groups)
	}
	if math.Abs(m.ReservedRatio-1.1) > 1e-6 {
		t.Errorf("reserved ratio %g, want 1.1", m.ReservedRatio)
	}
	// Held-out predictions of every run are then exact too (to the solver's tolerance).
	cv, err := LeaveOneOut(context.Background(), samples, m)
	if err != nil {
		t.Fatal(err)
	}
	if cv.HeldOutMaxAbsPct > 0.1 {
		t.Errorf("held-out max error %g %%, want ≈ 0", cv.HeldOutMaxAbsPct)
	}
	if cv.RawMedianAbsPct < 1 {
		t.Errorf("raw median error %g %%: the synthetic factors should make raw predictions visibly wrong", cv.RawMedianAbsPct)
	}
}

func TestApplyNeverChangesRaw(t *testing.T) {
	models := []*Model{
		{Version: ModelVersion, Kind: ModelKind, PersistentScale: 1.5, ActivationScale: 0.5},
		{Version: ModelVersion, Kind: ModelKind, PersistentScale: 0.8, ActivationScale: 3, ReservedRatio: 1.3,
			Groups: []Group{{Attention: "flash", Recompute: "none", Loss: "standard", Scale: 2}}},
	}
	for _, mut := range []func(*static.Config){nil, func(c *static.Config) { c.Training.Attention = "standard" }} {
		cfg := smallConfig(t, mut)
		before := cfg
		want, err := static.Estimate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range models {
			raw, corr, err := m.Apply(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(raw, want) {
				t.Errorf("raw prediction differs from static.Estimate with model %+v", m)
			}
			if !reflect.DeepEqual(cfg, before) {
				t.Errorf("Apply modified its config")
			}
			if corr.Summary.PeakMemoryBytes == raw.Summary.PeakMemoryBytes {
				t.Errorf("corrected peak equals raw with non-trivial factors")
			}
		}
	}
}

func TestModelFileRoundTripAndValidation(t *testing.T) {
	m, err := Fit(context.Background(), synthetic(t, 1, 1))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "corrections.json")
	var file bytes.Buffer
	if err := units.WriteJSON(&file, m); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, file.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	back, err := LoadModel(p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Groups, m.Groups) || back.PersistentScale != m.PersistentScale {
		t.Error("corrections did not round-trip")
	}
	bad := []struct{ name, body, want string }{
		{"version", `{"version": 9, "kind": "memscan-corrections", "persistent_scale": 1, "activation_scale": 1}`, "version 9"},
		{"kind", `{"version": 1, "kind": "x", "persistent_scale": 1, "activation_scale": 1}`, "kind"},
		{"range", `{"version": 1, "kind": "memscan-corrections", "persistent_scale": 1, "activation_scale": 99}`, "activation_scale"},
		{"unknown", `{"version": 1, "kind": "memscan-corrections", "persistent_scale": 1, "activation_scale": 1, "oops": 2}`, "oops"},
		{"syntax", `{"version": 1,`, "corrections"},
	}
	for _, tc := range bad {
		p := filepath.Join(t.TempDir(), tc.name+".json")
		if err := os.WriteFile(p, []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadModel(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}

func TestManifestErrors(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"dup", `{"version":1,"runs":[{"id":"a","config":"c.json"},{"id":"a","config":"c.json"}]}`, `duplicate id "a"`},
		{"noconfig", `{"version":1,"runs":[{"id":"a"}]}`, `run "a": missing config`},
		{"unknown", `{"version":1,"runs":[{"id":"a","config":"c.json","colour":1}]}`, "colour"},
		{"version", `{"version":2,"runs":[{"id":"a","config":"c.json"}]}`, "version 2"},
		{"empty", `{"version":1,"runs":[]}`, "no runs"},
		{"negative", `{"version":1,"runs":[{"id":"a","config":"c.json","measured":{"peak_allocated_bytes":-1}}]}`, "negative"},
		{"yaml", "version: 1\nruns:\n  - id: a\n    confg: c.json\n", "confg"},
	}
	for _, tc := range tests {
		p := filepath.Join(t.TempDir(), tc.name+".json")
		if err := os.WriteFile(p, []byte(tc.body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadManifest(p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
}

func loadMegatron(t *testing.T) *Calibration {
	t.Helper()
	m, err := LoadManifest(filepath.Join(testutil.RepoRoot(t), "testdata", "calibration", "megatron.json"))
	if err != nil {
		t.Fatal(err)
	}
	cal, err := EvaluateAll(context.Background(), m.Name, m.Runs, Options{Jobs: 2, LoadFile: analyzeFile})
	if err != nil {
		t.Fatal(err)
	}
	if len(cal.Failures) > 0 {
		t.Fatalf("failures: %+v", cal.Failures)
	}
	return cal
}

// TestMegatronCorrectionsReduceHeldOutError runs the built-in benchmark on the embedded measured numbers: a
// model fitted without a run must predict it better, in median and in the worst case, than the raw estimator.
func TestMegatronCorrectionsReduceHeldOutError(t *testing.T) {
	cal := loadMegatron(t)
	samples := cal.Samples(false)
	if len(samples) < 10 {
		t.Fatalf("%d samples, want the whole benchmark", len(samples))
	}
	m, err := Fit(context.Background(), samples)
	if err != nil {
		t.Fatal(err)
	}
	cv, err := LeaveOneOut(context.Background(), samples, m)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("peak allocated abs error: raw median %.1f%% max %.1f%%; held-out median %.1f%% max %.1f%%",
		cv.RawMedianAbsPct, cv.RawMaxAbsPct, cv.HeldOutMedianAbsPct, cv.HeldOutMaxAbsPct)
	if cv.HeldOutMedianAbsPct >= cv.RawMedianAbsPct {
		t.Errorf("held-out median %.2f %% not below raw %.2f %%", cv.HeldOutMedianAbsPct, cv.RawMedianAbsPct)
	}
	if cv.HeldOutMaxAbsPct >= cv.RawMaxAbsPct {
		t.Errorf("held-out max %.2f %% not below raw %.2f %%", cv.HeldOutMaxAbsPct, cv.RawMaxAbsPct)
	}
	// The raw column must be the uncorrected estimator's figure for that run.
	for _, r := range cv.Runs {
		for _, run := range cal.Runs {
			if run.ID == r.ID && run.Prediction.PeakAllocated != r.RawBytes {
				t.Errorf("%s: raw %d in cross-validation, %d in the table", r.ID, r.RawBytes, run.Prediction.PeakAllocated)
			}
		}
	}
	if err := cal.ApplyModel(m); err != nil {
		t.Fatal(err)
	}
	if cal.Model != m || cal.Summary[MetricPeakAllocated].CorrectedMedianAbsPct == nil {
		t.Error("ApplyModel did not add corrected figures to the summary")
	}
}

// TestMegatronEmbeddedNumbersMatchShared checks the numbers copied into the manifest against the golden files.
func TestMegatronEmbeddedNumbersMatchShared(t *testing.T) {
	dir := testutil.SharedDir(t, "research_data", "megatron_golden")
	m, err := LoadManifest(filepath.Join(testutil.RepoRoot(t), "testdata", "calibration", "megatron.json"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, r := range m.Runs {
		src := r.Measured.Source
		if !strings.HasPrefix(src, "megatron_golden/") {
			continue
		}
		file := strings.TrimPrefix(src[:strings.Index(src, ":")], "megatron_golden/")
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		var g map[string]struct {
			Values map[string]any `json:"values"`
		}
		if err := json.Unmarshal(b, &g); err != nil {
			t.Fatal(err)
		}
		var peak float64
		lastStep, last := -1, 0.0
		for step, v := range g["mem-max-allocated-bytes"].Values {
			if f, ok := v.(float64); ok {
				peak = math.Max(peak, f)
			}
			_ = step
		}
		for step, v := range g["mem-allocated-bytes"].Values {
			var s int
			if _, err := fmtSscan(step, &s); err != nil {
				continue
			}
			if f, ok := v.(float64); ok && s > lastStep {
				lastStep, last = s, f
			}
		}
		if int64(peak) != r.Measured.PeakAllocatedBytes || int64(last) != r.Measured.EndOfStepBytes {
			t.Errorf("%s: manifest %d / %d, golden file %d / %d", r.ID, r.Measured.PeakAllocatedBytes, r.Measured.EndOfStepBytes, int64(peak), int64(last))
		}
		checked++
	}
	if checked < 8 {
		t.Errorf("checked %d golden runs, want every one", checked)
	}
}

func fmtSscan(s string, v *int) (int, error) { return fmt.Sscan(s, v) }

func TestManifestYAMLWithRuntimeFiles(t *testing.T) {
	root := testutil.RepoRoot(t)
	dir := t.TempDir()
	for from, to := range map[string]string{
		filepath.Join(root, "testdata", "static", "llama3-8b-fsdp8.json"):          "cfg.json",
		filepath.Join(root, "testdata", "example", "rank0_memory_snapshot.pickle"): "snap.pickle",
	} {
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, to), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	yml := "version: 1\nname: local\nruns:\n" +
		"  - id: ok\n    config: cfg.json\n    runtime: [snap.pickle]\n" +
		"  - id: missing\n    config: cfg.json\n    runtime: [nothere.pickle]\n" +
		"  - id: given\n    config: cfg.json\n    measured:\n      peak_allocated_bytes: 1073741824\n      source: a log line\n"
	p := filepath.Join(dir, "m.yaml")
	if err := os.WriteFile(p, []byte(yml), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := LoadManifest(p)
	if err != nil {
		t.Fatal(err)
	}
	cal, err := EvaluateAll(context.Background(), m.Name, m.Runs, Options{Jobs: 2, LoadFile: analyzeFile})
	if err != nil {
		t.Fatal(err)
	}
	if len(cal.Runs) != 2 || len(cal.Failures) != 1 || cal.Failures[0].ID != "missing" || !strings.Contains(cal.Failures[0].Error, "nothere.pickle") {
		t.Fatalf("runs %d, failures %+v; want 2 runs and the missing file named", len(cal.Runs), cal.Failures)
	}
	ok := cal.Runs[0]
	if ok.ID != "ok" || ok.Attribution == nil || ok.Measured.EndOfStepBytes == 0 {
		t.Fatalf("run ok: %+v", ok)
	}
	// The attribution accounts for every byte it saw.
	var sum int64
	for _, c := range ok.Attribution.Components {
		sum += c.Bytes
	}
	if sum+ok.Attribution.UnattributedBytes != ok.Attribution.TotalBytes {
		t.Errorf("components %d + unattributed %d != total %d", sum, ok.Attribution.UnattributedBytes, ok.Attribution.TotalBytes)
	}
	given := cal.Runs[1]
	if len(given.Rows) != 1 || given.Rows[0].MeasuredBytes != 1<<30 || given.Measured.Source != "a log line" {
		t.Errorf("run given: rows %+v", given.Rows)
	}
}

// A relative error to a component measured at 0, or at a sliver of the run's total, is undefined: it is null in
// JSON, left out of the median and maximum, and the error is still reported as a share of the run's total.
func TestUndefinedRelativeError(t *testing.T) {
	const mib = 1 << 20
	total := int64(10 << 30)
	at := &Attribution{Components: []ComponentBytes{
		{Component: Weights, Bytes: 2 << 30, Confidence: 1},
		{Component: Gradients, Bytes: 10 << 10, Confidence: 1}, // 10 KiB: far below 1 % of 10 GiB
		{Component: Other, Bytes: 0, Confidence: 1},
	}}
	p := Prediction{AtPeak: map[string]int64{Weights: 2<<30 + 200*mib, Gradients: 20 * mib, Other: 20 * mib}}
	rows := compareRows("r", p, Measured{PeakAllocatedBytes: total}, at)
	byComp := map[string]Row{}
	for _, r := range rows {
		byComp[r.Component] = r
	}
	tests := []struct {
		component  string
		wantPct    *float64
		wantOfTotl float64 // error bytes / 10 GiB × 100
	}{
		{Weights, ptr(200.0 / 2048 * 100), 200.0 / 10240 * 100},
		{Gradients, nil, float64(20*mib-10<<10) / float64(total) * 100},
		{Other, nil, 20.0 / 10240 * 100},
	}
	for _, tc := range tests {
		r, ok := byComp[tc.component]
		if !ok {
			t.Fatalf("no row for %s in %+v", tc.component, rows)
		}
		switch {
		case tc.wantPct == nil && r.ErrorPct != nil:
			t.Errorf("%s: relative error %g %%, want undefined", tc.component, *r.ErrorPct)
		case tc.wantPct != nil && (r.ErrorPct == nil || math.Abs(*r.ErrorPct-*tc.wantPct) > 1e-9):
			t.Errorf("%s: relative error %v, want %g %%", tc.component, r.ErrorPct, *tc.wantPct)
		}
		if math.Abs(r.ErrorOfTotalPct-tc.wantOfTotl) > 1e-9 {
			t.Errorf("%s: error of total %g %%, want %g %%", tc.component, r.ErrorOfTotalPct, tc.wantOfTotl)
		}
	}
	// A second run where "other" was measured (200 MiB, 2 % of its run; predicted 300 MiB: +50 %): only it enters
	// the summary.
	rows = append(rows, NewRow("s", MetricAtPeak, Other, 300*mib, 200*mib, 1).WithTotal(total))
	s := Summarize(rows)
	if o := s[Other]; o.N != 1 || o.Undefined != 1 || o.MedianAbsPct != 50 || o.MaxAbsPct != 50 || o.MaxID != "s" {
		t.Errorf("other summary %+v, want n 1 (1 undefined), median and max 50 %% from s", o)
	}
	if g := s[Gradients]; g.N != 0 || g.Undefined != 1 || g.MaxAbsPct != 0 || g.MaxAbsOfTotalPct == 0 {
		t.Errorf("gradients summary %+v, want no relative statistics but an error of total", g)
	}
	b, err := json.Marshal(byComp[Other])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"error_pct":null`) {
		t.Errorf("JSON of an undefined relative error: %s, want error_pct null", b)
	}
}

func ptr[T any](v T) *T { return &v }

// TestApplyRespectsExactTermsAndReplay: weights are exact (never scaled); where the raw reserved figure is the
// allocator replay, the corrected one keeps the replay's fragmentation instead of a fitted ratio; a framework
// outside the fit is not corrected at all, and says so.
func TestApplyRespectsExactTermsAndReplay(t *testing.T) {
	cfg := smallConfig(t, func(c *static.Config) {
		if err := c.ApplyFramework("hf"); err != nil {
			t.Fatal(err)
		}
	})
	m := &Model{Version: ModelVersion, Kind: ModelKind, Frameworks: []string{"hf"}, PersistentScale: 1.1, ActivationScale: 1.05,
		ReservedRatio: 1.3}
	raw, corr, err := m.Apply(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r, c := raw.Stages[raw.WorstStage], corr.Stages[corr.WorstStage]
	if r.ReservedSource != static.ReservedByReplay {
		t.Fatalf("raw reserved from %q; the test needs a replayed config", r.ReservedSource)
	}
	if c.Weights != r.Weights {
		t.Errorf("weights %d corrected to %d: exact byte counts must not be scaled", r.Weights, c.Weights)
	}
	if want := float64(r.Optimizer) * 1.1; math.Abs(float64(c.Optimizer)-want) > 1 {
		t.Errorf("optimizer %d, want %d × 1.1 = %.0f", c.Optimizer, r.Optimizer, want)
	}
	if c.PeakAllocated <= r.PeakAllocated {
		t.Fatalf("corrected allocated %d not above raw %d with scales > 1", c.PeakAllocated, r.PeakAllocated)
	}
	// Replay fragmentation carried over: corrected reserved = corrected allocated + (raw reserved − raw allocated),
	// far below the 1.3 × allocated the fitted ratio would give.
	if want := c.PeakAllocated + r.PeakReserved - r.PeakAllocated; c.PeakReserved != want || corr.Summary.PeakReservedBytes != want {
		t.Errorf("corrected reserved %d (summary %d), want %d", c.PeakReserved, corr.Summary.PeakReservedBytes, want)
	}
	if c.ReservedSource != static.ReservedByReplay || c.DeviceTotal-c.PeakReserved != r.DeviceTotal-r.PeakReserved {
		t.Errorf("corrected reserved source %q, device total − reserved %d want %d", c.ReservedSource, c.DeviceTotal-c.PeakReserved, r.DeviceTotal-r.PeakReserved)
	}

	// Fitted on Megatron-style runs only: the hf config is left raw, with a warning in the applied table.
	m.Frameworks = []string{"megatron", "none"}
	a, err := m.Compare(cfg, "corrections.json")
	if err != nil {
		t.Fatal(err)
	}
	if a.Applied || !reflect.DeepEqual(a.Corrected, a.Raw) || len(a.Warnings) != 1 ||
		!strings.Contains(a.Warnings[0], "NOT CORRECTED") || !strings.Contains(a.Warnings[0], "megatron, none") {
		t.Errorf("applied %v, warnings %q; corrected equals raw: %v", a.Applied, a.Warnings, reflect.DeepEqual(a.Corrected, a.Raw))
	}
	// An unseen activation group is corrected, with a warning naming the back-off.
	m.Frameworks = []string{"hf"}
	if ok, w := m.Coverage(cfg); !ok || len(w) != 1 || !strings.Contains(w[0], "median of all runs") {
		t.Errorf("coverage %v %q, want corrected with one back-off warning", ok, w)
	}
}

func TestFitRecordsFrameworks(t *testing.T) {
	samples := synthetic(t, 1, 1)
	samples[1].Config.Framework = "hf"
	m, err := Fit(context.Background(), samples)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"hf", "none"}; !reflect.DeepEqual(m.Frameworks, want) {
		t.Errorf("frameworks %q, want %q", m.Frameworks, want)
	}
}

// analyzeFile reads a runtime file of a manifest the way memscan calibrate does (package pipeline).
func analyzeFile(path string) (*report.Report, error) {
	return analyze.AnalyzeFile(context.Background(), path, analyze.Options{})
}
