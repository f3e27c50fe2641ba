// Package walk walks input trees the way memscan's commands read them: symbolic links to directories are
// followed (rank folders on shared file systems often are links, as memscan's own `latest` is), each directory
// is entered once so a link loop ends, and what cannot be read is reported instead of skipped in silence.
package walk

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// Problem is an entry of the tree that could not be read: a directory that cannot be listed, a link whose
// target is missing, a file that cannot be examined.
type Problem struct {
	Path string
	Err  error
	// Dir is true for a directory that could not be listed; otherwise the entry's kind is unknown (a broken
	// link) or it is a file.
	Dir bool
}

func (p Problem) Error() string { return p.Path + ": " + errText(p.Err) }

// errText drops the "open PATH:" prefix that Problem.Error already carries.
func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}

// Funcs are the callbacks of Walk.
type Funcs struct {
	// Dir is called for each directory below the root before it is entered (name is its own name, not its
	// link target's); returning filepath.SkipDir skips it. Nil enters every directory.
	Dir func(path, name string) error
	// File is called for each entry that is not a directory, with links to files resolved: info describes the
	// target.
	File func(path string, info fs.FileInfo)
}

// Walk walks the tree at root in lexical order, following symbolic links to directories (root included) and
// entering each directory once, by its resolved path. A directory reached again through a link (a loop, or two
// links to one folder) is not entered again. It returns the entries that could not be read; the walk goes on
// past them. An error is returned only when root itself cannot be read as a directory.
func Walk(root string, fn Funcs) ([]Problem, error) {
	return walkWith(root, fn, os.ReadDir)
}

// walkWith is Walk with the directory reader injected, so tests can make a directory fail to list (a test
// running as root reads any directory whatever its mode).
func walkWith(root string, fn Funcs, readDir func(string) ([]fs.DirEntry, error)) ([]Problem, error) {
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, err
	}
	// The root's listing is the test that it is a readable directory, and is walked as it is: a root of
	// thousands of rank files is listed once.
	entries, err := readDir(root)
	if err != nil {
		return nil, err
	}
	w := &walker{fn: fn, seen: map[string]bool{real: true}, readDir: readDir}
	w.entries(root, real, entries)
	return w.problems, nil
}

type walker struct {
	fn       Funcs
	seen     map[string]bool
	problems []Problem
	readDir  func(string) ([]fs.DirEntry, error)
}

// dir lists the directory at path (whose resolved path is real) and walks its entries.
func (w *walker) dir(path, real string) {
	if w.seen[real] {
		return
	}
	w.seen[real] = true
	entries, err := w.readDir(path)
	if err != nil {
		w.problems = append(w.problems, Problem{Path: path, Err: err, Dir: true})
		return
	}
	w.entries(path, real, entries)
}

// entries walks the listed entries of the directory at path (whose resolved path is real).
func (w *walker) entries(path, real string, entries []fs.DirEntry) {
	for _, e := range entries {
		p := filepath.Join(path, e.Name())
		info, err := entryInfo(p, e)
		if err != nil {
			w.problems = append(w.problems, Problem{Path: p, Err: err})
			continue
		}
		if !info.IsDir() {
			if w.fn.File != nil {
				w.fn.File(p, info)
			}
			continue
		}
		if w.fn.Dir != nil {
			if err := w.fn.Dir(p, e.Name()); errors.Is(err, filepath.SkipDir) {
				continue
			}
		}
		r := p
		if e.Type()&fs.ModeSymlink != 0 {
			if r, err = filepath.EvalSymlinks(p); err != nil {
				w.problems = append(w.problems, Problem{Path: p, Err: err, Dir: true})
				continue
			}
		} else {
			r = filepath.Join(real, e.Name())
		}
		w.dir(p, r)
	}
}

// entryInfo describes an entry, following a symbolic link to its target; a broken link is an error.
func entryInfo(p string, e fs.DirEntry) (fs.FileInfo, error) {
	if e.Type()&fs.ModeSymlink != 0 {
		return os.Stat(p)
	}
	return e.Info()
}
