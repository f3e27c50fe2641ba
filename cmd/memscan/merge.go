package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spf13/pflag"
	"github.com/vmihailenco/msgpack/v5"

	"github.com/memscan/memscan/merge"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/results"
	"github.com/memscan/memscan/units"
)

// runMerge joins per-rank summaries (rank summary msgpack files, or report.msgpack files of earlier runs) into
// one cross-rank report with merge.MergeFiles.
func runMerge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("merge", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	usage := func(w io.Writer) {
		fs.SetOutput(w)
		fmt.Fprintln(w, "Usage: memscan merge [flags] SUMMARIES...|DIR\n\n"+
			"Join per-rank summaries (memscan analyze --summary-only output, or report.msgpack files) into one\n"+
			"cross-rank report: per-rank table, imbalance, outlier ranks, per-stage view.\n\nFlags:")
		fs.PrintDefaults()
		fs.SetOutput(stderr)
	}
	fs.Usage = func() { usage(stderr) }
	out := fs.String("out", "results", "results root; the report goes to <out>/<timestamp>_<name>/")
	name := fs.String("name", "", "run name (default derived from the inputs)")
	stages := fs.Int("stages", 0, "pipeline stages: derive each rank's stage from its rank (ranks split into contiguous groups)")
	world := fs.Int("world", 0, "world size for --stages (default: the highest rank found + 1)")
	jobs := fs.Int("jobs", runtime.GOMAXPROCS(0), "summaries read in parallel")
	rows := fs.Int("rows", report.DefaultMergeRows, "per-rank rows printed on stdout (0 = all; the files always hold all)")
	format := fs.String("format", "text", "stdout format: text or json")
	noWrite := fs.Bool("no-write", false, "print only; do not create a run directory")
	iterationArg := fs.String("iteration", "all", "merge only the summaries of this iteration: N ≥ 0, none (summaries whose iteration is unknown) or all (ranks are compared within one step)")
	help := fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		return usageErrorf("merge: %v", err)
	}
	if *help {
		usage(stdout) // help asked for is output, like every other command's
		return nil
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return usageErrorf("merge: give summary files or a directory")
	}
	iteration, err := merge.ParseIterationFilter(*iterationArg)
	if err != nil {
		return usageErrorf("merge: --iteration: %v", err)
	}
	if *format != "text" && *format != "json" {
		return usageErrorf("merge: --format must be text or json, not %q", *format)
	}
	if *stages < 0 || *world < 0 || *jobs < 1 {
		return usageErrorf("merge: --stages, --world must be ≥ 0 and --jobs ≥ 1")
	}
	if !*noWrite {
		if err := checkOutDir(*out); err != nil {
			return usageErrorf("merge: --out %s: %v", *out, err)
		}
	}
	files, unreadable, err := merge.SummaryFiles(fs.Args())
	if err != nil {
		return usageErrorf("merge: %v", err)
	}
	if len(files) == 0 {
		for _, u := range unreadable {
			fmt.Fprintf(stderr, "memscan: merge: %v\n", u)
		}
		return &exitError{code: exitFailed, err: fmt.Errorf("merge: no .msgpack files under %s", strings.Join(fs.Args(), ", "))}
	}
	res, failures, err := merge.MergeFiles(ctx, files, merge.FilesOptions{
		Options: merge.Options{Stages: *stages, World: *world}, Jobs: *jobs, Iterations: iteration})
	if err != nil {
		return err
	}
	// What could not even be listed failed too: the rank set is incomplete.
	failures = append(unreadable, failures...)
	for _, f := range failures {
		fmt.Fprintf(stderr, "memscan: merge: %v\n", f)
	}
	if res.Ranks == 0 {
		if !iteration.All() && len(failures)-len(unreadable) < len(files) {
			return &exitError{code: exitFailed, err: fmt.Errorf("merge: no summary of iteration %s", iteration)}
		}
		return &exitError{code: exitFailed, err: errors.New("merge: no summary could be read")}
	}
	if !*noWrite {
		dir, err := writeMergeRun(*out, *name, fs.Arg(0), res, stderr)
		if err != nil {
			return &exitError{code: exitFailed, err: fmt.Errorf("merge: %w", err)}
		}
		fmt.Fprintf(stderr, "wrote %s\n", dir)
	}
	switch *format {
	case "json":
		if err := units.WriteJSON(stdout, res); err != nil {
			return err
		}
	default:
		if err := results.WriteCrossRankText(stdout, res, *rows); err != nil {
			return err
		}
	}
	if len(failures) > 0 {
		return &exitError{code: exitPartial, err: fmt.Errorf("merge: %d of %d files or folders could not be read", len(failures), len(files)+len(unreadable))}
	}
	return nil
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
