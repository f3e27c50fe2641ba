package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/calibrate"
	"github.com/memscan/memscan/categorize"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/results"
	"github.com/memscan/memscan/static"
	"github.com/memscan/memscan/units"
)

const calibrateUsage = `Usage: memscan calibrate --config CFG [flags] RUNTIME...
       memscan calibrate --manifest FILE [flags]

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

Writes calibration.md, calibration.json, corrections.json (when fitted) and the PNGs to a run directory.

Flags:
`

func runCalibrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("calibrate", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	config := fs.String("config", "", "static config (JSON or YAML) the RUNTIME files were measured with")
	manifest := fs.String("manifest", "", "manifest of many runs (JSON or YAML)")
	stage := fs.String("stage", "worst", "pipeline stage the measurement is from: worst, first, last or an index")
	gpu := fs.String("gpu", "", "override the config's GPU")
	peakAlloc := fs.Int64("measured-peak-allocated", 0, "measured peak allocated bytes (e.g. from a log line)")
	peakRes := fs.Int64("measured-peak-reserved", 0, "measured peak reserved bytes")
	endAlloc := fs.Int64("measured-end-allocated", 0, "measured allocated bytes between steps")
	noFit := fs.Bool("no-fit", false, "do not fit corrections on a manifest")
	corrFile := fs.String("corrections", "", "apply this corrections file instead of fitting one")
	saveCorr := fs.String("save-corrections", "", "also write the fitted corrections to this file")
	out := fs.String("out", "results", "results root; the run directory is created inside it")
	name := fs.String("name", "", "run directory name (default: from the manifest or config)")
	jobs := fs.Int("jobs", 4, "runs evaluated in parallel")
	format := fs.String("format", "text", "stdout format: text, json or md")
	noPlots := fs.Bool("no-plots", false, "do not draw PNG charts")
	noFiles := fs.Bool("no-files", false, "print only; write no run directory")
	rules := fs.String("rules", "", "extra categorization rules (YAML) for snapshots")
	help := fs.BoolP("help", "h", false, "show this help")
	if helped, err := parseFlags(fs, args, help, calibrateUsage, stdout); helped || err != nil {
		return err
	}
	switch {
	case (*config == "") == (*manifest == ""):
		return usageErrorf("calibrate: give exactly one of --config CFG RUNTIME... or --manifest FILE")
	case *manifest != "" && fs.NArg() > 0:
		return usageErrorf("calibrate: runtime files go in the manifest, not after --manifest (got %q)", fs.Arg(0))
	case *jobs < 1:
		return usageErrorf("calibrate: --jobs must be at least 1, got %d", *jobs)
	case *format != "text" && *format != "json" && *format != "md":
		return usageErrorf("calibrate: --format must be text, json or md, got %q", *format)
	case *peakAlloc < 0 || *peakRes < 0 || *endAlloc < 0:
		return usageErrorf("calibrate: measured bytes must not be negative")
	}
	if !*noFiles {
		if err := checkOutDir(*out); err != nil {
			return usageErrorf("calibrate: --out %s: %v", *out, err)
		}
	}

	opts := calibrate.Options{Jobs: *jobs}
	if *rules != "" {
		r, err := categorize.LoadFile(*rules, categorize.Default())
		if err != nil {
			return usageErrorf("calibrate: --rules: %v", err)
		}
		opts.Analyze = analyze.Options{Rules: r}
	}
	var model *calibrate.Model
	if *corrFile != "" {
		m, err := calibrate.LoadModel(*corrFile)
		if err != nil {
			return usageErrorf("calibrate: %v", err)
		}
		model = m
	}

	var specs []calibrate.RunSpec
	runName := *name
	if *manifest != "" {
		m, err := calibrate.LoadManifest(*manifest)
		if err != nil {
			return usageErrorf("calibrate: %v", err)
		}
		specs = m.Runs
		if runName == "" {
			runName = "calibrate_" + m.Name
		}
	} else {
		measured := calibrate.Measured{PeakAllocatedBytes: *peakAlloc, PeakReservedBytes: *peakRes, EndOfStepBytes: *endAlloc}
		if measured != (calibrate.Measured{}) {
			measured.Source = "command line"
		}
		if fs.NArg() == 0 && measured == (calibrate.Measured{}) {
			return usageErrorf("calibrate: no RUNTIME files and no --measured-* figures given")
		}
		specs = []calibrate.RunSpec{{ID: results.Stem(*config), Config: *config, Runtime: fs.Args(), Stage: *stage, GPU: *gpu, Measured: measured}}
		if runName == "" {
			runName = "calibrate_" + results.RunName([]string{*config})
		}
	}

	cal, warnings, err := calibrate.Run(ctx, calibrate.Plan{Name: runName, Specs: specs, Options: opts, Corrections: model,
		Fit: *manifest != "" && !*noFit})
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	cal.Tool = "memscan " + version
	for _, f := range cal.Failures {
		fmt.Fprintf(stderr, "memscan: %s: %s\n", f.ID, f.Error)
	}
	if len(cal.Runs) == 0 {
		return &exitError{code: exitFailed, err: fmt.Errorf("calibrate: none of the %s could be evaluated", units.Plural(len(specs), "run", "runs"))}
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "memscan: warning: %s\n", w)
	}
	if *saveCorr != "" && cal.Model != nil {
		if err := results.WriteCorrections(*saveCorr, cal.Model); err != nil {
			return fmt.Errorf("calibrate: %w", err)
		}
	}

	switch *format {
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
	if !*noFiles {
		dir, err := writeCalibrationRun(*out, runName, cal, *noPlots, stderr)
		if err != nil {
			return &exitError{code: exitFailed, err: fmt.Errorf("calibrate: %w", err)}
		}
		fmt.Fprintf(stderr, "wrote %s\n", dir)
	}
	if len(cal.Failures) > 0 {
		return &exitError{code: exitPartial, err: errors.New("calibrate: some runs failed; the rest are in the table")}
	}
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
	if err := results.WriteFile(filepath.Join(dir, "static_calibrated.json"), func(w io.Writer) error { return units.WriteJSON(w, a) }); err != nil {
		return fmt.Errorf("static: %w", err)
	}
	return nil
}

// analyzeStaticJoin is `memscan analyze --static CFG`: the analyzed inputs are one run measured with CFG; the
// calibration table goes into the run directory (and to stdout after the text report unless quiet).
func analyzeStaticJoin(cfgPath string, cfg static.Config, reports []*report.Report, dir string, noPlots, quiet bool, stdout, stderr io.Writer) error {
	cal, err := calibrate.ForReports(results.RunName([]string{cfgPath}), cfgPath, cfg, reports)
	if err != nil {
		return fmt.Errorf("analyze: --static: %w", err)
	}
	cal.Tool = "memscan " + version
	if _, err := results.WriteCalibrationFiles(dir, cal, noPlots); err != nil {
		fmt.Fprintf(stderr, "memscan: warning: %v\n", err)
	}
	if quiet {
		return nil
	}
	fmt.Fprintln(stdout)
	return results.WriteCalibrationText(stdout, cal)
}
