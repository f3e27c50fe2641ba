//go:build unix

package results

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestStaleStagingRemoved: a run removes the staging directories that runs killed before they could (SIGKILL,
// a lost node) left in its results root, and only those: not one a live run holds (locked), nor one just made.
// They used to stay for ever.
func TestStaleStagingRemoved(t *testing.T) {
	root := t.TempDir()
	now := time.Now()
	mk := func(name string, age time.Duration) string {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Join(p, "charts"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(p, "summary.json"), []byte("{"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, now.Add(-age), now.Add(-age)); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dead := mk(".partial-20250101_000000_rank0-123", time.Hour)
	live := mk(".partial-20250101_000000_rank1-456", time.Hour)
	fresh := mk(".partial-20250101_000000_rank2-789", 0)
	other := mk(".hidden-user-dir", time.Hour)
	// A live run in another process holds its directory locked (flock locks belong to the open file, so a
	// second open in this process contends like another process would).
	f, err := os.Open(live)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Skip("no flock here:", err)
	}
	dir, _, err := WriteRun(root, "rank3", now, func(dir string) error {
		return os.WriteFile(filepath.Join(dir, "summary.json"), []byte("{}"), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{live, fresh, other, dir} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(p), err)
		}
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the abandoned %s is still there (%v)", filepath.Base(dead), err)
	}
}
