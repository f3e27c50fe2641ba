// Package pipeline is what a memscan command runs between parsing its flags and rendering: inputs found,
// decoded and analyzed in a bounded pool, the estimator joined where a static configuration is given, and the
// views across inputs. The CLI parses and dispatches to it; analyze, the decoders and the estimator know nothing
// of each other, and this package is where they meet.
package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/internal/calibrate"
	"github.com/memscan/memscan/internal/input"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/static"
)

// RankError is a rank given for other than one input.
type RankError struct{ Found int }

func (e *RankError) Error() string {
	return fmt.Sprintf("the rank applies to a single input, but %d were found", e.Found)
}

// NothingAnalyzedError says that none of Total inputs could be analyzed.
type NothingAnalyzedError struct{ Total int }

func (e *NothingAnalyzedError) Error() string {
	return fmt.Sprintf("none of the %d input(s) could be analyzed", e.Total)
}

// Events tell the caller what happens while inputs are analyzed; each may be nil. They are called one at a time.
type Events struct {
	// Failure is an input that could not be found or analyzed, as it happens; the error names the file.
	Failure func(error)
	// Start names the files found, before any is analyzed; Done says that one more has been.
	Start func(files []string)
	Done  func()
	// Warning is something the caller should know that fails nothing (a remedy the estimator could not compute).
	Warning func(error)
	// Skipped is what a directory walk passed over, and why, before any file is analyzed.
	Skipped func(load.Skipped)
	// Stage says that the analysis of file reached stage (analyze.Options.Stage), a few times per file.
	Stage func(file string, stage analyze.Stage)
}

// Request is one analysis: the INPUT arguments of memscan analyze and what to do with them.
type Request struct {
	Inputs   []string
	Discover load.DiscoverOptions
	Options  analyze.Options
	// Jobs bounds how many inputs are decoded and analyzed at once (at least 1).
	Jobs int
	// Rank, when ≥ 0, is the rank of the single input (its path does not say).
	Rank int
	// Static, when set, is joined with the reports: remedies for every explained OOM.
	Static *static.Config
	// Tool names the program in the run ("memscan 0.1.0").
	Tool   string
	Events Events
}

// Result is an analysis: the run (inputs analyzed, failures, cross-input view), the files found in input order,
// and how many inputs there were (files plus the arguments that yielded none).
type Result struct {
	Run   *report.Run
	Files []string
	Total int
}

// Analyze finds the inputs of req, decodes and analyzes them in a bounded pool, joins the static configuration
// and adds the cross-input view. It fails with a *RankError or *NothingAnalyzedError, or with the context's error
// when interrupted.
func Analyze(ctx context.Context, req Request) (*Result, error) {
	ev := req.Events.serialized()
	files, failures, err := discover(req, ev)
	if err != nil {
		return nil, err
	}
	res := &Result{Files: files, Total: len(files) + len(failures)}
	reports := make([]*report.Report, len(files))
	more := analyzeFiles(ctx, files, detailBudget(req.Options, len(files)), req.Jobs, ev, func(i int, r *report.Report) { reports[i] = r })
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	run := &report.Run{Version: report.ReportVersion, Tool: req.Tool, Failures: append(failures, more...)}
	for _, r := range reports {
		if r != nil {
			if req.Rank >= 0 {
				r.Rank = req.Rank
			}
			run.Inputs = append(run.Inputs, r)
		}
	}
	if len(run.Inputs) == 0 {
		return nil, &NothingAnalyzedError{Total: res.Total}
	}
	if req.Static != nil {
		// An OOM explained against the static configuration: which single change fits.
		for _, r := range run.Inputs {
			if err := calibrate.AddRemedies(r, *req.Static); err != nil {
				ev.warning(err)
			}
		}
	}
	if len(run.Inputs) > 1 {
		run.Cross = analyze.CrossInputs(run.Inputs)
		if run.Cross != nil && run.Cross.Tracer == nil {
			run.Cross.Tracer = analyze.CrossTracer(run.Inputs)
		}
	}
	res.Run = run
	return res, nil
}

// discover finds the inputs of req (Analyze and Stream alike): the files to analyze and the arguments that yielded
// none, each told to ev as found, or a *RankError when --rank names a single input and there is not one.
func discover(req Request, ev *events) ([]string, []report.Failure, error) {
	found := load.Discover(req.Inputs, req.Discover)
	for _, sk := range found.Skipped {
		ev.skipped(sk)
	}
	var failures []report.Failure
	for _, f := range found.Failures {
		failures = append(failures, report.Failure(f))
		ev.failure(fmt.Errorf("%s: %s", f.File, f.Error))
	}
	if req.Rank >= 0 && len(found.Files) != 1 {
		return nil, nil, &RankError{Found: len(found.Files)}
	}
	return found.Files, failures, nil
}

// Streamed is what Stream leaves once every input has gone by: the files found in input order, how many inputs
// there were (files plus the arguments that yielded none), and the failures in input order.
type Streamed struct {
	Files    []string
	Total    int
	Failures []report.Failure
}

// Stream finds, decodes and analyzes the inputs of req in the pool Analyze uses, but keeps no report: each is handed
// to handle as soon as it is finished, one call at a time and never during an event, in the order they finish. At
// most req.Jobs reports are then in memory however many inputs there are, and what handle writes outlives an
// interrupted batch. The static join and the cross-input view, which need every report at once, are not made. An
// error of handle stops the batch and is returned; otherwise Stream fails like Analyze (*RankError,
// *NothingAnalyzedError, the context's error).
func Stream(ctx context.Context, req Request, handle func(*report.Report) error) (*Streamed, error) {
	ev := req.Events.serialized()
	files, failures, err := discover(req, ev)
	if err != nil {
		return nil, err
	}
	out := &Streamed{Files: files, Total: len(files) + len(failures), Failures: failures}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var handleErr error
	analyzed := 0
	more := analyzeFiles(ctx, files, detailBudget(req.Options, len(files)), req.Jobs, ev, func(_ int, r *report.Report) {
		if req.Rank >= 0 {
			r.Rank = req.Rank
		}
		// Under the events' lock: handle may print between the progress events.
		ev.mu.Lock()
		defer ev.mu.Unlock()
		if handleErr != nil {
			return
		}
		if handleErr = handle(r); handleErr != nil {
			cancel()
			return
		}
		analyzed++
	})
	if handleErr != nil {
		return nil, handleErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out.Failures = append(out.Failures, more...)
	if analyzed == 0 {
		return nil, &NothingAnalyzedError{Total: out.Total}
	}
	return out, nil
}

// detailBudget gives each of n inputs its share of the full-resolution timelines a run keeps, so many inputs do
// not multiply it.
func detailBudget(opts analyze.Options, n int) analyze.Options {
	opts.MaxTimelineDetailEvents = analyze.DetailEventsPerInput(n)
	return opts
}

// analyzeFiles decodes and analyzes files in a pool of jobs, handing each report to done with its index in files
// from the goroutine that made it (done is then the report's only keeper). Failures are reported as they happen
// and returned in input order.
func analyzeFiles(ctx context.Context, files []string, opts analyze.Options, jobs int, ev *events, done func(i int, r *report.Report)) []report.Failure {
	errs := make([]error, len(files))
	ev.start(files)
	var g errgroup.Group
	g.SetLimit(max(jobs, 1))
	for i, path := range files {
		g.Go(func() error {
			if ctx.Err() != nil {
				return nil
			}
			o := opts
			if ev.e.Stage != nil {
				o.Stage = func(s analyze.Stage) { ev.stage(path, s) }
			}
			r, err := analyze.AnalyzeFile(ctx, path, o)
			if errs[i] = WithCommandHint(err); errs[i] != nil {
				if ctx.Err() == nil {
					ev.failure(errs[i])
				}
			} else {
				done(i, r)
			}
			ev.done()
			return nil
		})
	}
	g.Wait()
	var failures []report.Failure
	for i, err := range errs {
		if err != nil {
			failures = append(failures, report.Failure{File: files[i], Error: err.Error()})
		}
	}
	return failures
}

// WithCommandHint adds, to the error about a file memscan itself wrote, which command reads such files (the
// decoders know no commands).
func WithCommandHint(err error) error {
	if errors.Is(err, input.ErrMemscanOutput) {
		return fmt.Errorf("%w; compare run directories with memscan compare, merge rank summaries with memscan merge", err)
	}
	return err
}

// events calls Events one at a time: the pool's goroutines report concurrently.
type events struct {
	mu sync.Mutex
	e  Events
}

func (e Events) serialized() *events { return &events{e: e} }

func (ev *events) failure(err error) {
	if ev.e.Failure != nil {
		ev.mu.Lock()
		defer ev.mu.Unlock()
		ev.e.Failure(err)
	}
}

func (ev *events) start(files []string) {
	if ev.e.Start != nil {
		ev.mu.Lock()
		defer ev.mu.Unlock()
		ev.e.Start(files)
	}
}

func (ev *events) done() {
	if ev.e.Done != nil {
		ev.mu.Lock()
		defer ev.mu.Unlock()
		ev.e.Done()
	}
}

func (ev *events) skipped(s load.Skipped) {
	if ev.e.Skipped != nil {
		ev.mu.Lock()
		defer ev.mu.Unlock()
		ev.e.Skipped(s)
	}
}

func (ev *events) stage(file string, s analyze.Stage) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	ev.e.Stage(file, s)
}

func (ev *events) warning(err error) {
	if ev.e.Warning != nil {
		ev.mu.Lock()
		defer ev.mu.Unlock()
		ev.e.Warning(err)
	}
}
