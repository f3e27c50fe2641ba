package merge

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/memscan/memscan/internal/walk"
)

// SummaryFiles expands arguments into summary files: files as given, directories (or links to them, such as a
// results root's latest) searched for *.msgpack but not the cross_rank files a merge wrote. The list is sorted
// and free of repeats. What could not be read inside a directory comes back in unreadable, for the caller to
// report as failed inputs; err is for an argument that cannot be read at all.
func SummaryFiles(args []string) (files []string, unreadable []error, err error) {
	var out []string
	for _, a := range args {
		fi, err := os.Stat(a)
		if err != nil {
			return nil, nil, err
		}
		if !fi.IsDir() {
			out = append(out, a)
			continue
		}
		problems, err := walk.Walk(a, walk.Funcs{File: func(p string, info fs.FileInfo) {
			if info.Mode().IsRegular() && strings.EqualFold(filepath.Ext(p), ".msgpack") && !strings.Contains(filepath.Base(p), "cross_rank") {
				out = append(out, p)
			}
		}})
		if err != nil {
			return nil, nil, err
		}
		for _, pr := range problems {
			if pr.Dir || strings.EqualFold(filepath.Ext(pr.Path), ".msgpack") {
				unreadable = append(unreadable, pr)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), unreadable, nil
}

// IterationFilter selects summaries by iteration: all of them, or those of one iteration, where -1 stands for
// summaries whose iteration is unknown (a snapshot path that does not name it). The zero value keeps iteration 0.
type IterationFilter struct {
	all  bool
	want int
}

// AllIterations keeps every summary.
var AllIterations = IterationFilter{all: true}

// ParseIterationFilter reads "all" (or -1, its earlier spelling), "none"/"unknown", or N ≥ 0.
func ParseIterationFilter(s string) (IterationFilter, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "all", "-1":
		return AllIterations, nil
	case "none", "unknown":
		return IterationFilter{want: -1}, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 {
		return IterationFilter{}, fmt.Errorf("want an iteration number ≥ 0, none (iteration unknown) or all, got %q", s)
	}
	return IterationFilter{want: n}, nil
}

// All reports whether the filter keeps every iteration.
func (f IterationFilter) All() bool { return f.all }

// Keeps reports whether a summary of this iteration is merged.
func (f IterationFilter) Keeps(iteration int) bool { return f.all || iteration == f.want }

func (f IterationFilter) String() string {
	switch {
	case f.all:
		return "all"
	case f.want < 0:
		return "none (unknown)"
	}
	return strconv.Itoa(f.want)
}

// FilesOptions configure MergeFiles.
type FilesOptions struct {
	Options
	// Jobs is how many files are read at once (at least 1).
	Jobs int
	// Iterations selects the summaries merged.
	Iterations IterationFilter
}

// MergeFiles reads summary files with a bounded pool and merges the summaries the filter keeps. Each worker folds
// its files into its own Merger and the workers' mergers are merged at the end, which gives the same result as
// one sequential pass because Merger is associative; memory stays at one Merger per worker plus the files in
// flight. When Stages is set without World, the world is the highest rank + 1 among the summaries kept (not the
// file count: a folder may hold several iterations of every rank); the Merger assigns those stages when the
// result is taken, so every file is read once. Files that cannot be read are returned as errors in the order of
// files, whatever order the workers met them in; only cancellation of ctx ends the merge early.
func MergeFiles(ctx context.Context, files []string, opts FilesOptions) (*CrossRank, []error, error) {
	jobs := max(1, min(opts.Jobs, len(files)))
	mergers := make([]*Merger, jobs)
	fails := make([]error, len(files)) // indexed like files, so the failures come back in file order
	next := make(chan int)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(next)
		for i := range files {
			select {
			case next <- i:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	for w := range jobs {
		mergers[w] = New(opts.Options)
		g.Go(func() error {
			for i := range next {
				sums, err := ReadSummaryFile(files[i])
				if err != nil {
					fails[i] = err
					continue
				}
				for _, s := range sums {
					if opts.Iterations.Keeps(s.Iteration) {
						mergers[w].Add(s)
					}
				}
				// The overflow Add met, not Err: that would form the deferred stage sums again after every file.
				if err := mergers[w].err; err != nil {
					return fmt.Errorf("%s: %w", files[i], err)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	total := New(opts.Options)
	for _, m := range mergers {
		total.Merge(m)
	}
	if err := total.Err(); err != nil {
		return nil, nil, err
	}
	var failures []error
	for _, err := range fails {
		if err != nil {
			failures = append(failures, err)
		}
	}
	return total.Result(), failures, nil
}
