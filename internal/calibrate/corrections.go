package calibrate

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/memscan/memscan/internal/configfile"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/static"
)

// ModelVersion is the version of the corrections file; bumped when a field changes meaning or is removed.
const ModelVersion = 1

// ModelKind identifies a corrections file.
const ModelKind = "memscan-corrections"

// Model is a small correction model fitted on measured runs. It has three explainable parts:
//   - PersistentScale multiplies gradients and optimizer states (their buffers, padding and sharding differ by
//     framework), fitted so the predicted end-of-step allocation matches the measured one (median over runs).
//     Weights are never scaled: they are exact byte counts (parameters × dtype);
//   - an activation scale per (attention kind, recompute mode) multiplies activations and temporaries, fitted so
//     the predicted peak allocated matches (median over the group's runs; ActivationScale for unseen groups);
//   - ReservedRatio, when runs measured reserved memory, predicts peak reserved as ratio × peak allocated where
//     the raw prediction's reserved figure is the flat allowance; where it comes from the allocator replay, the
//     replay's fragmentation is carried onto the corrected allocation instead (the replay is far closer than a
//     ratio fitted on other runs).
//
// A model describes the frameworks it was fitted on only: its factors absorb one training stack's buffers and
// kernels, so Apply refuses to correct a config of another framework (corrected = raw, with a warning).
type Model struct {
	Version  int      `json:"version"`
	Kind     string   `json:"kind"`
	FittedOn []string `json:"fitted_on"`
	// Frameworks are the frameworks of the fitted runs, sorted ("none" for a config without framework
	// defaults); empty in files written before it was recorded.
	Frameworks []string `json:"frameworks,omitempty"`

	PersistentScale float64 `json:"persistent_scale"`
	PersistentRuns  int     `json:"persistent_runs"` // runs with a measured end-of-step figure
	ActivationScale float64 `json:"activation_scale"`
	Groups          []Group `json:"groups"`
	ReservedRatio   float64 `json:"reserved_ratio,omitempty"` // 0 = not fitted
	ReservedRuns    int     `json:"reserved_runs"`

	// HeldOut is the leave-one-out error of peak allocated when the model was saved after cross-validation.
	HeldOut *HeldOutError `json:"held_out_error,omitempty"`

	// PerRun are the fitted per-run scales the medians come from, so a reader can see the spread.
	PerRun []RunScale `json:"per_run"`
	Notes  []string   `json:"notes,omitempty"`
}

// Group is the activation scale of one (attention, recompute, loss) group.
type Group struct {
	Attention string   `json:"attention"`
	Recompute string   `json:"recompute"`
	Loss      string   `json:"loss"`
	Scale     float64  `json:"activation_scale"`
	Runs      []string `json:"runs"`
}

// RunScale is what one run alone would have asked for.
type RunScale struct {
	ID              string  `json:"id"`
	Group           string  `json:"group"`
	Attention       string  `json:"attention"`
	Recompute       string  `json:"recompute"`
	Loss            string  `json:"loss"`
	PersistentScale float64 `json:"persistent_scale,omitempty"`
	ActivationScale float64 `json:"activation_scale"`
	Clamped         bool    `json:"clamped,omitempty"` // the measured peak lies outside what the scale range reaches
}

// Sample is one run the model learns from: its config, the stage that was measured, and the figures.
type Sample struct {
	ID       string
	Config   static.Config
	Stage    int
	Measured Measured
}

// Samples returns the fitting samples of a calibration's runs: those with a measured peak allocated, except runs
// that ran out of memory (their peak is where the step failed, not the step's peak the corrections scale) and,
// unless leaking says to keep them, runs whose measurement leaks (their peak grows with the run's length).
func (c *Calibration) Samples(leaking bool) []Sample {
	var out []Sample
	for _, r := range c.Runs {
		if r.Measured.PeakAllocatedBytes > 0 && !r.Measured.OOM && (leaking || r.Measured.Leak == "") {
			out = append(out, Sample{ID: r.ID, Config: r.cfg, Stage: r.Prediction.Stage, Measured: r.Measured})
		}
	}
	return out
}

// groupKey is what an activation scale is specific to: the attention kernel that runs (flash keeps no s² scores;
// "sdpa" is resolved to PyTorch's choice), the recompute mode (what is saved per layer) and the loss kind (how
// large the logits temporaries are).
func groupKey(c static.Config) (attention, recompute, loss string) {
	attention = c.AttentionKernel()
	if attention == "" {
		attention = c.Training.Attention
	}
	return attention, c.Training.Recompute, c.Training.Loss
}

// GroupName names a correction group by the choices that change activation memory.
func GroupName(a, r, l string) string { return "attention=" + a + " recompute=" + r + " loss=" + l }

// Scale bounds for the fitted factors: outside them the analytic model is wrong in kind, not degree.
const (
	minScale float64 = 0.05
	maxScale float64 = 20
)

// solveScale finds s in [minScale, maxScale] with f(s) = target for a non-decreasing f. The estimator is
// piecewise linear in a scale factor, so the Illinois variant of regula falsi needs only a few evaluations
// (each is a full static estimate). clamped reports that the target is outside [f(min), f(max)].
func solveScale(f func(s float64) (int64, error), target int64) (s float64, clamped bool, err error) {
	t := float64(target)
	eval := func(x float64) (float64, error) {
		v, err := f(x)
		return float64(v) - t, err
	}
	a, b := minScale, maxScale
	fa, err := eval(a)
	if err != nil {
		return 0, false, err
	}
	if fa >= 0 {
		return a, fa > 0, nil
	}
	fb, err := eval(b)
	if err != nil {
		return 0, false, err
	}
	if fb <= 0 {
		return b, fb < 0, nil
	}
	side := 0
	c := a
	for range 100 {
		c = (a*fb - b*fa) / (fb - fa)
		fc, err := eval(c)
		if err != nil {
			return 0, false, err
		}
		// Within 10 ppm of the target, or the bracket is below 0.01 % of the scale: done.
		if math.Abs(fc) <= 1e-5*t || b-a <= 1e-4*a {
			return c, false, nil
		}
		if fc > 0 {
			b, fb = c, fc
			if side == -1 {
				fa /= 2
			}
			side = -1
		} else {
			a, fa = c, fc
			if side == 1 {
				fb /= 2
			}
			side = 1
		}
	}
	return c, false, nil
}

// solver caches per-run solutions: the persistent scale of a run does not depend on the other runs, and its
// activation scale depends only on the persistent scale in use, which takes few distinct values across
// cross-validation folds.
type solver struct {
	mu   sync.Mutex
	pers map[string]persSolution
	act  map[actKey]actSolution
}

type persSolution struct {
	scale float64
	ok    bool // the run measured an end-of-step figure
}

type actKey struct {
	id         string
	persistent float64
}

type actSolution struct {
	scale   float64
	clamped bool
}

func newSolver() *solver {
	return &solver{pers: map[string]persSolution{}, act: map[actKey]actSolution{}}
}

func (sv *solver) persistent(s Sample) (persSolution, error) {
	sv.mu.Lock()
	r, ok := sv.pers[s.ID]
	sv.mu.Unlock()
	if ok {
		return r, nil
	}
	if s.Measured.EndOfStepBytes > 0 {
		v, _, err := solveScale(func(x float64) (int64, error) {
			st, err := stagePeak(scaled(s.Config, x, 1), s.Stage)
			return st.EndOfStepAllocated, err
		}, s.Measured.EndOfStepBytes)
		if err != nil {
			return r, fmt.Errorf("fit corrections: %s: %w", s.ID, err)
		}
		r = persSolution{scale: v, ok: true}
	}
	sv.mu.Lock()
	sv.pers[s.ID] = r
	sv.mu.Unlock()
	return r, nil
}

func (sv *solver) activation(s Sample, persistent float64) (actSolution, error) {
	k := actKey{s.ID, persistent}
	sv.mu.Lock()
	r, ok := sv.act[k]
	sv.mu.Unlock()
	if ok {
		return r, nil
	}
	v, clamped, err := solveScale(func(x float64) (int64, error) {
		st, err := stagePeak(scaled(s.Config, persistent, x), s.Stage)
		return st.PeakAllocated, err
	}, s.Measured.PeakAllocatedBytes)
	if err != nil {
		return r, fmt.Errorf("fit corrections: %s: %w", s.ID, err)
	}
	r = actSolution{v, clamped}
	sv.mu.Lock()
	sv.act[k] = r
	sv.mu.Unlock()
	return r, nil
}

// scaled returns cfg with the model's factors multiplied into its corrections. Weights are left alone: they are
// parameters × dtype bytes, exact by construction.
func scaled(cfg static.Config, persistent, activation float64) static.Config {
	c := cfg
	c.Corrections.Grads *= persistent
	c.Corrections.Optimizer *= persistent
	c.Corrections.Activations *= activation
	c.Corrections.Temporaries *= activation
	return c
}

func stagePeak(cfg static.Config, stage int) (static.Stage, error) {
	rep, err := static.Estimate(cfg)
	if err != nil {
		return static.Stage{}, err
	}
	if stage >= len(rep.Stages) {
		return static.Stage{}, fmt.Errorf("stage %d of %d", stage, len(rep.Stages))
	}
	return rep.Stages[stage], nil
}

// Fit learns a model from samples (ids must be unique). It needs at least one sample with a measured peak
// allocated.
func Fit(ctx context.Context, samples []Sample) (*Model, error) {
	return fit(ctx, samples, newSolver())
}

func fit(ctx context.Context, samples []Sample, sv *solver) (*Model, error) {
	if len(samples) == 0 {
		return nil, fmt.Errorf("fit corrections: no run with a measured peak allocated")
	}
	m := &Model{Version: ModelVersion, Kind: ModelKind, PersistentScale: 1, ActivationScale: 1, Groups: []Group{}}
	per := make([]RunScale, len(samples))
	seen := map[string]bool{}

	// 1. Persistent scale from the end-of-step steady state, which holds no activations.
	var ps []float64
	for i, s := range samples {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if seen[s.ID] {
			return nil, fmt.Errorf("fit corrections: duplicate run id %q", s.ID)
		}
		seen[s.ID] = true
		att, rec, loss := groupKey(s.Config)
		per[i] = RunScale{ID: s.ID, Group: GroupName(att, rec, loss), Attention: att, Recompute: rec, Loss: loss}
		m.FittedOn = append(m.FittedOn, s.ID)
		if fw := frameworkOf(s.Config); !slices.Contains(m.Frameworks, fw) {
			m.Frameworks = append(m.Frameworks, fw)
		}
		r, err := sv.persistent(s)
		if err != nil {
			return nil, err
		}
		if r.ok {
			per[i].PersistentScale = r.scale
			ps = append(ps, r.scale)
		}
	}
	slices.Sort(m.Frameworks)
	if len(ps) > 0 {
		m.PersistentScale = units.Median(ps)
		m.PersistentRuns = len(ps)
	} else {
		m.Notes = append(m.Notes, "no run measured the end-of-step allocation: persistent scale left at 1")
	}

	// 2. Activation scale per run with the persistent scale fixed, then medians per group.
	all := make([]float64, len(samples))
	var g errgroup.Group
	g.SetLimit(4)
	for i, s := range samples {
		g.Go(func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			r, err := sv.activation(s, m.PersistentScale)
			if err != nil {
				return err
			}
			per[i].ActivationScale, per[i].Clamped = r.scale, r.clamped
			all[i] = r.scale
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	m.ActivationScale = units.Median(all)
	groups := map[string]*Group{}
	var order []string
	vals := map[string][]float64{}
	for i, s := range samples {
		a, r, l := groupKey(s.Config)
		k := GroupName(a, r, l)
		if groups[k] == nil {
			groups[k] = &Group{Attention: a, Recompute: r, Loss: l}
			order = append(order, k)
		}
		groups[k].Runs = append(groups[k].Runs, s.ID)
		vals[k] = append(vals[k], all[i])
	}
	slices.Sort(order)
	for _, k := range order {
		gr := groups[k]
		gr.Scale = units.Median(vals[k])
		m.Groups = append(m.Groups, *gr)
	}
	m.PerRun = per

	// 3. Reserved over allocated, where both were measured.
	var rr []float64
	for _, s := range samples {
		if s.Measured.PeakReservedBytes > 0 && s.Measured.PeakAllocatedBytes > 0 {
			rr = append(rr, float64(s.Measured.PeakReservedBytes)/float64(s.Measured.PeakAllocatedBytes))
		}
	}
	if len(rr) > 0 {
		m.ReservedRatio = math.Max(1, units.Median(rr))
		m.ReservedRuns = len(rr)
	} else {
		m.Notes = append(m.Notes, "no run measured peak reserved: reserved predictions are not corrected")
	}
	return m, nil
}

// frameworkOf names the framework whose defaults a config uses, as the model records it.
func frameworkOf(c static.Config) string {
	if c.Framework == "" {
		return "none"
	}
	return c.Framework
}

// Coverage says whether the model may correct cfg and what a user must be told: a framework outside the fit is
// refused (its buffers, kernels and loss differ, so the fitted factors describe another program); an
// activation group outside the fit is corrected with a backed-off scale, with a warning.
func (m *Model) Coverage(cfg static.Config) (apply bool, warnings []string) {
	fw := frameworkOf(cfg)
	switch {
	case len(m.Frameworks) == 0:
		warnings = append(warnings, "the corrections file does not record the frameworks it was fitted on (written by an older memscan); "+
			"framework "+fw+" may not be in the fit: refit it with memscan calibrate")
	case !slices.Contains(m.Frameworks, fw):
		return false, []string{fmt.Sprintf("NOT CORRECTED: the corrections were fitted on framework %s runs only (none = configs without a "+
			"framework key); this config is framework %s, whose buffers, kernels and loss the fitted factors do not describe "+
			"(corrected = raw; fit on %s runs to correct it)", strings.Join(m.Frameworks, ", "), fw, fw)}
	}
	if _, from, seen := m.activationScaleFor(cfg); !seen {
		warnings = append(warnings, "activation group not in the fit: activations and temporaries use the "+from)
	}
	return true, warnings
}

// activationScaleFor returns the group's scale, or a backed-off median for a group the model has not seen
// (seen false).
func (m *Model) activationScaleFor(c static.Config) (scale float64, from string, seen bool) {
	a, r, l := groupKey(c)
	for _, g := range m.Groups {
		if g.Attention == a && g.Recompute == r && g.Loss == l {
			return g.Scale, GroupName(a, r, l), true
		}
	}
	// Unseen group: back off to the runs that share the loss kind and attention, then the loss kind alone (the
	// logits temporaries it sizes dominate small models), then all runs.
	for _, b := range []struct {
		name string
		keep func(RunScale) bool
	}{
		{"runs with loss=" + l + " attention=" + a, func(p RunScale) bool { return p.Loss == l && p.Attention == a }},
		{"runs with loss=" + l, func(p RunScale) bool { return p.Loss == l }},
	} {
		var v []float64
		for _, p := range m.PerRun {
			if b.keep(p) {
				v = append(v, p.ActivationScale)
			}
		}
		if len(v) > 0 {
			return units.Median(v), fmt.Sprintf("median of %d %s (group %s not seen)", len(v), b.name, GroupName(a, r, l)), false
		}
	}
	return m.ActivationScale, "median of all runs (group " + GroupName(a, r, l) + " not seen)", false
}

// Apply estimates cfg twice: raw exactly as static.Estimate(cfg) gives it, and corrected with the model's
// factors. cfg itself is not modified, so the raw prediction can never change.
func (m *Model) Apply(cfg static.Config) (raw, corrected *static.Report, err error) {
	if err := m.Validate(); err != nil {
		return nil, nil, err
	}
	raw, err = static.Estimate(cfg)
	if err != nil {
		return nil, nil, err
	}
	if corrected, err = m.estimate(cfg, raw); err != nil {
		return nil, nil, err
	}
	return raw, corrected, nil
}

// correctedEstimate is Apply without the raw estimate, for callers that already have it.
func (m *Model) correctedEstimate(cfg static.Config) (*static.Report, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m.estimate(cfg, nil)
}

// estimate estimates cfg with the model's factors; raw is static.Estimate(cfg) (nil: computed here). A config
// the model does not cover (Coverage) gets raw back unchanged.
func (m *Model) estimate(cfg static.Config, raw *static.Report) (*static.Report, error) {
	if raw == nil {
		var err error
		if raw, err = static.Estimate(cfg); err != nil {
			return nil, err
		}
	}
	if ok, _ := m.Coverage(cfg); !ok {
		return raw, nil
	}
	as, _, _ := m.activationScaleFor(cfg)
	corrected, err := static.Estimate(scaled(cfg, m.PersistentScale, as))
	if err != nil {
		return nil, err
	}
	for i := range corrected.Stages {
		st, r := &corrected.Stages[i], raw.Stages[i]
		switch {
		case r.ReservedSource == static.ReservedByReplay:
			// The replay's reserved − allocated is fragmentation of this very allocation sequence; scaling the
			// tensors by a percent or two leaves it, so it moves with the corrected allocation.
			reserved := st.PeakAllocated + (r.PeakReserved - r.PeakAllocated)
			st.DeviceTotal += reserved - st.PeakReserved
			st.PeakReserved, st.ReservedSource = reserved, r.ReservedSource
		case m.ReservedRatio > 0:
			st.PeakReserved = max(st.PeakReserved, int64(float64(st.PeakAllocated)*m.ReservedRatio))
		}
	}
	corrected.Summary.PeakReservedBytes = corrected.Stages[corrected.WorstStage].PeakReserved
	corrected.Summary.ReservedSource = corrected.Stages[corrected.WorstStage].ReservedSource
	return corrected, nil
}

// Explain says which factors Apply uses for cfg.
func (m *Model) Explain(cfg static.Config) string {
	if ok, _ := m.Coverage(cfg); !ok {
		return "no correction applied (framework " + frameworkOf(cfg) + " not in the fit)"
	}
	as, from, _ := m.activationScaleFor(cfg)
	s := fmt.Sprintf("weights exact (not scaled); gradients, optimizer states × %.4f (end-of-step fit on %s); activations, temporaries × %.4f (%s)",
		m.PersistentScale, units.Plural(m.PersistentRuns, "run", "runs"), as, from)
	if m.ReservedRatio > 0 {
		s += fmt.Sprintf("; peak reserved ≥ %.4f × peak allocated (%s) where reserved is the flat allowance; the replay's fragmentation is kept where it is the allocator replay",
			m.ReservedRatio, units.Plural(m.ReservedRuns, "run", "runs"))
	}
	return s
}

// Validate checks a model read from a file.
func (m *Model) Validate() error {
	switch {
	case m.Kind != ModelKind:
		return fmt.Errorf("corrections: kind %q, want %q", m.Kind, ModelKind)
	case m.Version != ModelVersion:
		return fmt.Errorf("corrections: version %d, this memscan reads version %d", m.Version, ModelVersion)
	}
	check := func(name string, v float64) error {
		if math.IsNaN(v) || v < minScale || v > maxScale {
			return fmt.Errorf("corrections: %s = %g is outside [%g, %g]", name, v, minScale, maxScale)
		}
		return nil
	}
	if err := check("persistent_scale", m.PersistentScale); err != nil {
		return err
	}
	if err := check("activation_scale", m.ActivationScale); err != nil {
		return err
	}
	for i, g := range m.Groups {
		if err := check(fmt.Sprintf("groups[%d].activation_scale", i), g.Scale); err != nil {
			return err
		}
	}
	if m.ReservedRatio != 0 && (m.ReservedRatio < 1 || m.ReservedRatio > maxScale) {
		return fmt.Errorf("corrections: reserved_ratio = %g must be 0 (not fitted) or in [1, %g]", m.ReservedRatio, maxScale)
	}
	return nil
}

// LoadModel reads and validates a corrections file, strictly (unknown keys are errors).
func LoadModel(path string) (*Model, error) {
	doc, err := configfile.ReadFile(path, "a corrections file", fileLimits)
	if err != nil {
		return nil, fmt.Errorf("corrections: %w", err)
	}
	var m Model
	if err := doc.Decode(&m); err != nil {
		return nil, fmt.Errorf("corrections: %w", err)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &m, nil
}

// CVRow is one run of the leave-one-out cross-validation on peak allocated.
type CVRow struct {
	ID             string  `json:"id"`
	MeasuredBytes  int64   `json:"measured_bytes"`
	RawBytes       int64   `json:"raw_bytes"`
	RawErrorPct    float64 `json:"raw_error_pct"`
	InSampleBytes  int64   `json:"in_sample_bytes"` // corrected by a model fitted on all runs
	InSampleErrPct float64 `json:"in_sample_error_pct"`
	HeldOutBytes   int64   `json:"held_out_bytes"` // corrected by a model fitted without this run
	HeldOutErrPct  float64 `json:"held_out_error_pct"`
}

// CrossValidation reports raw, in-sample and leave-one-out held-out errors of peak allocated.
type CrossValidation struct {
	Metric               string  `json:"metric"`
	Runs                 []CVRow `json:"runs"`
	RawMedianAbsPct      float64 `json:"raw_median_abs_error_pct"`
	RawMaxAbsPct         float64 `json:"raw_max_abs_error_pct"`
	InSampleMedianAbsPct float64 `json:"in_sample_median_abs_error_pct"`
	InSampleMaxAbsPct    float64 `json:"in_sample_max_abs_error_pct"`
	HeldOutMedianAbsPct  float64 `json:"held_out_median_abs_error_pct"`
	HeldOutMaxAbsPct     float64 `json:"held_out_max_abs_error_pct"`
}

// LeaveOneOut fits on all samples but one, predicts the one left out, for each sample in turn. full is the model
// fitted on every sample (for the in-sample column).
func LeaveOneOut(ctx context.Context, samples []Sample, full *Model) (*CrossValidation, error) {
	if len(samples) < 2 {
		return nil, fmt.Errorf("cross-validation needs at least 2 runs, have %d", len(samples))
	}
	cv := &CrossValidation{Metric: MetricPeakAllocated, Runs: make([]CVRow, len(samples))}
	sv := newSolver()
	for i, s := range samples {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rest := slices.Concat(samples[:i], samples[i+1:])
		fold, err := fit(ctx, rest, sv)
		if err != nil {
			return nil, fmt.Errorf("fold %s: %w", s.ID, err)
		}
		raw, held, err := fold.Apply(s.Config)
		if err != nil {
			return nil, fmt.Errorf("fold %s: %w", s.ID, err)
		}
		in, err := full.correctedEstimate(s.Config)
		if err != nil {
			return nil, fmt.Errorf("fold %s: %w", s.ID, err)
		}
		meas := s.Measured.PeakAllocatedBytes
		r := CVRow{ID: s.ID, MeasuredBytes: meas, RawBytes: raw.Stages[s.Stage].PeakAllocated,
			InSampleBytes: in.Stages[s.Stage].PeakAllocated, HeldOutBytes: held.Stages[s.Stage].PeakAllocated}
		r.RawErrorPct = ErrorPct(r.RawBytes, meas)
		r.InSampleErrPct = ErrorPct(r.InSampleBytes, meas)
		r.HeldOutErrPct = ErrorPct(r.HeldOutBytes, meas)
		cv.Runs[i] = r
	}
	col := func(f func(CVRow) float64) (float64, float64) {
		var v []float64
		for _, r := range cv.Runs {
			v = append(v, math.Abs(f(r)))
		}
		return units.Median(v), slices.Max(v)
	}
	cv.RawMedianAbsPct, cv.RawMaxAbsPct = col(func(r CVRow) float64 { return r.RawErrorPct })
	cv.InSampleMedianAbsPct, cv.InSampleMaxAbsPct = col(func(r CVRow) float64 { return r.InSampleErrPct })
	cv.HeldOutMedianAbsPct, cv.HeldOutMaxAbsPct = col(func(r CVRow) float64 { return r.HeldOutErrPct })
	return cv, nil
}
