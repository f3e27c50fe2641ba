package load

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

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

// Discover expands INPUT arguments into a sorted, de-duplicated file list. Named files are taken as they are;
// directories are walked for snapshot-like files; anything else is tried as a glob. Arguments that yield nothing
// become failures, so the other inputs are still analyzed. Paths sort with digit runs compared as numbers, so
// rank2 comes before rank10.
func Discover(args []string, opts DiscoverOptions) ([]string, []Failure) {
	var files []string
	var failures []Failure
	outAbs, _ := filepath.Abs(opts.OutRoot)
	// addDir walks a directory argument or glob match and says how many files and failures it yielded; a
	// directory that cannot be walked at all is one failure.
	addDir := func(dir string) int {
		found, unreadable, err := walkInputs(dir, outAbs, opts.SkipDir)
		if err != nil {
			unreadable = append(unreadable, Failure{File: dir, Error: errorText(err)})
		}
		files = append(files, found...)
		failures = append(failures, unreadable...)
		return len(found) + len(unreadable)
	}
	for _, arg := range args {
		fi, err := os.Stat(arg)
		switch {
		case err == nil && fi.IsDir():
			if addDir(arg) == 0 {
				failures = append(failures, Failure{File: arg, Error: "no snapshot, tracer, timeline or log files found in this directory"})
			}
		case err == nil:
			files = append(files, arg)
		case hasGlobMeta(arg):
			matches, gerr := filepath.Glob(arg)
			if gerr != nil {
				failures = append(failures, Failure{File: arg, Error: "bad glob pattern: " + gerr.Error()})
				continue
			}
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
				files = append(files, m)
			}
			if n == 0 {
				failures = append(failures, Failure{File: arg, Error: "no files match this pattern"})
			}
		default:
			failures = append(failures, Failure{File: arg, Error: errorText(err)})
		}
	}
	sort.SliceStable(files, func(i, j int) bool { return naturalLess(files[i], files[j]) })
	files = dedupe(files)
	return files, failures
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

// walkInputs lists the snapshot-like files under dir in lexical order, skipping hidden directories and
// memscan's own results (the results root and what skipDir reports). Links to directories are followed, each
// directory entered once (see walk.Walk); what cannot be read comes back as failures, so that a rank set with an
// unreadable folder is reported incomplete instead of analyzed short in silence.
func walkInputs(dir, outAbs string, skipDir func(string) bool) ([]string, []Failure, error) {
	var found []string
	problems, err := walk.Walk(dir, walk.Funcs{
		Dir: func(p, name string) error {
			if strings.HasPrefix(name, ".") || name == "__pycache__" || name == "node_modules" {
				return filepath.SkipDir
			}
			if abs, err := filepath.Abs(p); err == nil && abs == outAbs {
				return filepath.SkipDir
			}
			if skipDir != nil && skipDir(p) {
				return filepath.SkipDir
			}
			return nil
		},
		File: func(p string, info fs.FileInfo) {
			if info.Mode().IsRegular() && isInputName(filepath.Base(p)) {
				found = append(found, p)
			}
		},
	})
	if err != nil {
		return nil, nil, err
	}
	var failures []Failure
	for _, pr := range problems {
		// A folder that cannot be listed may hold inputs; a broken link counts when its name is an input's (a
		// dangling config.yaml is not a missing input).
		if pr.Dir || isInputName(filepath.Base(pr.Path)) {
			failures = append(failures, Failure{File: pr.Path, Error: "cannot read: " + errorText(pr.Err)})
		}
	}
	return found, failures, nil
}

// isInputName reports whether a file found in a directory walk looks like something memscan reads. Named
// files are always tried; this only keeps directory walks from picking up configs and checkpoints.
func isInputName(name string) bool {
	lower := strings.ToLower(name)
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
	case strings.HasSuffix(lower, ".json"), strings.HasSuffix(lower, ".json.gz"), strings.HasSuffix(lower, ".pt"):
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

// dedupe drops repeated paths (the same file named twice, or found by a glob and a directory) from a sorted list.
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
