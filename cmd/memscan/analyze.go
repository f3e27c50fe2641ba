package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"
	"golang.org/x/term"

	"github.com/memscan/memscan/allocator"
	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/categorize"
	"github.com/memscan/memscan/input"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/merge"
	"github.com/memscan/memscan/results"
	"github.com/memscan/memscan/static"
	"github.com/memscan/memscan/units"
)

const analyzeHelp = `Usage: memscan analyze [flags] INPUT...

Analyze PyTorch CUDA memory snapshots (torch.cuda.memory._dump_snapshot pickles, any torch version), memory
tracer JSON, torch.profiler memory timelines and training logs: where the GPU memory went, what held it at the
peak, and what to change.

INPUT is a file, a directory or a glob. Directories are searched for snapshot-like files (*.pickle, *.pkl,
*snapshot*, memory/tracer/timeline *.json and *.json.gz, *.log), including both torchtitan layouts
iteration_N/rankR_memory_snapshot.pickle and step_NNNNNNNNNNNN/RRRRRR_step_N.pickle; memscan's own run
directories are skipped. The content decides the format, never the extension.

Each run writes <out>/<YYYYMMDD_HHMMSS>_<name>/ with analysis_report.txt, README.md (findings with the charts),
summary.json (integer bytes), report.msgpack (the whole report) and PNG charts, and points <out>/latest at it.
The report goes to stdout; progress, warnings and "wrote DIR" go to stderr.

Flags:
%s
Exit status:
  0  every input was analyzed
  1  usage error (bad flag, unreadable rule file, --out not a directory, ...)
  2  no input could be analyzed
  3  some inputs failed; the others were analyzed and written

Examples:
  memscan analyze outputs/memory_snapshot/iteration_1/rank0_memory_snapshot.pickle
  memscan analyze --out results --name lbs6_baseline rank0_memory_snapshot.pickle
  memscan analyze --jobs 8 --no-plots outputs/memory_snapshot/          # every rank and iteration
  memscan analyze 'outputs/memory_snapshot/iteration_*/rank0_*.pickle'  # one rank across iterations
  memscan analyze --format json --quiet snapshot.pickle > summary.json
  memscan analyze --summary-only --out /dump/summaries rank7_memory_snapshot.pickle   # then: memscan merge /dump/summaries
  memscan analyze --alloc-conf expandable_segments:True --gpu h100-sxm snapshot.pickle  # what would it reserve?

Allocator replay: every snapshot with a trace is replayed through a model of PyTorch's caching allocator under
its recorded settings; the report compares the replayed peak reserved memory with the recorded one. With
--alloc-conf it is replayed under those settings too (recorded vs replayed vs what-if). The device's capacity
decides when the allocator frees its cache and retries: it comes from --gpu or --device-memory, else from an
out-of-memory event in the trace, else none is assumed (the report says which).
`

// analyzeFlags are the parsed flags of memscan analyze.
type analyzeFlags struct {
	out      string
	name     string
	jobs     int
	rules    string
	top      int
	format   string
	noPlots  bool
	progress string
	rank     int
	rankSet  bool
	quiet    bool
	verbose  bool
	// formatSet: --format was given. With --quiet it still prints that report, so
	// `--format json --quiet > summary.json` works while progress and "wrote DIR" stay silent.
	formatSet bool
	static    string
	// summaryOnly writes one compact rank summary per input instead of a run directory; summaryDir is where
	// (empty: beside each input).
	summaryOnly bool
	summaryDir  string
	// allocConf, gpu and deviceMemory set up the allocator what-if (--alloc-conf, --gpu, --device-memory).
	allocConf    string
	gpu          string
	deviceMemory string
	// maxInputSize bounds the decompressed bytes read from one input.
	maxInputSize sizeFlag
}

func parseAnalyzeFlags(args []string, stdout io.Writer) (*analyzeFlags, []string, error) {
	f := &analyzeFlags{}
	fs := pflag.NewFlagSet("analyze", pflag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned and printed once by the caller
	fs.StringVarP(&f.out, "out", "o", "results", "results root; each run gets a timestamped directory inside it")
	fs.StringVar(&f.name, "name", "", "run name (default: derived from the inputs, e.g. iter1_rank0 or iter1_8ranks)")
	fs.IntVarP(&f.jobs, "jobs", "j", runtime.NumCPU(), "inputs decoded and analyzed (and charts drawn) at once, by default one per CPU")
	fs.StringVar(&f.rules, "rules", "", "category rule file (YAML or JSON) that extends or overrides the built-in rules")
	fs.IntVar(&f.top, "top", analyze.DefaultTopN, "largest allocations and sites to report per input")
	fs.StringVar(&f.format, "format", "text", "report on stdout: text, json (summary.json) or md (README.md findings)")
	fs.BoolVar(&f.noPlots, "no-plots", false, "do not draw the PNG charts")
	fs.BoolVarP(&f.verbose, "verbose", "v", false, "print the full text report (analysis_report.txt) instead of the summary")
	fs.StringVar(&f.progress, "progress", "auto", "progress bar on stderr: auto (when stderr is a terminal), always or never")
	fs.IntVar(&f.rank, "rank", -1, "rank of a single input whose path does not say it (-1: read it from the path)")
	fs.BoolVarP(&f.quiet, "quiet", "q", false, "print no progress or \"wrote DIR\" line, and no report unless --format is given; failures still go to stderr")
	fs.StringVar(&f.static, "static", "", "static-estimator config (JSON or YAML) to compare predictions with these measurements")
	fs.BoolVar(&f.summaryOnly, "summary-only", false, "write only a compact rank summary per input (INPUT.summary.msgpack beside it, or in --out when given) for memscan merge; no run directory")
	fs.StringVar(&f.allocConf, "alloc-conf", "", "replay each trace through the caching-allocator model under these PYTORCH_CUDA_ALLOC_CONF settings too, e.g. expandable_segments:True or max_split_size_mb:512,garbage_collection_threshold:0.6")
	fs.StringVar(&f.gpu, "gpu", "", "device of the allocator replay, a key of memscan gpus (its memory less 1 GiB for the CUDA context is the capacity)")
	fs.StringVar(&f.deviceMemory, "device-memory", "", "device memory of the allocator replay, e.g. 79.2GiB (GB means 10^9 bytes: an \"80GB\" card holds about 79.2 GiB, 85 GB; --gpu knows catalogued cards); less 1 GiB for the CUDA context is the capacity")
	f.maxInputSize = sizeFlag(load.DefaultMaxInputSize())
	fs.Var(&f.maxInputSize, "max-input-size", "largest input, after decompression, that is decoded (e.g. 512MiB, 20GiB); larger ones fail at once instead of exhausting memory; the default is half of this machine's memory")
	help := fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		return nil, nil, usageErrorf("analyze: %v (see memscan analyze --help)", err)
	}
	if *help {
		// pflag marks boolean flags "[=true|false]"; blank it out (same width, so the columns stay aligned).
		usages := strings.ReplaceAll(fs.FlagUsages(), "[=true|false]", strings.Repeat(" ", len("[=true|false]")))
		fmt.Fprintf(stdout, analyzeHelp, usages)
		return nil, nil, errHelp
	}
	f.rankSet = fs.Changed("rank")
	f.formatSet = fs.Changed("format")
	if f.summaryOnly && fs.Changed("out") {
		f.summaryDir = f.out
	}
	switch {
	case f.jobs < 1:
		return nil, nil, usageErrorf("analyze: --jobs must be at least 1, got %d", f.jobs)
	case f.top < 1:
		return nil, nil, usageErrorf("analyze: --top must be at least 1, got %d", f.top)
	case f.format != "text" && f.format != "json" && f.format != "md":
		return nil, nil, usageErrorf("analyze: --format must be text, json or md, got %q", f.format)
	case f.progress != "auto" && f.progress != "always" && f.progress != "never":
		return nil, nil, usageErrorf("analyze: --progress must be auto, always or never, got %q", f.progress)
	case f.rankSet && f.rank < 0:
		return nil, nil, usageErrorf("analyze: --rank must be 0 or more, got %d", f.rank)
	case f.out == "":
		return nil, nil, usageErrorf("analyze: --out must not be empty")
	}
	if fs.NArg() == 0 {
		return nil, nil, usageErrorf("analyze: no INPUT given (see memscan analyze --help)")
	}
	// --summary-only without --out writes beside each input, so only a given --out is checked then.
	if !f.summaryOnly || f.summaryDir != "" {
		if err := checkOutDir(f.out); err != nil {
			return nil, nil, usageErrorf("analyze: --out %s: %v", f.out, err)
		}
	}
	return f, fs.Args(), nil
}

// checkOutDir reports, before any input is read, an --out that cannot hold the results: an existing
// non-directory or a path below one, or a directory (the --out itself, or the nearest existing one above a
// missing --out) in which no file can be created. A missing directory is fine otherwise: it is created when the
// results are written.
func checkOutDir(dir string) error {
	for p := filepath.Clean(dir); ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.IsDir():
			return checkWritable(p, p == filepath.Clean(dir))
		case err == nil && p == filepath.Clean(dir):
			return errors.New("is a file, not a directory; give a directory for the results")
		case err == nil:
			return fmt.Errorf("%s is a file, so no directory can be made below it", p)
		case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
			return err
		}
		if parent := filepath.Dir(p); parent == p {
			return nil
		}
	}
}

// checkWritable creates and removes a file in dir, the one test of writability that holds for every cause
// (permissions, a read-only mount, ACLs, quotas of zero). self says whether dir is --out itself or a parent that
// --out would be created in.
func checkWritable(dir string, self bool) error {
	f, err := os.CreateTemp(dir, ".memscan-write-test-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		if self {
			return fmt.Errorf("is not writable: %v", err)
		}
		return fmt.Errorf("cannot be created: %s is not writable: %v", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// errHelp ends a run after --help with exit status 0.
var errHelp = errors.New("help shown")

func runAnalyze(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags, inputs, err := parseAnalyzeFlags(args, stdout)
	if errors.Is(err, errHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	opts := analyze.Options{TopN: flags.top, MaxInputSize: int64(flags.maxInputSize)}
	if opts.Allocator, err = allocatorOptions(flags); err != nil {
		return err
	}
	// Rank summaries carry no allocator replay; thousands of ranks need not pay for it.
	opts.Allocator.Skip = flags.summaryOnly
	opts.NoTimelineDetail = flags.summaryOnly
	if flags.rules != "" {
		rules, err := categorize.LoadFile(flags.rules, categorize.Default())
		if err != nil {
			return usageErrorf("analyze: --rules: %v", err)
		}
		opts.Rules = rules
	}
	// A bad --static config is a usage error, found before any input is decoded.
	var staticCfg *static.Config
	if flags.static != "" {
		staticCfg, err = static.LoadConfig(flags.static)
		if err != nil {
			return usageErrorf("analyze: --static: %v", err)
		}
	}

	files, failures := load.Discover(inputs, load.DiscoverOptions{OutRoot: flags.out, SkipDir: results.IsRunDir})
	for _, f := range failures {
		fmt.Fprintf(stderr, "memscan: %s: %s\n", f.File, f.Error)
	}
	if flags.rankSet && len(files) != 1 {
		return usageErrorf("analyze: --rank applies to a single input, but %d were found", len(files))
	}

	opts.MaxTimelineDetailEvents = analyze.DetailEventsPerInput(len(files))
	total := len(files) + len(failures) // discovered files plus arguments that yielded none
	applyMemoryLimit(files, flags.jobs)
	reports, decodeFailures := analyzeFiles(ctx, files, opts, flags, stderr)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("analyze: interrupted: %w", err)
	}
	failures = append(failures, decodeFailures...)

	run := &analyze.Run{Version: analyze.ReportVersion, Tool: "memscan " + version, Failures: failures}
	for _, r := range reports {
		if r != nil {
			if flags.rankSet {
				r.Rank = flags.rank
			}
			run.Inputs = append(run.Inputs, r)
		}
	}
	if len(run.Inputs) == 0 {
		return &exitError{code: exitFailed, err: fmt.Errorf("analyze: none of the %d input(s) could be analyzed", total)}
	}
	if flags.summaryOnly {
		return writeRankSummaries(run, failures, total, flags, stdout, stderr)
	}
	if staticCfg != nil {
		// An OOM explained against the static configuration: which single change fits.
		for _, r := range run.Inputs {
			if err := analyze.AddRemedies(r, *staticCfg); err != nil {
				fmt.Fprintf(stderr, "memscan: warning: %v\n", err)
			}
		}
	}
	if len(run.Inputs) > 1 {
		run.Cross = analyze.CrossInputs(run.Inputs)
		if run.Cross != nil && run.Cross.Tracer == nil {
			run.Cross.Tracer = analyze.CrossTracer(run.Inputs)
		}
	}

	dir, err := writeAnalyzeRun(ctx, run, files, flags, stderr)
	if err != nil {
		return err
	}
	if !flags.quiet || flags.formatSet {
		if err := printAnalyzeReport(stdout, run, flags); err != nil {
			return err
		}
	}
	if !flags.quiet {
		fmt.Fprintf(stderr, "wrote %s\n", dir)
	}
	if staticCfg != nil {
		if err := analyzeStaticJoin(flags.static, *staticCfg, run.Inputs, dir, flags.noPlots, flags.quiet || flags.format != "text", stdout, stderr); err != nil {
			return err
		}
	}
	if len(failures) > 0 {
		return &exitError{code: exitPartial, err: fmt.Errorf("analyze: %d of %d input(s) failed; the rest are in %s", len(failures), total, dir)}
	}
	return nil
}

// writeAnalyzeRun writes the run directory (named by --name or from the inputs) and points latest at it; chart
// and latest failures are warnings on stderr.
func writeAnalyzeRun(ctx context.Context, run *analyze.Run, files []string, flags *analyzeFlags, stderr io.Writer) (string, error) {
	name := flags.name
	if name == "" {
		name = results.RunName(files)
	}
	dir, err := writeRun(flags.out, name, stderr, func(dir string) error {
		written, err := results.Write(ctx, dir, run, results.WriteOptions{Top: flags.top, Plots: !flags.noPlots, Jobs: flags.jobs})
		if err != nil {
			return fmt.Errorf("writing the run in %s: %w", flags.out, err)
		}
		if written.ChartErr != nil {
			fmt.Fprintf(stderr, "memscan: warning: some charts were not drawn: %v\n", written.ChartErr)
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("analyze: %w", err)
	}
	return dir, nil
}

// printAnalyzeReport prints the report on stdout in the --format asked for.
func printAnalyzeReport(stdout io.Writer, run *analyze.Run, flags *analyzeFlags) error {
	var err error
	switch flags.format {
	case "json":
		err = results.WriteJSON(stdout, run)
	case "md":
		err = results.WriteMarkdown(stdout, run, results.MarkdownOptions{})
	default:
		if !flags.verbose {
			err = results.WriteSummary(stdout, run)
			break
		}
		err = results.WriteText(stdout, run, results.TextOptions{Top: flags.top})
	}
	if err != nil {
		return fmt.Errorf("analyze: writing the report: %w", err)
	}
	return nil
}

// analyzeFiles decodes and analyzes files in a bounded pool. Results land in slots indexed like files, so the
// output order is the (sorted) input order whatever the scheduling; failures are reported on stderr as they
// happen and returned in input order.
func analyzeFiles(ctx context.Context, files []string, opts analyze.Options, flags *analyzeFlags, stderr io.Writer) ([]*analyze.Report, []analyze.Failure) {
	reports := make([]*analyze.Report, len(files))
	errs := make([]error, len(files))
	bar := newProgress(len(files), flags, stderr)
	var mu sync.Mutex // serializes stderr between the bar and failure lines
	var g errgroup.Group
	g.SetLimit(flags.jobs)
	for i, path := range files {
		g.Go(func() error {
			if ctx.Err() != nil {
				return nil
			}
			reports[i], errs[i] = analyze.AnalyzeFile(ctx, path, opts)
			errs[i] = withCommandHint(errs[i])
			mu.Lock()
			defer mu.Unlock()
			if errs[i] != nil && ctx.Err() == nil {
				if bar != nil {
					bar.Clear()
				}
				fmt.Fprintf(stderr, "memscan: %v\n", errs[i])
			}
			if bar != nil {
				bar.Add(1)
			}
			return nil
		})
	}
	g.Wait()
	if bar != nil {
		bar.Finish()
	}
	var failures []analyze.Failure
	for i, err := range errs {
		if err != nil {
			failures = append(failures, analyze.Failure{File: files[i], Error: err.Error()})
		}
	}
	return reports, failures
}

// withCommandHint adds, to the error about a file memscan itself wrote, which command reads such files (the
// decoders know no commands).
func withCommandHint(err error) error {
	if errors.Is(err, input.ErrMemscanOutput) {
		return fmt.Errorf("%w; compare run directories with memscan compare, merge rank summaries with memscan merge", err)
	}
	return err
}

// newProgress returns a progress bar on stderr, or nil when it should not be shown.
func newProgress(n int, flags *analyzeFlags, stderr io.Writer) *progressbar.ProgressBar {
	show := false
	switch {
	case flags.quiet || flags.progress == "never":
	case flags.progress == "always":
		show = true
	default:
		f, ok := stderr.(*os.File)
		show = ok && term.IsTerminal(int(f.Fd()))
	}
	if !show || n == 0 {
		return nil
	}
	return progressbar.NewOptions(n,
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetDescription("analyzing"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(100*time.Millisecond),
	)
}

// summarySuffix names the rank-summary files that --summary-only writes and memscan merge reads.
const summarySuffix = results.SummarySuffix

// writeRankSummaries is the --summary-only path: one compact merge.RankSummary per input, written beside the
// input (or into --out), so that each rank can be summarized where its snapshot lives and merged anywhere.
func writeRankSummaries(run *analyze.Run, failures []analyze.Failure, total int, flags *analyzeFlags, stdout, stderr io.Writer) error {
	if flags.summaryDir != "" {
		if err := os.MkdirAll(flags.summaryDir, 0o755); err != nil {
			return fmt.Errorf("analyze: --out: %w", err)
		}
	}
	for _, r := range run.Inputs {
		path := r.File + summarySuffix
		if flags.summaryDir != "" {
			// Inputs from several folders may share a base name (rank0_memory_snapshot.pickle in every
			// iteration_N), so the name also carries what the directories say about rank and iteration.
			path = filepath.Join(flags.summaryDir, results.SummaryName(r.File))
		}
		s := merge.Summarize(r)
		if err := results.WriteFile(path, func(w io.Writer) error { return merge.WriteSummary(w, s) }); err != nil {
			return fmt.Errorf("analyze: %w", err) // WriteFile's error names the path
		}
		if !flags.quiet {
			rank := "-" // the path names no rank
			if r.Rank >= 0 {
				rank = strconv.Itoa(r.Rank)
			}
			fmt.Fprintf(stdout, "%s: rank %s, %s\n", r.File, rank, summaryMeasures(r, s))
			fmt.Fprintf(stderr, "wrote %s\n", path)
		}
	}
	if len(failures) > 0 {
		return &exitError{code: exitPartial, err: fmt.Errorf("analyze: %d of %d input(s) failed", len(failures), total)}
	}
	return nil
}

// summaryMeasures renders the --summary-only line's measures with what the input kind recorded: a tracer file,
// profiler timeline or log has no allocator totals, so those print "-" rather than a made-up 0 B.
func summaryMeasures(r *analyze.Report, s *merge.RankSummary) string {
	dash := func(n int64) string {
		if n < 0 {
			return "-"
		}
		return units.Bytes(n)
	}
	reserved, allocated, peak, more := "-", "-", dash(s.PeakBytes), ""
	switch p := r.Part.(type) {
	case *analyze.SnapshotReport:
		reserved, allocated = dash(p.ReservedBytes), dash(p.AllocatedBytes)
	case *analyze.TracerReport:
		more = ", listed " + units.Bytes(p.ListedBytes)
	case *analyze.LogReport:
		if p.Log.PeakAllocatedBytes < 0 {
			peak = "-" // the log prints no allocated measure
		}
		more = ", peak reserved " + dash(p.Log.PeakReservedBytes)
	}
	return fmt.Sprintf("reserved %s, allocated %s, peak %s%s", reserved, allocated, peak, more)
}

// allocatorOptions turns --alloc-conf, --gpu and --device-memory into the allocator replay's options; a bad
// setting, an unknown GPU or an unreadable size is a usage error naming it.
func allocatorOptions(f *analyzeFlags) (analyze.AllocatorOptions, error) {
	var o analyze.AllocatorOptions
	if f.allocConf != "" {
		cfg, err := allocator.ParseConf(f.allocConf)
		if err == nil {
			err = cfg.Validate()
		}
		if err != nil {
			return o, usageErrorf("analyze: --alloc-conf: %v", err)
		}
		o.WhatIf = &cfg
	}
	switch {
	case f.gpu != "" && f.deviceMemory != "":
		return o, usageErrorf("analyze: give --gpu or --device-memory, not both")
	case f.gpu != "":
		g, err := static.LookupGPU(f.gpu)
		if err != nil {
			return o, usageErrorf("analyze: --gpu: %v", err)
		}
		o.TotalMemory = g.MemoryBytes()
		o.CapacitySource = fmt.Sprintf("--gpu %s (%s of device memory, %s assumed for the CUDA context)", g.Key, units.Bytes(o.TotalMemory), units.Bytes(allocator.ContextReserve))
	case f.deviceMemory != "":
		n, err := units.ParseBytes(f.deviceMemory)
		if err != nil {
			return o, usageErrorf("analyze: --device-memory: %v", err)
		}
		o.TotalMemory = n
		o.CapacitySource = fmt.Sprintf("--device-memory %s (%s assumed for the CUDA context)", units.Bytes(n), units.Bytes(allocator.ContextReserve))
	}
	if o.TotalMemory > 0 {
		if o.Capacity = allocator.UsableCapacity(o.TotalMemory); o.Capacity == 0 {
			return o, usageErrorf("analyze: device memory %s leaves nothing beside the %s assumed for the CUDA context", units.Bytes(o.TotalMemory), units.Bytes(allocator.ContextReserve))
		}
	}
	return o, nil
}
