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
	"syscall"

	"github.com/memscan/memscan/allocator"
	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/gpu"
	"github.com/memscan/memscan/internal/merge"
	"github.com/memscan/memscan/internal/pipeline"
	"github.com/memscan/memscan/internal/results"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/static"
)

var analyzeHelp = helpDoc{
	usage: []string{"memscan analyze [flags] INPUT..."},
	description: `
Analyze PyTorch CUDA memory snapshots (torch.cuda.memory._dump_snapshot pickles, any torch version), memory
tracer JSON, torch.profiler memory timelines and training logs: where the GPU memory went, what held it at the
peak, and what to change.

INPUT is a file, a directory or a glob. Directories are searched for files named like inputs (*.pickle, *.pkl,
*snapshot*, memory/tracer/timeline *.json, *.log, each also as .gz), including both torchtitan layouts
iteration_N/rankR_memory_snapshot.pickle and step_NNNNNNNNNNNN/RRRRRR_step_N.pickle; what a search skips
(other files, memscan's own run directories, hidden folders) is noted on stderr. A file named as an argument is
read whatever its name: the content decides the format, never the extension. Inputs are reported in the order
of the arguments, the files of one directory or glob in natural order (rank2 before rank10).

Each run writes <out>/<YYYYMMDD_HHMMSS>_<name>/ with analysis_report.txt, README.md (findings with the charts),
summary.json (integer bytes), report.msgpack (the whole report) and PNG charts, and points <out>/latest at it.
The report goes to stdout (--format json prints summary.json, md the findings of README.md); progress, warnings
and "wrote DIR" go to stderr. --no-files prints only; where the default --out cannot be written (a read-only
working directory), the report is still printed, with a warning that no files were written.

Allocator replay: every snapshot with a trace is replayed through a model of PyTorch's caching allocator under
its recorded settings; the report compares the replayed peak reserved memory with the recorded one. With
--alloc-conf it is replayed under those settings too (recorded vs replayed vs what-if). The device's capacity
decides when the allocator frees its cache and retries: it comes from --gpu or --device-memory, else from an
out-of-memory event in the trace, else none is assumed (the report says which).`,
	examples: []string{
		"memscan analyze outputs/memory_snapshot/iteration_1/rank0_memory_snapshot.pickle",
		"memscan analyze --out results --name lbs6_baseline rank0_memory_snapshot.pickle",
		"memscan analyze --jobs 8 --no-plots outputs/memory_snapshot/          # every rank and iteration",
		"memscan analyze 'outputs/memory_snapshot/iteration_*/rank0_*.pickle'  # one rank across iterations",
		"memscan analyze --format json --quiet snapshot.pickle > summary.json",
		"memscan analyze --no-files snapshot.pickle.gz                         # print only",
		"memscan analyze --summary-only --out /dump/summaries rank7_memory_snapshot.pickle   # then: memscan merge /dump/summaries",
		"memscan analyze --alloc-conf expandable_segments:True --gpu h100-sxm snapshot.pickle  # what would it reserve?",
	},
	exits: []exitDoc{
		{exitOK, "every input was analyzed"},
		{exitUsage, "usage error (bad flag, unreadable rule file, --out not a directory, ...)"},
		{exitFailed, "no input could be analyzed"},
		{exitPartial, "some inputs failed; the others were analyzed and written"},
		writeFailedDoc,
		interruptedDoc,
	},
}

// analyzeFlags are the parsed flags of memscan analyze.
type analyzeFlags struct {
	out     string
	name    string
	jobs    int
	rules   string
	top     int
	format  string
	noPlots bool
	noFiles bool
	// writeTo is the results root the run directory goes into; "" writes none (--no-files, or a default --out
	// that cannot be written).
	writeTo  string
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

	// opts and staticCfg are what the flags ask of the analysis, built once they have parsed.
	opts      analyze.Options
	staticCfg *static.Config
}

// register declares the flags of memscan analyze on c, bound to f.
func (f *analyzeFlags) register(c *cmdLine) {
	// -o was analyze's spelling of --out; it keeps working, with a note, while export's -o is an output file.
	c.outFlagP(&f.out, "o")
	c.nameFlag(&f.name, "derived from the inputs, e.g. iter1_rank0 or iter1_8ranks")
	c.IntVarP(&f.jobs, "jobs", "j", runtime.NumCPU(), "inputs decoded and analyzed (and charts, reports and page timelines written) at once")
	c.describeDefault("jobs", "one per CPU")
	c.rulesFlag(&f.rules)
	c.IntVar(&f.top, "top", report.DefaultTopN, "largest allocations and sites to report per input")
	c.formatFlag(&f.format, "text", "text", "json", "md")
	c.noPlotsFlag(&f.noPlots)
	c.noFilesFlag(&f.noFiles)
	c.StringVar(&f.progress, "progress", "auto", "progress line on stderr (bytes read, files done, the stage of the latest input): auto (when stderr is a terminal), always or never")
	c.IntVar(&f.rank, "rank", -1, "rank of a single input whose path does not say it (-1: read it from the path)")
	c.BoolVarP(&f.verbose, "verbose", "v", false, "print the full text report (analysis_report.txt) instead of the summary")
	c.BoolVarP(&f.quiet, "quiet", "q", false, "print no progress or \"wrote DIR\" line, and no report unless --format is given; failures still go to stderr")
	c.StringVar(&f.static, "static", "", "static-estimator config (JSON or YAML) to compare predictions with these measurements")
	c.BoolVar(&f.summaryOnly, "summary-only", false, "write only a compact rank summary per input (INPUT.summary.msgpack beside it, or in --out when given) for memscan merge; no run directory")
	c.StringVar(&f.allocConf, "alloc-conf", "", "replay each trace through the caching-allocator model under these PYTORCH_CUDA_ALLOC_CONF settings too, e.g. expandable_segments:True or max_split_size_mb:512,garbage_collection_threshold:0.6")
	c.StringVar(&f.gpu, "gpu", "", "device of the allocator replay, a key of memscan gpus (its memory less 1 GiB for the CUDA context is the capacity)")
	c.StringVar(&f.deviceMemory, "device-memory", "", "device memory of the allocator replay, e.g. 79.2GiB (GB means 10^9 bytes: an \"80GB\" card holds about 79.2 GiB, 85 GB; --gpu knows catalogued cards); less 1 GiB for the CUDA context is the capacity")
	f.maxInputSize = sizeFlag(load.DefaultMaxInputSize())
	c.Var(&f.maxInputSize, "max-input-size", "largest input, after decompression, that is decoded (e.g. 512MiB, 20GiB); larger ones fail at once instead of exhausting memory")
	c.describeDefault("max-input-size", "half of this machine's memory")
}

func parseAnalyzeFlags(args []string, stdout, stderr io.Writer) (*analyzeFlags, []string, bool, error) {
	f := &analyzeFlags{}
	c := newCmdLine("analyze", analyzeHelp, stderr)
	f.register(c)
	if helped, err := c.parse(args, stdout); helped || err != nil {
		return nil, nil, helped, err
	}
	f.rankSet = c.Changed("rank")
	f.formatSet = c.Changed("format")
	if f.summaryOnly && c.Changed("out") {
		f.summaryDir = f.out
	}
	switch {
	case f.jobs < 1:
		return nil, nil, false, usageErrorf("analyze: --jobs must be at least 1, got %d", f.jobs)
	case f.top < 1:
		return nil, nil, false, usageErrorf("analyze: --top must be at least 1, got %d", f.top)
	case !c.formatOK(f.format):
		return nil, nil, false, usageErrorf("analyze: --format must be text, json or md, got %q", f.format)
	case f.progress != "auto" && f.progress != "always" && f.progress != "never":
		return nil, nil, false, usageErrorf("analyze: --progress must be auto, always or never, got %q", f.progress)
	case f.rankSet && f.rank < 0:
		return nil, nil, false, usageErrorf("analyze: --rank must be 0 or more, got %d", f.rank)
	case f.out == "":
		return nil, nil, false, usageErrorf("analyze: --out must not be empty")
	}
	if c.NArg() == 0 {
		return nil, nil, false, usageErrorf("analyze: no INPUT given (see memscan analyze --help)")
	}
	var err error
	switch {
	case f.summaryOnly && f.noFiles:
		return nil, nil, false, usageErrorf("analyze: --summary-only writes the rank summaries that --no-files would not; give one of them")
	case f.summaryOnly && f.summaryDir != "":
		if err := checkOutDir(f.out); err != nil {
			return nil, nil, false, usageErrorf("analyze: --out %s: %v", f.out, err)
		}
	case !f.summaryOnly: // without --out, --summary-only writes beside each input
		if f.writeTo, err = c.filesDir(f.out, f.noFiles, !f.quiet || f.formatSet, stderr); err != nil {
			return nil, nil, false, err
		}
	}
	if f.opts, f.staticCfg, err = analyzeOptions(c, f); err != nil {
		return nil, nil, false, err
	}
	return f, c.Args(), false, nil
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

func runAnalyze(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	flags, inputs, helped, err := parseAnalyzeFlags(args, stdout, stderr)
	if helped || err != nil {
		return err
	}
	var mem memoryGovernor
	defer mem.stop()
	if flags.summaryOnly {
		return summarizeInputs(ctx, inputs, flags, &mem, stdout, stderr)
	}
	run, files, total, err := analyzeInputs(ctx, inputs, flags, &mem, stderr)
	if err != nil {
		return err
	}
	// The decoded inputs are garbage now, and the limit has let the heap grow near its bound: collect them before
	// rendering allocates on top (a cheap cycle, since little is still live).
	runtime.GC()
	var dir string
	if flags.writeTo != "" {
		if dir, err = writeAnalyzeRun(ctx, run, files, flags, stderr); err != nil {
			return err
		}
	}
	if !flags.quiet || flags.formatSet {
		if err := printAnalyzeReport(stdout, run, flags); err != nil {
			return err
		}
	}
	if !flags.quiet && dir != "" {
		fmt.Fprintf(stderr, "wrote %s\n", dir)
	}
	if flags.staticCfg != nil {
		if err := analyzeStaticJoin(flags.static, *flags.staticCfg, run.Inputs, dir, flags.noPlots, flags.quiet || flags.format != "text", stdout, stderr); err != nil {
			return err
		}
	}
	if len(run.Failures) > 0 {
		where := "; the rest were analyzed"
		if dir != "" {
			where = "; the rest are in " + dir
		}
		return &exitError{code: exitPartial, err: fmt.Errorf("analyze: %d of %d input(s) failed%s", len(run.Failures), total, where)}
	}
	return nil
}

// analyzeOptions builds the analysis options from the flags, and reads the --static config; a bad rule file,
// allocator setting or config is a usage error, found before any input is decoded.
func analyzeOptions(c *cmdLine, flags *analyzeFlags) (analyze.Options, *static.Config, error) {
	opts := analyze.Options{TopN: flags.top, MaxInputSize: int64(flags.maxInputSize)}
	var err error
	if opts.Allocator, err = allocatorOptions(flags); err != nil {
		return opts, nil, err
	}
	// Rank summaries carry only totals, the peak, OOMs and categories; thousands of ranks need not pay for more
	// (no allocator replay, no full-resolution timeline).
	opts.SummaryOnly = flags.summaryOnly
	opts.Allocator.Skip = flags.summaryOnly
	opts.NoTimelineDetail = flags.summaryOnly
	if opts.Rules, err = c.loadRules(flags.rules); err != nil {
		return opts, nil, err
	}
	if flags.static == "" {
		return opts, nil, nil
	}
	staticCfg, err := static.LoadConfig(flags.static)
	if err != nil {
		return opts, nil, usageErrorf("analyze: --static: %v", err)
	}
	return opts, staticCfg, nil
}

// analyzeInputs finds the inputs, analyzes them and gathers the run (package pipeline): the reports of the
// inputs that could be analyzed and the failures of the others, with progress and failures on stderr. total counts
// the inputs, with the arguments that yielded none.
func analyzeInputs(ctx context.Context, inputs []string, flags *analyzeFlags, mem *memoryGovernor, stderr io.Writer) (run *report.Run, files []string, total int, err error) {
	req, bar := pipelineRequest(inputs, flags, mem, stderr)
	if bar != nil {
		defer bar.end()
	}
	res, err := pipeline.Analyze(ctx, req)
	if err != nil {
		return nil, nil, 0, pipelineError(ctx, err)
	}
	return res.Run, res.Files, res.Total, nil
}

// pipelineRequest is the pipeline request of memscan analyze: the inputs and options from the flags, and events
// that start the memory governor and print failures, warnings and notes on stderr, above the progress line bar when
// one is shown (nil otherwise; the caller ends it).
func pipelineRequest(inputs []string, flags *analyzeFlags, mem *memoryGovernor, stderr io.Writer) (req pipeline.Request, bar *progress) {
	bar = newProgress(flags, stderr)
	// say prints a line on stderr, above the progress line while there is one.
	say := func(format string, args ...any) { fmt.Fprintf(stderr, format, args...) }
	opts := flags.opts
	events := pipeline.Events{
		Start: func(files []string) { mem.start(files, flags.jobs) },
		// Failures and warnings name files, which may hold what a terminal acts on (an ESC): shown escaped.
		Failure: func(err error) { say("memscan: %s\n", units.Terminal(err.Error())) },
		Warning: func(err error) { say("memscan: warning: %s\n", units.Terminal(err.Error())) },
		Skipped: func(s load.Skipped) {
			if !flags.quiet {
				say("memscan: note: %s\n", units.Terminal(fmt.Sprint(s)))
			}
		},
	}
	if bar != nil {
		say = bar.printf
		opts.Read = &bar.read
		events.Start = func(files []string) {
			mem.start(files, flags.jobs)
			bar.begin(files)
		}
		events.Done = bar.fileDone
		events.Stage = bar.reached
	}
	rank := -1
	if flags.rankSet {
		rank = flags.rank
	}
	return pipeline.Request{Inputs: inputs, Discover: load.DiscoverOptions{OutRoot: flags.out, SkipDir: results.IsRunDir},
		Options: opts, Jobs: flags.jobs, Rank: rank, Static: flags.staticCfg, Tool: "memscan " + version,
		Events: events}, bar
}

// pipelineError maps an error of package pipeline to the command's: a usage error for --rank with several inputs,
// exit status 2 when nothing could be analyzed.
func pipelineError(ctx context.Context, err error) error {
	var rankErr *pipeline.RankError
	var noneErr *pipeline.NothingAnalyzedError
	switch {
	case errors.As(err, &rankErr):
		return usageErrorf("analyze: --rank applies to a single input, but %d were found", rankErr.Found)
	case errors.As(err, &noneErr):
		return &exitError{code: exitFailed, err: fmt.Errorf("analyze: %w", noneErr)}
	case ctx.Err() != nil:
		return fmt.Errorf("analyze: interrupted: %w", ctx.Err())
	}
	return fmt.Errorf("analyze: %w", err)
}

// writeAnalyzeRun writes the run directory (named by --name or from the inputs) and points latest at it; chart
// and latest failures are warnings on stderr.
func writeAnalyzeRun(ctx context.Context, run *report.Run, files []string, flags *analyzeFlags, stderr io.Writer) (string, error) {
	name := flags.name
	if name == "" {
		name = results.RunName(files)
	}
	dir, err := writeRun(flags.writeTo, name, stderr, func(dir string) error {
		written, err := results.Write(ctx, dir, run, results.WriteOptions{Top: flags.top, Plots: !flags.noPlots, Jobs: flags.jobs})
		if err != nil {
			return fmt.Errorf("writing the run in %s: %w", flags.writeTo, err)
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
func printAnalyzeReport(stdout io.Writer, run *report.Run, flags *analyzeFlags) error {
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

// summarySuffix names the rank-summary files that --summary-only writes and memscan merge reads.
const summarySuffix = results.SummarySuffix

// summarizeInputs is the --summary-only path: one compact merge.RankSummary per input, written beside the input (or
// into --out) as soon as its analysis ends, so that each rank can be summarized where its snapshot lives and merged
// anywhere, a batch interrupted midway keeps what it finished, and no more than --jobs reports are held at once.
func summarizeInputs(ctx context.Context, inputs []string, flags *analyzeFlags, mem *memoryGovernor, stdout, stderr io.Writer) error {
	if flags.summaryDir != "" {
		if err := os.MkdirAll(flags.summaryDir, 0o755); err != nil {
			return fmt.Errorf("analyze: --out: %w", err)
		}
	}
	req, bar := pipelineRequest(inputs, flags, mem, stderr)
	res, err := pipeline.Stream(ctx, req, func(r *report.Report) (err error) {
		bar.above(func() { err = writeRankSummary(r, flags, stdout, stderr) })
		return err
	})
	if bar != nil {
		bar.end()
	}
	if err != nil {
		return pipelineError(ctx, err)
	}
	if len(res.Failures) > 0 {
		return &exitError{code: exitPartial, err: fmt.Errorf("analyze: %d of %d input(s) failed", len(res.Failures), res.Total)}
	}
	return nil
}

// writeRankSummary writes the rank summary of one report and says so.
func writeRankSummary(r *report.Report, flags *analyzeFlags, stdout, stderr io.Writer) error {
	path := r.File + summarySuffix
	if flags.summaryDir != "" {
		// Inputs from several folders may share a base name (rank0_memory_snapshot.pickle in every
		// iteration_N), so the name also carries what the directories say about rank and iteration.
		path = filepath.Join(flags.summaryDir, results.SummaryName(r.File))
	}
	s := merge.Summarize(r, results.SummaryRun(r.File))
	// Through a temporary file renamed into place: a full disk or an interrupt never leaves a cut-short or
	// empty summary (or one over the last good one) for a later merge to meet.
	if err := results.WriteFileAtomic(path, func(w io.Writer) error { return merge.WriteSummary(w, s) }); err != nil {
		return err // WriteFileAtomic's error names the path
	}
	if !flags.quiet {
		rank := "-" // the path names no rank
		if r.Rank >= 0 {
			rank = strconv.Itoa(r.Rank)
		}
		fmt.Fprintf(stdout, "%s: rank %s, %s\n", r.File, rank, summaryMeasures(r, s))
		fmt.Fprintf(stderr, "wrote %s\n", path)
	}
	return nil
}

// summaryMeasures renders the --summary-only line's measures with what the input kind recorded: a tracer file,
// profiler timeline or log has no allocator totals, so those print "-" rather than a made-up 0 B.
func summaryMeasures(r *report.Report, s *merge.RankSummary) string {
	dash := func(n int64) string {
		if n < 0 {
			return "-"
		}
		return units.Bytes(n)
	}
	reserved, allocated, peak, more := "-", "-", dash(s.PeakBytes), ""
	switch p := r.Part.(type) {
	case *report.SnapshotReport:
		reserved, allocated = dash(p.ReservedBytes), dash(p.AllocatedBytes)
	case *report.TracerReport:
		more = ", listed " + units.Bytes(p.ListedBytes)
	case *report.LogReport:
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
		g, err := gpu.Lookup(f.gpu)
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
