package main

import (
	"context"
	"fmt"
	"io"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/internal/compare"
	"github.com/memscan/memscan/internal/pipeline"
	"github.com/memscan/memscan/internal/results"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/report"
)

var compareHelp = helpDoc{
	usage: []string{"memscan compare [flags] BEFORE AFTER", "memscan compare [flags] --baseline BASE OTHER..."},
	description: `
Diff runs: allocator snapshots, tracer JSON, or memscan run directories (their report.msgpack). Totals,
categories, creation sites and modules side by side with deltas; the change of the trace peak attributed to
code and categories; segments present in only one snapshot (paired by device and size in address order: two
processes share no addresses). Sites are keyed by function (file and function, pprof's default), so code whose
lines moved between two versions of a script is the same site; --granularity lines keys them by line. Every
table's rows add up to its total: bytes an input's own rows do not cover (e.g. sites beyond a run directory's
top list) go to one residual row. The charts show the change of the peak when both inputs have one.

Writes <out>/<YYYYMMDD_HHMMSS>_<name>/ with compare.md, compare.json, compare_categories.png and
compare_sites.png (with --baseline and several inputs, the charts of the 2nd, 3rd, ... diff get _2, _3, ...),
and points <out>/latest at it (--no-files: print only). The report goes to stdout (compare.md, or compare.json
with --format json), "wrote DIR" to stderr.`,
	examples: []string{
		"memscan compare full_recompute.pickle selective_recompute.pickle",
		"memscan compare results/20260101_120000_bs6 results/20260101_121500_bs8",
		"memscan compare --baseline bs4.pickle bs6.pickle bs8.pickle --format json",
		"memscan compare --no-files before.pickle after.pickle   # print only",
	},
	exits: []exitDoc{
		{exitOK, "the comparison was printed and written"},
		{exitUsage, "usage error (bad flag, wrong number of inputs, unreadable rule file, --out not a directory, ...)"},
		{exitFailed, "an input could not be read or analyzed"},
		writeFailedDoc,
		interruptedDoc,
	},
}

// compareSiteLimit keeps every site of a snapshot in the comparison, so site deltas are exact.
const compareSiteLimit = 1 << 30

type compareFlags struct {
	out, name, rules, baseline, format string
	granularity                        string
	rows                               int
	noPlots, noFiles                   bool
	writeTo                            string          // results root of the run directory; "" writes none
	opts                               analyze.Options // the analysis of snapshot and tracer inputs, with the --rules
}

func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, paths, helped, err := parseCompareFlags(args, stdout, stderr)
	if helped || err != nil {
		return err
	}
	inputs := make([]compare.Input, len(paths))
	for i, p := range paths {
		in, err := pipeline.CompareInput(ctx, p, f.opts)
		if err != nil {
			return &exitError{code: exitFailed, err: fmt.Errorf("compare: %w", err)}
		}
		inputs[i] = in
	}
	cmp, err := compare.CompareWith("memscan "+version, inputs[0], inputs[1:], compare.Options{Granularity: f.granularity})
	if err != nil {
		return &exitError{code: exitFailed, err: err}
	}
	name := f.name
	if name == "" {
		name = "compare_" + results.Stem(paths[0]) + "_vs_" + results.Stem(paths[1])
		if len(paths) > 2 {
			name = fmt.Sprintf("compare_%s_vs_%d", results.Stem(paths[0]), len(paths)-1)
		}
	}
	var dir string
	if f.writeTo != "" {
		if dir, err = writeCompareRun(f, name, cmp, stderr); err != nil {
			return &exitError{code: exitFailed, err: fmt.Errorf("compare: %w", err)}
		}
	}
	if f.format == "json" {
		err = units.WriteJSON(stdout, cmp)
	} else {
		err = results.WriteCompareMarkdown(stdout, cmp, results.CompareMarkdownOptions{Rows: f.rows})
	}
	if err != nil {
		return fmt.Errorf("compare: writing the report: %w", err)
	}
	if dir != "" {
		fmt.Fprintf(stderr, "wrote %s\n", dir)
	}
	return nil
}

// parseCompareFlags returns the flags and the inputs in order, the baseline first.
func parseCompareFlags(args []string, stdout, stderr io.Writer) (*compareFlags, []string, bool, error) {
	f := &compareFlags{}
	c := newCmdLine("compare", compareHelp, stderr)
	c.outFlag(&f.out)
	c.nameFlag(&f.name, "compare_<before>_vs_<after>")
	c.rulesFlag(&f.rules)
	c.StringVar(&f.baseline, "baseline", "", "compare every INPUT with this one")
	c.formatFlag(&f.format, "md", "md", "json")
	c.IntVar(&f.rows, "top", report.DefaultCompareRows, "rows per table in compare.md (compare.json has all)")
	c.noPlotsFlag(&f.noPlots)
	c.noFilesFlag(&f.noFiles)
	c.StringVar(&f.granularity, "granularity", compare.GranularityFunctions, "key the site tables by functions (file and function) or lines (file, line and function)")
	if helped, err := c.parse(args, stdout); helped || err != nil {
		return nil, nil, helped, err
	}
	paths := c.Args()
	if f.baseline != "" {
		paths = append([]string{f.baseline}, paths...)
	}
	switch {
	case f.baseline == "" && len(paths) != 2:
		return nil, nil, false, usageErrorf("compare: want BEFORE AFTER (or --baseline BASE OTHER...), got %d input(s)", len(paths))
	case len(paths) < 2:
		return nil, nil, false, usageErrorf("compare: --baseline needs at least one other input")
	case !c.formatOK(f.format):
		return nil, nil, false, usageErrorf("compare: --format must be md or json, got %q", f.format)
	case f.granularity != compare.GranularityFunctions && f.granularity != compare.GranularityLines:
		return nil, nil, false, usageErrorf("compare: --granularity must be functions or lines, got %q", f.granularity)
	case f.rows < 1:
		return nil, nil, false, usageErrorf("compare: --top must be at least 1, got %d", f.rows)
	case f.out == "":
		return nil, nil, false, usageErrorf("compare: --out must not be empty")
	}
	var err error
	if f.writeTo, err = c.filesDir(f.out, f.noFiles, true, stderr); err != nil {
		return nil, nil, false, err
	}
	rules, err := c.loadRules(f.rules)
	if err != nil {
		return nil, nil, false, err
	}
	f.opts = analyze.Options{TopN: compareSiteLimit, Rules: rules}
	return f, paths, false, nil
}

// writeCompareRun writes the comparison's files into a new run directory (see writeRun). Charts that cannot be
// drawn are warnings.
func writeCompareRun(f *compareFlags, name string, cmp *compare.Comparison, stderr io.Writer) (string, error) {
	return writeRun(f.writeTo, name, stderr, func(dir string) error {
		chartErrs, err := results.WriteCompareFiles(dir, cmp, results.CompareFilesOptions{Rows: f.rows, Plots: !f.noPlots})
		for _, e := range chartErrs {
			fmt.Fprintf(stderr, "memscan: warning: %v\n", e)
		}
		return err
	})
}
