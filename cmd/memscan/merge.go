package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/memscan/memscan/internal/input"
	"github.com/memscan/memscan/internal/merge"
	"github.com/memscan/memscan/internal/results"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/report"
)

var mergeHelp = helpDoc{
	usage: []string{"memscan merge [flags] SUMMARIES...|DIR", "memscan merge [flags] --files-from LIST"},
	description: `
Join per-rank summaries (memscan analyze --summary-only output, report.msgpack files, or the
cross_rank.msgpack of earlier merges, so that per-node merges merge again) into one cross-rank report:
per-rank table, p50/p90/p99, imbalance, outlier ranks against their stage, missing and repeated
ranks, per-stage view. A file that is not a valid summary fails alone; the others are merged.`,
	examples: []string{
		"memscan merge /dump/summaries                       # every *.msgpack below it",
		"memscan merge --stages 8 --world 1024 --iteration 10 /dump/summaries",
		"memscan merge --files-from ranks.txt --world 100000     # one path per line; - reads standard input",
		"memscan merge --no-files --format json /dump/summaries > ranks.json",
	},
	exits: []exitDoc{
		{exitOK, "every summary was merged"},
		{exitUsage, "usage error (bad flag, no input, --out not a directory, ...)"},
		{exitFailed, "no summary could be read, or the sums pass what 64 bits hold"},
		{exitPartial, "some files or folders could not be read or hold invalid summaries; the others were merged"},
		writeFailedDoc,
		interruptedDoc,
	},
}

// mergeFlags are the parsed flags of memscan merge.
type mergeFlags struct {
	out, name, format, filesFrom string
	stages, world, jobs, rows    int
	noFiles                      bool
	writeTo                      string // results root of the run directory; "" writes none
	iteration                    merge.IterationFilter
}

// runMerge joins per-rank summaries (rank summary msgpack files, or report.msgpack files of earlier runs) into
// one cross-rank report with merge.MergeFiles.
func runMerge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, paths, helped, err := parseMergeFlags(args, stdout, stderr)
	if helped || err != nil {
		return err
	}
	var listed []string
	if f.filesFrom != "" {
		if listed, err = readFileList(f.filesFrom); err != nil {
			return usageErrorf("merge: --files-from: %v", err)
		}
	}
	files, unreadable, err := merge.SummaryFiles(paths, listed)
	if err != nil {
		return usageErrorf("merge: %v", err)
	}
	if len(files) == 0 {
		for _, u := range unreadable {
			fmt.Fprintf(stderr, "memscan: merge: %v\n", u)
		}
		return &exitError{code: exitFailed, err: fmt.Errorf("merge: no .msgpack files under %s", strings.Join(append(paths, listed...), ", "))}
	}
	res, failures, err := merge.MergeFiles(ctx, files, merge.FilesOptions{
		Options: merge.Options{Stages: f.stages, World: f.world}, ReadOptions: merge.ReadOptions{RunOf: input.RunOf},
		Jobs: f.jobs, Iterations: f.iteration})
	if err != nil {
		return err
	}
	// What could not even be listed failed too: the rank set is incomplete.
	failures = append(unreadable, failures...)
	for _, fail := range failures {
		fmt.Fprintf(stderr, "memscan: merge: %v\n", fail)
	}
	if res.Ranks == 0 {
		if !f.iteration.All() && len(failures)-len(unreadable) < len(files) {
			return &exitError{code: exitFailed, err: fmt.Errorf("merge: no summary of iteration %s", f.iteration)}
		}
		return &exitError{code: exitFailed, err: errors.New("merge: no summary could be read")}
	}
	first := f.filesFrom
	if len(paths) > 0 {
		first = paths[0]
	}
	if err := writeMerge(res, f, first, stdout, stderr); err != nil {
		return err
	}
	if len(failures) > 0 {
		return &exitError{code: exitPartial, err: fmt.Errorf("merge: %d of %d files or folders could not be read", len(failures), len(files)+len(unreadable))}
	}
	return nil
}

func parseMergeFlags(args []string, stdout, stderr io.Writer) (*mergeFlags, []string, bool, error) {
	f := &mergeFlags{}
	var iteration string
	c := newCmdLine("merge", mergeHelp, stderr)
	c.outFlag(&f.out)
	c.nameFlag(&f.name, "the first argument's name and the rank count, e.g. summaries_merge_8ranks")
	c.IntVar(&f.stages, "stages", 0, "pipeline stages: derive each rank's stage from its rank (ranks split into contiguous groups)")
	c.IntVar(&f.world, "world", 0, "world size: ranks 0 to world−1 are expected, and split into --stages (default: the highest rank found + 1)")
	c.StringVar(&f.filesFrom, "files-from", "", "read more summary files or folders from this list, one path per line (- for standard input)")
	c.IntVar(&f.jobs, "jobs", runtime.GOMAXPROCS(0), "summaries read in parallel")
	c.describeDefault("jobs", "one per CPU")
	c.IntVar(&f.rows, "rows", report.DefaultMergeRows, "per-rank rows printed on stdout (0 = all; the files always hold all)")
	c.formatFlag(&f.format, "text", "text", "json")
	c.noFilesFlag(&f.noFiles)
	c.retire("no-write", "no-files")
	c.StringVar(&iteration, "iteration", "all", "merge only the summaries of this iteration: N ≥ 0, none (summaries whose iteration is unknown) or all (ranks are compared within one step)")
	if helped, err := c.parse(args, stdout); helped || err != nil {
		return nil, nil, helped, err
	}
	if c.NArg() == 0 && f.filesFrom == "" {
		c.printHelp(stderr)
		return nil, nil, false, usageErrorf("merge: give summary files or a directory")
	}
	var err error
	if f.iteration, err = merge.ParseIterationFilter(iteration); err != nil {
		return nil, nil, false, usageErrorf("merge: --iteration: %v", err)
	}
	if !c.formatOK(f.format) {
		return nil, nil, false, usageErrorf("merge: --format must be text or json, not %q", f.format)
	}
	if f.stages < 0 || f.world < 0 || f.jobs < 1 {
		return nil, nil, false, usageErrorf("merge: --stages, --world must be ≥ 0 and --jobs ≥ 1")
	}
	if f.world > merge.MaxWorld || f.stages > merge.MaxWorld {
		return nil, nil, false, usageErrorf("merge: --stages and --world must be at most %d", merge.MaxWorld)
	}
	if f.writeTo, err = c.filesDir(f.out, f.noFiles, true, stderr); err != nil {
		return nil, nil, false, err
	}
	return f, c.Args(), false, nil
}

// readFileList reads --files-from: a file, or standard input for "-".
func readFileList(name string) ([]string, error) {
	if name == "-" {
		return merge.ReadFileList("standard input", os.Stdin)
	}
	fh, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return merge.ReadFileList(name, fh)
}

// writeMerge writes the run directory (unless --no-files) and prints the report in --format.
func writeMerge(res *merge.CrossRank, f *mergeFlags, firstArg string, stdout, stderr io.Writer) error {
	if f.writeTo != "" {
		dir, err := writeMergeRun(f.writeTo, f.name, firstArg, res, stderr)
		if err != nil {
			return &exitError{code: exitFailed, err: fmt.Errorf("merge: %w", err)}
		}
		fmt.Fprintf(stderr, "wrote %s\n", dir)
	}
	if f.format == "json" {
		return units.WriteJSON(stdout, res)
	}
	return results.WriteCrossRankText(stdout, res, f.rows)
}

// writeMergeRun writes the report into a new run directory (see writeRun). The default name is the first
// argument's base name (a directory, usually) and the rank count.
func writeMergeRun(root, name, firstArg string, res *merge.CrossRank, stderr io.Writer) (string, error) {
	if name == "" {
		base := strings.TrimSuffix(filepath.Base(filepath.Clean(firstArg)), filepath.Ext(firstArg))
		name = results.SanitizeName(base) + "_merge_" + fmt.Sprint(res.Ranks) + "ranks"
	}
	return writeRun(root, name, stderr, func(dir string) error {
		write := func(file string, fill func(w io.Writer) error) error {
			return results.WriteFile(filepath.Join(dir, file), fill)
		}
		if err := write(results.FileCrossRankText, func(w io.Writer) error { return results.WriteCrossRankText(w, res, 0) }); err != nil {
			return err
		}
		if err := write(results.FileCrossRankJSON, func(w io.Writer) error { return units.WriteJSON(w, res) }); err != nil {
			return err
		}
		return write(results.FileCrossRankMsgpack, func(w io.Writer) error {
			enc := msgpack.NewEncoder(w)
			enc.SetSortMapKeys(true)
			return enc.Encode(res)
		})
	})
}
