package walk

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestWalk builds a tree with a link to a directory, a link loop, a second link to one folder, a broken link
// and an unreadable directory, and checks what the walk lists and reports.
func TestWalk(t *testing.T) {
	root := t.TempDir()
	mk := func(rel string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, rel string) {
		if err := os.Symlink(target, filepath.Join(root, rel)); err != nil {
			t.Fatal(err)
		}
	}
	mk("tree/a/rank0.pickle")
	mk("elsewhere/rank1.pickle")
	mk("tree/locked/rank2.pickle")
	link(filepath.Join(root, "elsewhere"), "tree/linked")     // a link to a directory outside the tree
	link("..", "tree/a/up")                                   // a loop back to tree
	link(filepath.Join(root, "elsewhere"), "tree/linked_too") // a second link to the same folder
	link(filepath.Join(root, "missing"), "tree/broken")
	link(filepath.Join(root, "tree"), "latest") // the root itself reached through a link
	link("self_b", "tree/self_a")               // a link loop of files: neither resolves
	link("self_a", "tree/self_b")
	// tree/locked cannot be listed (as chmod 0 would make it for anyone but root, who runs some test machines).
	listed := map[string]int{} // listings per directory: each is read once, the root included
	readDir := func(p string) ([]fs.DirEntry, error) {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			listed[real]++
		}
		if filepath.Base(p) == "locked" {
			return nil, &fs.PathError{Op: "open", Path: p, Err: fs.ErrPermission}
		}
		return os.ReadDir(p)
	}

	var files []string
	problems, err := walkWith(filepath.Join(root, "latest"), Funcs{File: func(p string, _ fs.FileInfo) {
		files = append(files, strings.TrimPrefix(p, root+"/"))
	}}, readDir)
	if err != nil {
		t.Fatal(err)
	}
	for dir, n := range listed {
		if n != 1 {
			t.Errorf("%s listed %d times", dir, n)
		}
	}
	want := []string{"latest/a/rank0.pickle", "latest/linked/rank1.pickle"}
	if !slices.Equal(files, want) {
		t.Errorf("files %q, want %q", files, want)
	}
	var got []string
	for _, p := range problems {
		got = append(got, strings.TrimPrefix(p.Path, root+"/"))
	}
	if !slices.Equal(got, []string{"latest/broken", "latest/locked", "latest/self_a", "latest/self_b"}) {
		t.Errorf("problems %v, want the broken link, the locked directory and the two looping links", problems)
	}
	if len(problems) == 4 && problems[1].Error() != filepath.Join(root, "latest/locked")+": open: permission denied" {
		t.Errorf("problem reads %q", problems[1].Error())
	}
	if _, err := Walk(filepath.Join(root, "missing"), Funcs{}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing root: err = %v", err)
	}
}
