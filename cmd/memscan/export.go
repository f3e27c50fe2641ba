package main

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/spf13/pflag"
	"golang.org/x/term"

	"github.com/memscan/memscan/categorize"
	"github.com/memscan/memscan/export"
	"github.com/memscan/memscan/input"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/results"
	"github.com/memscan/memscan/units"
)

const exportHelp = `Usage: memscan export --format FORMAT [flags] -o FILE INPUT

Write an allocator snapshot (pickle, or its JSON rendition) in a format other tools read:

  pprof      gzipped profile.proto of live memory by allocation stack (--at snapshot or peak); sample types
             inuse_space (requested bytes, default), inuse_objects and allocated_space (block bytes); labels
             category, site, stream, state, device. Try: go tool pprof -http=: FILE, go tool pprof -top
             -tagleaf=site FILE (sites as memscan names them), go tool pprof -diff_base=BEFORE AFTER
  perfetto   Chrome trace JSON for ui.perfetto.dev or chrome://tracing: counter tracks of allocated/reserved
             memory and of live memory per category for every device (process = rank), instant events for OOMs,
             snapshots, annotate entries and record_function annotations
  collapsed  folded stacks as torch.cuda._memory_viz memory writes them (flamegraph.pl, speedscope, inferno)
  json       the snapshot dict as JSON with PyTorch's key names (the PyTorch memory viewer opens it)
  slice      a smaller snapshot pickle (protocol 4) for the PyTorch memory viewer: the trace cut to --window
             and/or to the allocations of the --top N creation sites; the allocator state is kept whole

Flags:
%s
Exit status: 0 ok; 1 usage error; 2 the input could not be read or exported.

Examples:
  memscan export --format pprof --at peak -o peak.pb.gz rank0_memory_snapshot.pickle
  memscan export --format perfetto -o memory_trace.json rank0_memory_snapshot.pickle
  memscan export --format slice --window 200000:260000 -o step3.pickle huge_snapshot.pickle
  memscan export --format collapsed snapshot.pickle | flamegraph.pl > memory.svg
`

type exportFlags struct {
	format, at, window, out, rules string
	top, rank                      int
}

func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := &exportFlags{}
	fs := pflag.NewFlagSet("export", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.format, "format", "", "pprof, perfetto, collapsed, json or slice (required)")
	fs.StringVar(&f.at, "at", "snapshot", "pprof: live memory at the snapshot or at each device's trace peak (snapshot|peak)")
	fs.StringVar(&f.window, "window", "", "slice: keep trace events START:END (event indices, half-open; either side may be empty)")
	fs.IntVar(&f.top, "top", 0, "slice: keep only the trace events of the N creation sites with the most bytes")
	fs.StringVarP(&f.out, "output", "o", "-", "output file ('-' for stdout; binary formats refuse a terminal)")
	fs.IntVar(&f.rank, "rank", -1, "perfetto: rank used as the trace process id (default: from the path, else 0)")
	fs.StringVar(&f.rules, "rules", "", "category rule file (YAML or JSON) that extends or overrides the built-in rules")
	help := fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		return usageErrorf("export: %v (see memscan export --help)", err)
	}
	if *help {
		fmt.Fprintf(stdout, exportHelp, fs.FlagUsages())
		return nil
	}
	if f.format == "" {
		return usageErrorf("export: --format is required (pprof, perfetto, collapsed, json or slice)")
	}
	format, err := export.ParseFormat(f.format)
	if err != nil {
		return usageErrorf("export: %v", err)
	}
	at, err := export.ParseAt(f.at)
	if err != nil {
		return usageErrorf("export: %v", err)
	}
	opt := export.Options{At: at, TopN: f.top}
	switch {
	case fs.NArg() != 1:
		return usageErrorf("export: want exactly one INPUT, got %d", fs.NArg())
	case fs.Changed("at") && format != export.FormatPprof:
		return usageErrorf("export: --at applies to --format pprof only")
	case (f.window != "" || fs.Changed("top")) && format != export.FormatSlice:
		return usageErrorf("export: --window and --top apply to --format slice only")
	case fs.Changed("top") && f.top < 1:
		return usageErrorf("export: --top must be at least 1, got %d", f.top)
	case format == export.FormatSlice && f.window == "" && f.top == 0:
		return usageErrorf("export: --format slice needs --window START:END and/or --top N")
	case fs.Changed("rank") && f.rank < 0:
		return usageErrorf("export: --rank must be 0 or more, got %d", f.rank)
	}
	if f.window != "" {
		w, err := export.ParseWindow(f.window)
		if err != nil {
			return usageErrorf("export: %v", err)
		}
		opt.Window = &w
	}
	if f.out == "-" && format.Binary() {
		if fd, ok := stdout.(interface{ Fd() uintptr }); ok && term.IsTerminal(int(fd.Fd())) {
			return usageErrorf("export: --format %s is binary; give -o FILE or redirect stdout", format)
		}
	}
	rules := categorize.Default()
	if f.rules != "" {
		if rules, err = categorize.LoadFile(f.rules, rules); err != nil {
			return usageErrorf("export: --rules: %v", err)
		}
	}
	path := fs.Arg(0)
	in, err := load.DecodeFile(ctx, path)
	if err != nil {
		return &exitError{code: exitFailed, err: fmt.Errorf("export: %w", withCommandHint(err))}
	}
	if in.Snapshot == nil {
		return &exitError{code: exitFailed, err: fmt.Errorf("export: %s is %s, not an allocator snapshot; only snapshots can be exported", path, in.Format)}
	}
	opt.Classify, opt.Source, opt.Rank = export.RulesClassifier(rules), path, f.rank
	if opt.Rank < 0 {
		if opt.Rank = input.ParsePath(path).Rank; opt.Rank < 0 {
			opt.Rank = 0
		}
	}
	if caveat := export.Caveat(in.Snapshot, format, opt); caveat != "" {
		fmt.Fprintf(stderr, "memscan: warning: %s %s\n", path, caveat)
	}
	var kept []export.SiteBytes
	write := func(w io.Writer) (err error) {
		kept, err = export.Write(ctx, w, in.Snapshot, format, opt)
		return err
	}
	if f.out == "-" {
		bw := bufio.NewWriterSize(stdout, 1<<16)
		if err := write(bw); err != nil {
			return &exitError{code: exitFailed, err: fmt.Errorf("export: %w", err)}
		}
		if err := bw.Flush(); err != nil {
			return fmt.Errorf("export: %w", err)
		}
	} else if err := results.WriteFileAtomic(f.out, write); err != nil {
		return &exitError{code: exitFailed, err: fmt.Errorf("export: %w", err)}
	}
	for _, k := range kept {
		fmt.Fprintf(stderr, "kept site %s (%s)\n", k.Site, units.Bytes(k.Bytes))
	}
	if f.out != "-" {
		fmt.Fprintf(stderr, "wrote %s\n", f.out)
	}
	return nil
}
