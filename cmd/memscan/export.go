package main

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"golang.org/x/term"

	"github.com/memscan/memscan/internal/export"
	"github.com/memscan/memscan/internal/input"
	"github.com/memscan/memscan/internal/pipeline"
	"github.com/memscan/memscan/internal/results"
	"github.com/memscan/memscan/internal/units"
)

var exportHelp = helpDoc{
	usage: []string{"memscan export --format FORMAT [flags] -o FILE INPUT"},
	description: `
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
             and/or to the allocations of the --top N creation sites; the allocator state is kept whole`,
	examples: []string{
		"memscan export --format pprof --at peak -o peak.pb.gz rank0_memory_snapshot.pickle",
		"memscan export --format perfetto -o memory_trace.json rank0_memory_snapshot.pickle",
		"memscan export --format slice --window 200000:260000 -o step3.pickle huge_snapshot.pickle",
		"memscan export --format collapsed snapshot.pickle | flamegraph.pl > memory.svg",
	},
	exits: []exitDoc{
		{exitOK, "the export was written"},
		{exitUsage, "usage error (bad flag, a flag the format does not take, unreadable rule file, a binary format to a terminal, ...)"},
		{exitFailed, "the input could not be read or exported"},
		writeFailedDoc,
		interruptedDoc,
	},
}

// exportFlags are the flags of memscan export; format, opt and input are what they ask for once parsed.
type exportFlags struct {
	formatName, at, window, out, rules string
	top, rank                          int
	format                             export.Format
	opt                                export.Options
	input                              string
}

func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, helped, err := parseExportFlags(args, stdout, stderr)
	if helped || err != nil {
		return err
	}
	snap, err := pipeline.Snapshot(ctx, f.input)
	if err != nil {
		return &exitError{code: exitFailed, err: fmt.Errorf("export: %w", err)}
	}
	if caveat := export.Caveat(snap, f.format, f.opt); caveat != "" {
		fmt.Fprintf(stderr, "memscan: warning: %s %s\n", f.input, caveat)
	}
	var kept []export.SiteBytes
	write := func(w io.Writer) (err error) {
		kept, err = export.Write(ctx, w, snap, f.format, f.opt)
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

func parseExportFlags(args []string, stdout, stderr io.Writer) (*exportFlags, bool, error) {
	f := &exportFlags{}
	c := newCmdLine("export", exportHelp, stderr)
	c.formatFlag(&f.formatName, "", export.FormatNames()...)
	c.StringVar(&f.at, "at", "snapshot", "pprof: live memory at the snapshot or at each device's trace peak (snapshot|peak)")
	c.StringVar(&f.window, "window", "", "slice: keep trace events START:END (event indices, half-open; either side may be empty)")
	c.IntVar(&f.top, "top", 0, "slice: keep only the trace events of the N creation sites with the most bytes")
	c.StringVarP(&f.out, "output", "o", "-", "output file ('-' for stdout; binary formats refuse a terminal)")
	c.IntVar(&f.rank, "rank", -1, "perfetto: rank used as the trace process id (default: from the path, else 0)")
	c.rulesFlag(&f.rules)
	if helped, err := c.parse(args, stdout); helped || err != nil {
		return nil, helped, err
	}
	if f.formatName == "" {
		return nil, false, usageErrorf("export: --format is required (%s)", orList(export.FormatNames()))
	}
	format, err := export.ParseFormat(f.formatName)
	if err != nil {
		return nil, false, usageErrorf("export: %v", err)
	}
	at, err := export.ParseAt(f.at)
	if err != nil {
		return nil, false, usageErrorf("export: %v", err)
	}
	if err := checkExportFlags(c, f, format); err != nil {
		return nil, false, err
	}
	f.format, f.input = format, c.Arg(0)
	f.opt = export.Options{At: at, TopN: f.top, Rank: f.rank, Source: f.input}
	if f.window != "" {
		w, err := export.ParseWindow(f.window)
		if err != nil {
			return nil, false, usageErrorf("export: %v", err)
		}
		f.opt.Window = &w
	}
	if f.out == "-" && format.Binary() {
		if fd, ok := stdout.(interface{ Fd() uintptr }); ok && term.IsTerminal(int(fd.Fd())) {
			return nil, false, usageErrorf("export: --format %s is binary; give -o FILE or redirect stdout", format)
		}
	}
	rules, err := c.loadRules(f.rules)
	if err != nil {
		return nil, false, err
	}
	f.opt.Classify = export.RulesClassifier(rules)
	if f.opt.Rank < 0 {
		if f.opt.Rank = input.ParsePath(f.input).Rank; f.opt.Rank < 0 {
			f.opt.Rank = 0
		}
	}
	return f, false, nil
}

// checkExportFlags refuses a command line whose flags do not fit the format.
func checkExportFlags(c *cmdLine, f *exportFlags, format export.Format) error {
	switch {
	case c.NArg() != 1:
		return usageErrorf("export: want exactly one INPUT, got %d", c.NArg())
	case c.Changed("at") && format != export.FormatPprof:
		return usageErrorf("export: --at applies to --format pprof only")
	case (f.window != "" || c.Changed("top")) && format != export.FormatSlice:
		return usageErrorf("export: --window and --top apply to --format slice only")
	case c.Changed("top") && f.top < 1:
		return usageErrorf("export: --top must be at least 1, got %d", f.top)
	case format == export.FormatSlice && f.window == "" && f.top == 0:
		return usageErrorf("export: --format slice needs --window START:END and/or --top N")
	case c.Changed("rank") && f.rank < 0:
		return usageErrorf("export: --rank must be 0 or more, got %d", f.rank)
	}
	return nil
}
