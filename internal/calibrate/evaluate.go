package calibrate

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/memscan/memscan/gpu"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/static"
)

// Version of calibration.json; bumped when a field changes meaning or is removed.
const Version = 1

// RunSpec is one run to evaluate: a static config and what was measured when it ran.
type RunSpec struct {
	ID     string `json:"id" yaml:"id"`
	Config string `json:"config" yaml:"config"` // static config file
	// Runtime files (snapshots, tracer JSON, profiler timelines, training logs) of this run.
	Runtime []string `json:"runtime,omitempty" yaml:"runtime"`
	// Stage selects the pipeline stage the measurement is from (worst | first | last | index).
	Stage string `json:"stage,omitempty" yaml:"stage"`
	// GPU overrides the config's accelerator (the same config measured on several GPU kinds).
	GPU string `json:"gpu,omitempty" yaml:"gpu"`
	// Measured figures given directly (e.g. golden values); they take precedence over the runtime files.
	Measured Measured          `json:"measured" yaml:"measured"`
	Tags     map[string]string `json:"tags,omitempty" yaml:"tags"`

	// config, when set, is used instead of loading Config (tests, library callers).
	config *static.Config
}

// WithConfig returns s with an in-memory config instead of a file.
func (s RunSpec) WithConfig(c static.Config) RunSpec {
	s.config = &c
	return s
}

// RunResult is the evaluation of one run.
type RunResult struct {
	ID          string            `json:"id"`
	Config      string            `json:"config"`
	Runtime     []string          `json:"runtime,omitempty"`
	Tags        map[string]string `json:"tags,omitempty"`
	Prediction  Prediction        `json:"prediction"`
	Measured    Measured          `json:"measured"`
	Attribution *Attribution      `json:"attribution,omitempty"`
	// PeakStagePredicted is the estimator's peak stage; PeakStageObserved is the trace's phase at the measured
	// peak (ObservedPeakStageOf; "" when the runtime input has no breakdown).
	PeakStagePredicted string `json:"peak_stage_predicted"`
	PeakStageObserved  string `json:"peak_stage_observed,omitempty"`
	Rows               []Row  `json:"rows"`
	Misses             []Miss `json:"misses,omitempty"`
	// Corrected is the prediction after the correction model, when one was applied.
	Corrected *Prediction `json:"corrected,omitempty"`
	Notes     []string    `json:"notes,omitempty"`

	cfg    static.Config
	report *static.Report
	oomed  bool // the run ran out of memory (Measured.OOM)
}

// Options control an evaluation.
type Options struct {
	Jobs  int    // bounded worker pool size; 0 = 4
	Model *Model // optional correction model applied to every run
	// LoadFile decodes and analyzes one runtime file; runs that name files need it.
	LoadFile func(path string) (*report.Report, error)
}

// EvaluateReports compares a static config with already analyzed runtime reports (the join behind
// `memscan analyze --static`).
func EvaluateReports(id string, cfg static.Config, stage string, reports []*report.Report, given Measured, model *Model) (*RunResult, error) {
	rep, err := static.Estimate(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: static estimate: %w", id, err)
	}
	st, err := SelectStage(rep, stage)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", id, err)
	}
	m, mr := given, MeasuredOf(reports)
	if cfg.Mode == "inference" {
		// What a snapshot holds after generate returned is the weights, not the estimator's between-steps figure
		// (weights and the cache while decoding).
		mr.EndOfStepBytes = 0
	}
	m.merge(mr)
	oomed := m.OOM
	res := &RunResult{ID: id, Prediction: predictionFor(rep, st, oomed), cfg: cfg, report: rep, oomed: oomed}
	res.PeakStagePredicted = res.Prediction.PeakStage
	if oomed {
		// The step never ended: what was allocated when the snapshot was dumped is what the exception left.
		m.EndOfStepBytes = 0
		if rep.OOM != nil {
			res.Notes = append(res.Notes, fmt.Sprintf("the run ran out of memory; compared with the predicted failure point (step %d %s, layer %d, %s)",
				rep.OOM.Step, rep.OOM.Phase, rep.OOM.Layer, rep.OOM.Operator))
		} else {
			res.Notes = append(res.Notes, "the run ran out of memory but the estimate fits the GPU: the measured peak is only a lower bound")
		}
	}
	if m.Leak != "" {
		res.Notes = append(res.Notes, "analyze finds a leak in the measurement: "+m.Leak+
			"; the measured figures hold what leaked, so their errors are not the estimator's, and the run is kept out of fitted corrections unless asked (--fit-leaking)")
	}
	res.Measured = m
	var from *report.Report
	for _, r := range reports { // the first report with a breakdown
		if res.Attribution = Attribute(r); res.Attribution != nil {
			from = r
			break
		}
	}
	if res.Attribution != nil {
		res.PeakStageObserved = ObservedPeakStageOf(from, res.Attribution)
		if n := firstStepNote(from, res.PeakStageObserved); n != "" {
			res.Notes = append(res.Notes, n)
		}
		if res.Attribution.Source == "snapshot" {
			res.Notes = append(res.Notes, "the snapshot has no allocation trace: components are compared with the blocks allocated at capture time, not at the peak")
		}
		if res.Attribution.UnattributedBytes > 0 {
			res.Notes = append(res.Notes, fmt.Sprintf("%s of %s could not be attributed to a component",
				units.Bytes(res.Attribution.UnattributedBytes), units.Bytes(res.Attribution.TotalBytes)))
		}
	}
	if m.PeakAllocatedBytes == 0 && m.PeakReservedBytes == 0 && m.EndOfStepBytes == 0 && res.Attribution == nil {
		return nil, fmt.Errorf("%s: nothing measured: give runtime files or measured figures", id)
	}
	res.Rows = compareRows(id, res.Prediction, m, res.Attribution)
	res.Misses = explainMisses(res.Rows, res.Attribution, rep.Operators, 3)
	if model != nil {
		if err := res.applyModel(model); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// applyModel adds the corrected prediction and the corrected errors to every row.
func (r *RunResult) applyModel(model *Model) error {
	corr, err := model.correctedEstimate(r.cfg)
	if err != nil {
		return fmt.Errorf("%s: applying corrections: %w", r.ID, err)
	}
	p := predictionFor(corr, r.Prediction.Stage, r.oomed)
	r.Corrected = &p
	for i := range r.Rows {
		row := &r.Rows[i]
		var v int64
		switch row.Metric {
		case MetricPeakAllocated:
			v = p.PeakAllocated
		case MetricPeakReserved:
			v = p.PeakReserved
		case MetricEndOfStep:
			v = p.EndOfStep
		default:
			v = p.AtPeak[row.Component]
		}
		row.CorrectedBytes, row.CorrectedErrorPct = &v, nil
		if row.ErrorPct != nil { // same measurement, so the same rule decides whether a relative error means anything
			e := ErrorPct(v, row.MeasuredBytes)
			row.CorrectedErrorPct = &e
		}
	}
	return nil
}

// Evaluate runs one spec: load its config and runtime files, estimate, compare.
func Evaluate(ctx context.Context, s RunSpec, opts Options) (*RunResult, error) {
	cfg, err := s.loadConfig()
	if err != nil {
		return nil, err
	}
	var reports []*report.Report
	for _, f := range s.Runtime {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if opts.LoadFile == nil {
			return nil, fmt.Errorf("%s: runtime file %s given, but nothing to read it with (Options.LoadFile)", s.ID, f)
		}
		r, err := opts.LoadFile(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.ID, err)
		}
		reports = append(reports, r)
	}
	res, err := EvaluateReports(s.ID, cfg, s.Stage, reports, s.Measured, opts.Model)
	if err != nil {
		return nil, err
	}
	res.Config, res.Runtime, res.Tags = s.Config, s.Runtime, s.Tags
	return res, nil
}

func (s RunSpec) loadConfig() (static.Config, error) {
	var cfg static.Config
	if s.config != nil {
		cfg = *s.config
	} else {
		if s.Config == "" {
			return cfg, fmt.Errorf("%s: no config given", s.ID)
		}
		c, err := static.LoadConfig(s.Config)
		if err != nil {
			return cfg, fmt.Errorf("%s: %w", s.ID, err)
		}
		cfg = *c
	}
	if s.GPU != "" {
		if _, err := gpu.Lookup(s.GPU); err != nil {
			return cfg, fmt.Errorf("%s: gpu: %w", s.ID, err)
		}
		cfg.Hardware.GPU = s.GPU
		cfg.Hardware.Custom = nil
		if err := cfg.Resolve(); err != nil {
			return cfg, fmt.Errorf("%s: %w", s.ID, err)
		}
	}
	return cfg, nil
}

// Failure is a run that could not be evaluated.
type Failure struct {
	ID    string `json:"id"`
	Error string `json:"error"`
}

// Calibration is the many-run result: every run, one table, the summary and, when fitted, the cross-validation.
type Calibration struct {
	Version  int              `json:"version"`
	Tool     string           `json:"tool"`
	Name     string           `json:"name"`
	Runs     []*RunResult     `json:"runs"`
	Rows     []Row            `json:"rows"`
	Summary  map[string]Stat  `json:"summary"`
	Model    *Model           `json:"corrections,omitempty"`
	CV       *CrossValidation `json:"cross_validation,omitempty"`
	Failures []Failure        `json:"failures,omitempty"`
}

// EvaluateAll evaluates specs in a bounded worker pool; results keep the spec order. A failing run is recorded
// and the others still run; cancellation stops the pool.
func EvaluateAll(ctx context.Context, name string, specs []RunSpec, opts Options) (*Calibration, error) {
	jobs := opts.Jobs
	if jobs <= 0 {
		jobs = 4
	}
	results := make([]*RunResult, len(specs))
	errs := make([]error, len(specs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(jobs)
	for i := range specs {
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			results[i], errs[i] = Evaluate(gctx, specs[i], opts)
			if errors.Is(errs[i], context.Canceled) {
				return errs[i]
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	c := &Calibration{Version: Version, Name: name, Model: opts.Model}
	for i, r := range results {
		if errs[i] != nil {
			c.Failures = append(c.Failures, Failure{ID: specs[i].ID, Error: errs[i].Error()})
			continue
		}
		c.Runs = append(c.Runs, r)
		c.Rows = append(c.Rows, r.Rows...)
	}
	c.Summary = Summarize(c.Rows)
	return c, nil
}

// resolvePaths makes relative config and runtime paths relative to dir.
func (s *RunSpec) resolvePaths(dir string) {
	if s.Config != "" && !filepath.IsAbs(s.Config) {
		s.Config = filepath.Join(dir, s.Config)
	}
	s.Runtime = slices.Clone(s.Runtime)
	for i, f := range s.Runtime {
		if !filepath.IsAbs(f) {
			s.Runtime[i] = filepath.Join(dir, f)
		}
	}
}
