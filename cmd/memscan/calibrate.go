package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/internal/calibrate"
	"github.com/memscan/memscan/internal/pipeline"
	"github.com/memscan/memscan/internal/results"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/static"
)

var calibrateHelp = helpDoc{
	usage: []string{"memscan calibrate --config CFG [flags] RUNTIME...", "memscan calibrate --manifest FILE [flags]"},
	description: `
Compare static predictions with runtime measurements. RUNTIME files (allocator snapshots, tracer JSON,
torch.profiler memory timelines, training logs) are analyzed and attributed to the estimator's components
(weights, gradients, optimizer, activations, temporaries, other); the table gives predicted, measured, absolute
and relative error for each component at the peak, the peak allocated, the peak reserved and the end-of-step
allocation, plus the predicted vs observed peak stage and the sites behind the biggest misses.

A manifest (JSON or YAML) lists many runs: {"version": 1, "name": ..., "runs": [{"id", "config", "runtime": [...],
"stage": "worst|first|last|N", "gpu": ..., "measured": {"peak_allocated_bytes", "peak_reserved_bytes",
"end_of_step_allocated_bytes", "source"}}]}. With several measured runs a correction model is fitted
(persistent scale, activation scale per attention kind and recompute mode, reserved/allocated ratio) and
checked by leave-one-out cross-validation; memscan static --calibration FILE applies it.

Writes calibration.md, calibration.json, corrections.json (when fitted) and the PNGs to a run directory.`,
	examples: []string{
		"memscan calibrate --manifest testdata/calibration/megatron.json   # the measured Megatron-LM runs",
		"memscan calibrate --config cfg.json rank0_memory_snapshot.pickle train.log",
		"memscan calibrate --config cfg.json --measured-peak-allocated 61203283968 --no-files",
		"memscan calibrate --manifest runs.yaml --save-corrections corrections.json   # then: memscan static --calibration corrections.json",
	},
	exits: []exitDoc{
		{exitOK, "every run was evaluated"},
		{exitUsage, "usage error (bad flag, unreadable config, manifest, corrections or rule file, --out not a directory, ...)"},
		{exitFailed, "no run could be evaluated"},
		{exitPartial, "some runs failed; the others are in the table and the run directory"},
		writeFailedDoc,
		interruptedDoc,
	},
}

// calibrateFlags are the parsed flags of memscan calibrate; runtime holds the RUNTIME arguments.
type calibrateFlags struct {
	config, manifest, stage, gpu, corrections, saveCorrections string
	out, name, format, rules                                   string
	peakAlloc, peakRes, endAlloc                               int64
	noFit, fitLeaking, noPlots, noFiles                        bool
	writeTo                                                    string // results root of the run directory; "" writes none
	jobs                                                       int
	runtime                                                    []string
	analyzeOpts                                                analyze.Options // with the --rules
}

func runCalibrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, helped, err := parseCalibrateFlags(args, stdout, stderr)
	if helped || err != nil {
		return err
	}
	plan, err := calibratePlan(ctx, f)
	if err != nil {
		return err
	}
	cal, warnings, err := calibrate.Run(ctx, plan)
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	cal.Tool = "memscan " + version
	for _, f := range cal.Failures {
		fmt.Fprintf(stderr, "memscan: %s: %s\n", f.ID, f.Error)
	}
	if len(cal.Runs) == 0 {
		return &exitError{code: exitFailed, err: fmt.Errorf("calibrate: none of the %s could be evaluated", units.Plural(len(plan.Specs), "run", "runs"))}
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "memscan: warning: %s\n", w)
	}
	if f.saveCorrections != "" && cal.Model != nil {
		if err := results.WriteCorrections(f.saveCorrections, cal.Model); err != nil {
			return fmt.Errorf("calibrate: %w", err)
		}
	}
	if err := writeCalibration(cal, plan.Name, f, stdout, stderr); err != nil {
		return err
	}
	if len(cal.Failures) > 0 {
		return &exitError{code: exitPartial, err: errors.New("calibrate: some runs failed; the rest are in the table")}
	}
	return nil
}

func parseCalibrateFlags(args []string, stdout, stderr io.Writer) (*calibrateFlags, bool, error) {
	f := &calibrateFlags{}
	c := newCmdLine("calibrate", calibrateHelp, stderr)
	c.StringVar(&f.config, "config", "", "static config (JSON or YAML) the RUNTIME files were measured with")
	c.StringVar(&f.manifest, "manifest", "", "manifest of many runs (JSON or YAML)")
	c.StringVar(&f.stage, "stage", "worst", "pipeline stage the measurement is from: worst, first, last or an index")
	c.StringVar(&f.gpu, "gpu", "", "override the config's GPU")
	c.Int64Var(&f.peakAlloc, "measured-peak-allocated", 0, "measured peak allocated bytes (e.g. from a log line)")
	c.Int64Var(&f.peakRes, "measured-peak-reserved", 0, "measured peak reserved bytes")
	c.Int64Var(&f.endAlloc, "measured-end-allocated", 0, "measured allocated bytes between steps")
	c.BoolVar(&f.noFit, "no-fit", false, "do not fit corrections on a manifest")
	c.BoolVar(&f.fitLeaking, "fit-leaking", false, "fit corrections on runs whose measurement leaks too (kept out by default: their peak grows with the run's length)")
	c.StringVar(&f.corrections, "corrections", "", "apply this corrections file instead of fitting one")
	c.StringVar(&f.saveCorrections, "save-corrections", "", "also write the fitted corrections to this file")
	c.outFlag(&f.out)
	c.nameFlag(&f.name, "calibrate_<manifest name>, or calibrate_ and the config's name")
	c.IntVar(&f.jobs, "jobs", 4, "runs evaluated in parallel")
	c.formatFlag(&f.format, "text", "text", "json", "md")
	c.noPlotsFlag(&f.noPlots)
	c.noFilesFlag(&f.noFiles)
	c.rulesFlag(&f.rules)
	if helped, err := c.parse(args, stdout); helped || err != nil {
		return nil, helped, err
	}
	f.runtime = c.Args()
	switch {
	case (f.config == "") == (f.manifest == ""):
		return nil, false, usageErrorf("calibrate: give exactly one of --config CFG RUNTIME... or --manifest FILE")
	case f.manifest != "" && c.NArg() > 0:
		return nil, false, usageErrorf("calibrate: runtime files go in the manifest, not after --manifest (got %q)", c.Arg(0))
	case f.jobs < 1:
		return nil, false, usageErrorf("calibrate: --jobs must be at least 1, got %d", f.jobs)
	case !c.formatOK(f.format):
		return nil, false, usageErrorf("calibrate: --format must be text, json or md, got %q", f.format)
	case f.peakAlloc < 0 || f.peakRes < 0 || f.endAlloc < 0:
		return nil, false, usageErrorf("calibrate: measured bytes must not be negative")
	}
	var err error
	if f.writeTo, err = c.filesDir(f.out, f.noFiles, true, stderr); err != nil {
		return nil, false, err
	}
	rules, err := c.loadRules(f.rules)
	if err != nil {
		return nil, false, err
	}
	f.analyzeOpts = analyze.Options{Rules: rules}
	return f, false, nil
}

// calibratePlan turns the flags into the runs to evaluate: the manifest's, or the one run that --config and the
// RUNTIME files or --measured-* figures describe.
func calibratePlan(ctx context.Context, f *calibrateFlags) (calibrate.Plan, error) {
	plan := calibrate.Plan{Name: f.name, Options: calibrate.Options{Jobs: f.jobs, LoadFile: pipeline.RuntimeLoader(ctx, f.analyzeOpts)}, Fit: f.manifest != "" && !f.noFit, FitLeaking: f.fitLeaking}
	if f.corrections != "" {
		m, err := calibrate.LoadModel(f.corrections)
		if err != nil {
			return plan, usageErrorf("calibrate: %v", err)
		}
		plan.Corrections = m
	}
	if f.manifest != "" {
		m, err := calibrate.LoadManifest(f.manifest)
		if err != nil {
			return plan, usageErrorf("calibrate: %v", err)
		}
		plan.Specs = m.Runs
		if plan.Name == "" {
			plan.Name = "calibrate_" + m.Name
		}
		return plan, nil
	}
	measured := calibrate.Measured{PeakAllocatedBytes: f.peakAlloc, PeakReservedBytes: f.peakRes, EndOfStepBytes: f.endAlloc}
	if measured != (calibrate.Measured{}) {
		measured.Source = "command line"
	}
	if len(f.runtime) == 0 && measured == (calibrate.Measured{}) {
		return plan, usageErrorf("calibrate: no RUNTIME files and no --measured-* figures given")
	}
	plan.Specs = []calibrate.RunSpec{{ID: results.Stem(f.config), Config: f.config, Runtime: f.runtime, Stage: f.stage, GPU: f.gpu, Measured: measured}}
	if plan.Name == "" {
		plan.Name = "calibrate_" + results.RunName([]string{f.config})
	}
	return plan, nil
}

// writeCalibration prints the table in --format and, unless --no-files, writes the run directory.
func writeCalibration(cal *calibrate.Calibration, name string, f *calibrateFlags, stdout, stderr io.Writer) error {
	var err error
	switch f.format {
	case "json":
		err = units.WriteJSON(stdout, cal)
	case "md":
		err = results.WriteCalibrationMarkdown(stdout, cal)
	default:
		err = results.WriteCalibrationText(stdout, cal)
	}
	if err != nil {
		return fmt.Errorf("calibrate: writing the table: %w", err)
	}
	if f.writeTo == "" {
		return nil
	}
	dir, err := writeCalibrationRun(f.writeTo, name, cal, f.noPlots, stderr)
	if err != nil {
		return &exitError{code: exitFailed, err: fmt.Errorf("calibrate: %w", err)}
	}
	fmt.Fprintf(stderr, "wrote %s\n", dir)
	return nil
}

// writeCalibrationRun writes the calibration's files into a new run directory (see writeRun). Charts that cannot
// be drawn are warnings.
func writeCalibrationRun(root, name string, cal *calibrate.Calibration, noPlots bool, stderr io.Writer) (string, error) {
	return writeRun(root, name, stderr, func(dir string) error {
		_, err := results.WriteCalibrationFiles(dir, cal, noPlots)
		var charts *results.ChartError
		if errors.As(err, &charts) {
			fmt.Fprintf(stderr, "memscan: warning: %v\n", err)
			return nil
		}
		return err
	})
}

// staticCalibration applies a corrections file for `memscan static --calibration`; nil when none was given.
func staticCalibration(path string, cfg static.Config) (*calibrate.Applied, error) {
	if path == "" {
		return nil, nil
	}
	m, err := calibrate.LoadModel(path)
	if err != nil {
		return nil, usageErrorf("static: --calibration: %v", err)
	}
	a, err := m.Compare(cfg, filepath.Base(path))
	if err != nil {
		return nil, fmt.Errorf("static: --calibration: %w", err)
	}
	return a, nil
}

// writeStaticCalibration writes static_calibrated.json next to static_report.json.
func writeStaticCalibration(dir string, a *calibrate.Applied) error {
	if a == nil {
		return nil
	}
	return results.WriteFile(filepath.Join(dir, "static_calibrated.json"), func(w io.Writer) error { return units.WriteJSON(w, a) })
}

// analyzeStaticJoin is `memscan analyze --static CFG`: the analyzed inputs are one run measured with CFG; the
// calibration table goes into the run directory dir ("": none) and to stdout after the text report unless quiet.
func analyzeStaticJoin(cfgPath string, cfg static.Config, reports []*report.Report, dir string, noPlots, quiet bool, stdout, stderr io.Writer) error {
	cal, err := calibrate.ForReports(results.RunName([]string{cfgPath}), cfgPath, cfg, reports)
	if err != nil {
		return fmt.Errorf("analyze: --static: %w", err)
	}
	cal.Tool = "memscan " + version
	if dir != "" {
		if _, err := results.WriteCalibrationFiles(dir, cal, noPlots); err != nil {
			fmt.Fprintf(stderr, "memscan: warning: %v\n", err)
		}
	}
	if quiet {
		return nil
	}
	fmt.Fprintln(stdout)
	return results.WriteCalibrationText(stdout, cal)
}
