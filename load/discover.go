package load

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/internal/walk"
)

// DiscoverOptions say which directories a walk skips besides hidden ones.
type DiscoverOptions struct {
	// OutRoot is the results root; a walk that meets it skips it.
	OutRoot string
	// SkipDir reports directories that hold outputs rather than inputs (memscan's own run directories); nil
	// skips none.
	SkipDir func(dir string) bool
}

// Failure is an input argument or file that yielded nothing to analyze, with why.
type Failure struct {
	File  string `json:"file" msgpack:"file"`
	Error string `json:"error" msgpack:"error"`
}

// Skipped is what the walk of one directory argument passed over for one reason: how many entries, the first few
// of them, and why, so that a folder of inputs named unlike inputs is not analyzed short in silence.
type Skipped struct {
	// Dir is the directory walked (an argument, or a directory a glob matched).
	Dir string
	// Reason says why; Count entries were skipped for it, Examples are the first few, relative to Dir.
	Reason   SkipReason
	Count    int
	Examples []string
}

// SkipReason is why a directory walk passed over an entry.
type SkipReason int

// The reasons a walk skips an entry, in the order they are reported.
const (
	// SkipName: a file whose name is not an input's; named on the command line it would be read.
	SkipName SkipReason = iota
	// SkipOutput: a directory of memscan's own results (the results root or a run directory).
	SkipOutput
	// SkipHidden: a hidden directory, or one that holds tools' files (__pycache__, node_modules).
	SkipHidden
)

// maxSkipExamples bounds the entries a Skipped names: enough to recognise them, not a listing of a checkpoint
// folder.
const maxSkipExamples = 3

func (s Skipped) String() string {
	var what string
	switch s.Reason {
	case SkipName:
		what = units.Plural(s.Count, "file", "files") + " not named like an input (name one to read it anyway)"
	case SkipOutput:
		what = units.Plural(s.Count, "folder", "folders") + " of memscan's own results"
	case SkipHidden:
		what = units.Plural(s.Count, "hidden or tool folder", "hidden or tool folders")
	}
	ex := strings.Join(s.Examples, ", ")
	if s.Count > len(s.Examples) {
		ex += ", ..."
	}
	return fmt.Sprintf("%s: skipped %s: %s", s.Dir, what, ex)
}

// Discovery is what Discover found: the files to read, the arguments and entries that yielded nothing or could
// not be read, and what directory walks skipped.
type Discovery struct {
	Files    []string
	Failures []Failure
	Skipped  []Skipped
}

// Discover expands INPUT arguments into a de-duplicated file list in argument order: named files are taken as
// they are; directories are walked for files named like inputs; anything else is tried as a glob. The files of
// one directory or glob come in natural order (digit runs compared as numbers, so rank2 comes before rank10); a
// file found twice keeps its first place. Arguments that yield nothing become failures, so the other inputs are
// still analyzed.
func Discover(args []string, opts DiscoverOptions) Discovery {
	var d Discovery
	outAbs, _ := filepath.Abs(opts.OutRoot)
	// addDir walks a directory argument or glob match and says how many files and failures it yielded; a
	// directory that cannot be walked at all is one failure.
	addDir := func(dir string) int {
		w, err := walkInputs(dir, outAbs, opts.SkipDir)
		if err != nil {
			w.failures = append(w.failures, Failure{File: dir, Error: errorText(err)})
		}
		sortNatural(w.found)
		d.Files = append(d.Files, w.found...)
		d.Failures = append(d.Failures, w.failures...)
		d.Skipped = append(d.Skipped, w.skipped()...)
		return len(w.found) + len(w.failures)
	}
	for _, arg := range args {
		fi, err := os.Stat(arg)
		switch {
		case err == nil && fi.IsDir():
			if addDir(arg) == 0 {
				d.Failures = append(d.Failures, Failure{File: arg, Error: "no snapshot, tracer, timeline or log files found in this directory"})
			}
		case err == nil:
			d.Files = append(d.Files, arg)
		case hasGlobMeta(arg):
			matches, gerr := filepath.Glob(arg)
			if gerr != nil {
				d.Failures = append(d.Failures, Failure{File: arg, Error: "bad glob pattern: " + gerr.Error()})
				continue
			}
			sortNatural(matches)
			var n int
			for _, m := range matches {
				mi, err := os.Stat(m)
				if err != nil {
					continue
				}
				if mi.IsDir() {
					n += addDir(m)
					continue
				}
				n++
				d.Files = append(d.Files, m)
			}
			if n == 0 {
				d.Failures = append(d.Failures, Failure{File: arg, Error: "no files match this pattern"})
			}
		default:
			d.Failures = append(d.Failures, Failure{File: arg, Error: errorText(err)})
		}
	}
	d.Files = dedupe(d.Files)
	return d
}

func sortNatural(paths []string) {
	sort.SliceStable(paths, func(i, j int) bool { return naturalLess(paths[i], paths[j]) })
}

// errorText strips the "stat NAME:" prefix that the failure line already carries.
func errorText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

func hasGlobMeta(s string) bool { return strings.ContainsAny(s, "*?[") }

// walked is what the walk of one directory yielded.
type walked struct {
	dir      string
	found    []string
	failures []Failure
	// skips counts the skipped entries by reason, with the first few of each.
	skips [SkipHidden + 1]Skipped
}

func (w *walked) skip(reason SkipReason, path string) {
	s := &w.skips[reason]
	s.Count++
	if len(s.Examples) < maxSkipExamples {
		rel, err := filepath.Rel(w.dir, path)
		if err != nil {
			rel = path
		}
		s.Examples = append(s.Examples, rel)
	}
}

// skipped lists what the walk skipped, one Skipped per reason that occurred.
func (w *walked) skipped() []Skipped {
	var out []Skipped
	for r, s := range w.skips {
		if s.Count > 0 {
			s.Dir, s.Reason = w.dir, SkipReason(r)
			out = append(out, s)
		}
	}
	return out
}

// walkInputs lists the files under dir named like inputs, in lexical order, skipping hidden directories and
// memscan's own results (the results root and what skipDir reports), and counts what it skipped. Links to
// directories are followed, each directory entered once (see walk.Walk); what cannot be read comes back as
// failures, so that a rank set with an unreadable folder is reported incomplete instead of analyzed short in
// silence.
func walkInputs(dir, outAbs string, skipDir func(string) bool) (*walked, error) {
	w := &walked{dir: dir}
	problems, err := walk.Walk(dir, walk.Funcs{
		Dir: func(p, name string) error {
			if strings.HasPrefix(name, ".") || name == "__pycache__" || name == "node_modules" {
				w.skip(SkipHidden, p)
				return filepath.SkipDir
			}
			if abs, err := filepath.Abs(p); err == nil && abs == outAbs {
				w.skip(SkipOutput, p)
				return filepath.SkipDir
			}
			if skipDir != nil && skipDir(p) {
				w.skip(SkipOutput, p)
				return filepath.SkipDir
			}
			return nil
		},
		File: func(p string, info fs.FileInfo) {
			switch {
			case !info.Mode().IsRegular():
			case isInputName(filepath.Base(p)):
				w.found = append(w.found, p)
			case !strings.HasPrefix(filepath.Base(p), "."):
				w.skip(SkipName, p)
			}
		},
	})
	if err != nil {
		return w, err
	}
	for _, pr := range problems {
		// A folder that cannot be listed may hold inputs; a broken link counts when its name is an input's (a
		// dangling config.yaml is not a missing input).
		if pr.Dir || isInputName(filepath.Base(pr.Path)) {
			w.failures = append(w.failures, Failure{File: pr.Path, Error: "cannot read: " + errorText(pr.Err)})
		}
	}
	return w, nil
}

// isInputName reports whether a file found in a directory walk looks like something memscan reads, compressed
// (.gz) or not. Named files are always tried; this only keeps directory walks from picking up configs and
// checkpoints.
func isInputName(name string) bool {
	lower := strings.TrimSuffix(strings.ToLower(name), ".gz")
	hint := func() bool {
		for _, k := range []string{"snapshot", "memory", "mem_", "tracer", "timeline", "peak", "rank", "oom"} {
			if strings.Contains(lower, k) {
				return true
			}
		}
		return false
	}
	switch {
	case strings.HasSuffix(lower, ".pickle"), strings.HasSuffix(lower, ".pkl"), strings.HasSuffix(lower, ".log"):
		return true
	case strings.HasSuffix(lower, ".json"), strings.HasSuffix(lower, ".pt"):
		return hint() // a run directory also holds configs and checkpoints
	case strings.HasSuffix(lower, ".msgpack"), strings.HasSuffix(lower, ".png"), strings.HasSuffix(lower, ".md"), strings.HasSuffix(lower, ".txt"):
		return false
	}
	return strings.Contains(lower, "snapshot")
}

// naturalLess orders paths with digit runs compared as numbers, so rank2 sorts before rank10.
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digitPrefix(a), digitPrefix(b)
		if da != "" && db != "" {
			na, nb := strings.TrimLeft(da, "0"), strings.TrimLeft(db, "0")
			if len(na) != len(nb) {
				return len(na) < len(nb)
			}
			if na != nb {
				return na < nb
			}
			if len(da) != len(db) {
				return len(da) < len(db)
			}
			a, b = a[len(da):], b[len(db):]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func digitPrefix(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}

// dedupe drops repeated paths (the same file named twice, or found by a glob and a directory), keeping the first.
func dedupe(files []string) []string {
	seen := map[string]bool{}
	out := files[:0]
	for _, f := range files {
		key := filepath.Clean(f)
		if abs, err := filepath.Abs(f); err == nil {
			key = abs
		}
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, f)
	}
	return out
}
