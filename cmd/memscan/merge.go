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
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/vmihailenco/msgpack/v5"
	"golang.org/x/sync/errgroup"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/results"
	"github.com/memscan/memscan/units"
)

// Files that runMerge writes into its run directory.
const (
	mergeTextFile    = "cross_rank_report.txt"
	mergeJSONFile    = "cross_rank.json"
	mergeMsgpackFile = "cross_rank.msgpack"
)

// runMerge joins per-rank summaries (rank summary msgpack files, or report.msgpack files of earlier runs) into
// one cross-rank report. Summaries are read by a bounded pool; each worker folds its files into its own Merger
// and the workers' mergers are merged at the end, which gives the same result as one sequential pass because
// Merger is associative.
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
	rows := fs.Int("rows", analyze.DefaultMergeRows, "per-rank rows printed on stdout (0 = all; the files always hold all)")
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
	iteration, err := parseIterationFilter(*iterationArg)
	if err != nil {
		return usageErrorf("merge: --iteration: %v", err)
	}
	if *format != "text" && *format != "json" {
		return usageErrorf("merge: --format must be text or json, not %q", *format)
	}
	if *stages < 0 || *world < 0 || *jobs < 1 {
		return usageErrorf("merge: --stages, --world must be ≥ 0 and --jobs ≥ 1")
	}
	files, err := summaryFiles(fs.Args())
	if err != nil {
		return usageErrorf("merge: %v", err)
	}
	if len(files) == 0 {
		return &exitError{code: exitFailed, err: fmt.Errorf("merge: no .msgpack files under %s", strings.Join(fs.Args(), ", "))}
	}
	opts := analyze.MergeOptions{Stages: *stages, World: *world}
	if opts.Stages > 0 && opts.World == 0 {
		// The world is the highest rank + 1 among the summaries merged, not the file count: a folder may hold
		// several iterations of every rank. Summaries are small, so a first pass to find it is cheap.
		pre, _, err := mergeFiles(ctx, files, analyze.MergeOptions{}, *jobs, iteration)
		if err != nil {
			return err
		}
		for _, r := range pre.Result().Rows {
			opts.World = max(opts.World, r.Rank+1)
		}
	}
	merged, failures, err := mergeFiles(ctx, files, opts, *jobs, iteration)
	if err != nil {
		return err
	}
	for _, f := range failures {
		fmt.Fprintf(stderr, "memscan: merge: %v\n", f)
	}
	res := merged.Result()
	if res.Ranks == 0 {
		if !iteration.all && len(failures) < len(files) {
			return &exitError{code: exitFailed, err: fmt.Errorf("merge: no summary of iteration %s", iteration)}
		}
		return &exitError{code: exitFailed, err: errors.New("merge: no summary could be read")}
	}
	if !*noWrite {
		dir, err := writeMergeRun(*out, *name, fs.Arg(0), res)
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
		if err := res.WriteText(stdout, *rows); err != nil {
			return err
		}
	}
	if len(failures) > 0 {
		return &exitError{code: exitPartial, err: fmt.Errorf("merge: %d of %d files could not be read", len(failures), len(files))}
	}
	return nil
}

// summaryFiles expands the arguments: files as given, directories searched for *.msgpack.
func summaryFiles(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			out = append(out, a)
			continue
		}
		err = filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.EqualFold(filepath.Ext(p), ".msgpack") && !strings.Contains(filepath.Base(p), "cross_rank") {
				out = append(out, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// mergeFiles reads files with a bounded pool. Memory stays at one Merger per worker plus the files in flight.
// iteration says which summaries are kept.
func mergeFiles(ctx context.Context, files []string, opts analyze.MergeOptions, jobs int, iteration iterationFilter) (*analyze.Merger, []error, error) {
	jobs = min(jobs, len(files))
	mergers := make([]*analyze.Merger, jobs)
	fails := make([][]error, jobs)
	next := make(chan string)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(next)
		for _, f := range files {
			select {
			case next <- f:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	for w := range jobs {
		mergers[w] = analyze.NewMerger(opts)
		g.Go(func() error {
			for f := range next {
				sums, err := analyze.ReadSummaryFile(f)
				if err != nil {
					fails[w] = append(fails[w], err)
					continue
				}
				for _, s := range sums {
					if !iteration.keeps(s.Iteration) {
						continue
					}
					mergers[w].Add(s)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	total := analyze.NewMerger(opts)
	var failures []error
	for w := range jobs {
		total.Merge(mergers[w])
		failures = append(failures, fails[w]...)
	}
	return total, failures, nil
}

// iterationFilter selects summaries by iteration: all of them, or those of one iteration, where -1 stands for
// summaries whose iteration is unknown (a snapshot path that does not name it).
type iterationFilter struct {
	all  bool
	want int
}

// parseIterationFilter reads --iteration: "all" (or -1, its earlier spelling), "none"/"unknown", or N ≥ 0.
func parseIterationFilter(s string) (iterationFilter, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "all", "-1":
		return iterationFilter{all: true}, nil
	case "none", "unknown":
		return iterationFilter{want: -1}, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return iterationFilter{}, fmt.Errorf("want an iteration number ≥ 0, none (iteration unknown) or all, got %q", s)
	}
	return iterationFilter{want: n}, nil
}

func (f iterationFilter) keeps(iteration int) bool { return f.all || iteration == f.want }

func (f iterationFilter) String() string {
	switch {
	case f.all:
		return "all"
	case f.want < 0:
		return "none (unknown)"
	}
	return strconv.Itoa(f.want)
}

// writeMergeRun writes the report into a new run directory and points latest at it.
// The default name is the first argument's base name (a directory, usually) and the rank count.
func writeMergeRun(root, name, firstArg string, res *analyze.CrossRank) (string, error) {
	if name == "" {
		base := strings.TrimSuffix(filepath.Base(filepath.Clean(firstArg)), filepath.Ext(firstArg))
		name = results.SanitizeName(base) + "_merge_" + fmt.Sprint(res.Ranks) + "ranks"
	}
	dir, err := results.NewRunDir(root, name, time.Now())
	if err != nil {
		return "", err
	}
	write := func(file string, fill func(w io.Writer) error) error {
		return results.WriteFile(filepath.Join(dir, file), fill)
	}
	if err := write(mergeTextFile, func(w io.Writer) error { return res.WriteText(w, 0) }); err != nil {
		return "", err
	}
	if err := write(mergeJSONFile, func(w io.Writer) error { return units.WriteJSON(w, res) }); err != nil {
		return "", err
	}
	if err := write(mergeMsgpackFile, func(w io.Writer) error { return msgpack.NewEncoder(w).Encode(res) }); err != nil {
		return "", err
	}
	if err := results.UpdateLatest(root, dir); err != nil {
		return "", err
	}
	return dir, nil
}
