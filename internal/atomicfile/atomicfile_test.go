package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestWriteKeepsTheOldFileOnFailure: a fill that fails part-way (a full disk) leaves the previous content and
// no temporary file; a successful write replaces it whole.
func TestWriteKeepsTheOldFileOnFailure(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "static_report.json")
	if err := WriteBytes(p, []byte(`{"good": true}`)); err != nil {
		t.Fatal(err)
	}
	full := errors.New("no space left on device")
	err := Write(p, func(w io.Writer) error {
		io.WriteString(w, strings.Repeat("x", 1<<17)) // past the buffer: bytes reach the temporary file
		return full
	})
	var we *Error
	if !errors.As(err, &we) || we.Path != p || !errors.Is(err, full) || err.Error() != "writing "+p+": no space left on device" {
		t.Fatalf("error %v", err)
	}
	if got, _ := os.ReadFile(p); string(got) != `{"good": true}` {
		t.Errorf("after a failed write the file holds %.40q", got)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the file", len(entries))
	}
	if err := Write(filepath.Join(dir, "missing", "f"), func(io.Writer) error { return nil }); !errors.As(err, &we) {
		t.Errorf("missing directory: %v", err)
	}
}

// TestConcurrentWriters: writers of one path each leave a whole file (one of theirs), never an interleaving.
func TestConcurrentWriters(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			body := strings.Repeat(string(rune('a'+i)), 1<<18)
			if err := WriteBytes(p, []byte(body)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := os.ReadFile(p)
	if err != nil || len(got) != 1<<18 || strings.Count(string(got), string(got[:1])) != len(got) {
		t.Errorf("file of %d bytes mixes writers (%v)", len(got), err)
	}
}

// TestMode: the file gets 0644 less the umask, like os.WriteFile, not the 0600 of a temporary file.
func TestMode(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := WriteBytes(a, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fa, _ := os.Stat(a)
	fb, _ := os.Stat(b)
	if fa.Mode() != fb.Mode() {
		t.Errorf("mode %v, os.WriteFile gives %v", fa.Mode(), fb.Mode())
	}
}
