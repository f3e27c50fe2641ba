package merge

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/memscan/memscan/internal/walk"
	"github.com/memscan/memscan/report"
)

// SummaryFiles expands arguments into summary files: files as given, directories (or links to them, such as a
// results root's latest) searched for *.msgpack (rank summaries, reports, and the cross_rank.msgpack of earlier
// merges, which merge again). listed are paths read from a list (--files-from), taken as given: one that cannot
// be read fails alone, like a file in a directory, instead of the whole merge. The list is sorted and free of
// repeats. What could not be read comes back in unreadable, for the caller to report as failed inputs; err is
// for an argument that cannot be read at all.
func SummaryFiles(args, listed []string) (files []string, unreadable []error, err error) {
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
			if info.Mode().IsRegular() && strings.EqualFold(filepath.Ext(p), ".msgpack") {
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
	out = append(out, listed...)
	slices.Sort(out)
	return slices.Compact(out), unreadable, nil
}

// maxFileList bounds a --files-from list: ten million paths of a hundred bytes.
const maxFileList = 1 << 30

// ReadFileList reads a list of paths, one per line (a final CR is dropped, so lists written on Windows read
// too); blank lines are skipped. name is used in errors.
func ReadFileList(name string, r io.Reader) ([]string, error) {
	sc := bufio.NewScanner(io.LimitReader(r, maxFileList+1))
	sc.Buffer(make([]byte, 64<<10), maxName+2)
	var out []string
	var read int64
	for line := 1; sc.Scan(); line++ {
		read += int64(len(sc.Bytes())) + 1
		if read > maxFileList {
			return nil, fmt.Errorf("%s: longer than %d bytes", name, int64(maxFileList))
		}
		p := strings.TrimSuffix(sc.Text(), "\r")
		if strings.TrimSpace(p) == "" {
			continue
		}
		if strings.IndexByte(p, 0) >= 0 {
			return nil, fmt.Errorf("%s: line %d: a NUL byte; give one path per line", name, line)
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("%s: a line longer than %d bytes is not a path", name, maxName)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return out, nil
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
	ReadOptions
	// Jobs is how many files are read at once (at least 1).
	Jobs int
	// Iterations selects the summaries merged.
	Iterations IterationFilter
}

// admit checks a file's contents against the options before anything of it is merged, so that a file fails
// whole: a rank at or past --world, or a cross-rank report whose category sums the iteration filter would have
// to split. It returns the summaries and category sums to add.
func (o FilesOptions) admit(c *Contents) (sums []*RankSummary, cats [][]report.CategoryStat, err error) {
	keep := func(s *RankSummary) (bool, error) {
		if o.World > 0 && s.Rank >= o.World {
			return false, fmt.Errorf("rank %d (%s) is outside --world %d (ranks 0 to %d)", s.Rank, s.File, o.World, o.World-1)
		}
		return o.Iterations.Keeps(s.Iteration), nil
	}
	for _, s := range c.Summaries {
		ok, err := keep(s)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			sums = append(sums, s)
		}
	}
	for _, m := range c.Merged {
		kept := 0
		iterations := map[int]bool{}
		for _, s := range m.Rows {
			ok, err := keep(s)
			if err != nil {
				return nil, nil, err
			}
			if ok {
				sums = append(sums, s)
				kept++
			}
			iterations[s.Iteration] = true
		}
		switch {
		case kept == len(m.Rows):
			cats = append(cats, m.Categories)
		case kept > 0:
			its := slices.Sorted(maps.Keys(iterations))
			return nil, nil, fmt.Errorf("a cross-rank report of iterations %s: its category sums cannot be split by --iteration %s; merge the summaries it came from, or a report of one iteration",
				IterationList(its), o.Iterations)
		}
	}
	return sums, cats, nil
}

// MergeFiles reads summary files with a bounded pool and merges the summaries the filter keeps. Each worker folds
// its files into its own Merger and the workers' mergers are merged at the end, which gives the same result as
// one sequential pass because Merger is associative; memory stays at one Merger per worker plus the files in
// flight. When Stages is set without World, the world is the highest rank + 1 among the summaries kept (not the
// file count: a folder may hold several iterations of every rank); the Merger assigns those stages when the
// result is taken, so every file is read once. A file that cannot be read, holds a value that is not a valid
// summary, report or cross-rank report, or does not fit the options fails alone, with nothing of it merged;
// the failures come back in the order of files, whatever order the workers met them in. Only cancellation of
// ctx, or sums that pass what an int64 holds, end the merge early.
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
				contents, err := ReadFile(files[i], opts.ReadOptions)
				if err != nil {
					fails[i] = err
					continue
				}
				sums, cats, err := opts.admit(contents)
				if err != nil {
					fails[i] = fmt.Errorf("%s: %w", files[i], err)
					continue
				}
				for _, s := range sums {
					mergers[w].Add(s)
				}
				for _, c := range cats {
					mergers[w].AddCategories(files[i], c)
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
