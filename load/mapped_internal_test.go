package load

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memscan/memscan/internal/sysmem"
)

// mappedResident is this process's resident file-backed memory (sysmem.ResidentFile), where a file's mapping
// counts.
func mappedResident(t *testing.T) int64 {
	t.Helper()
	n, ok := sysmem.ResidentFile()
	if !ok {
		t.Skip("cannot read RssFile from /proc/self/status")
	}
	return n
}

// waitFor polls cond until it holds, failing after a generous while: the pages are mapped and given back on
// another goroutine.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestMappedFilePages: a mapped file's pages are mapped ahead of what the decoder has read and given back behind
// it, off its goroutine, so that the file adds a bounded window to the resident set; what it has read counts as
// read, and all of it once the mapping is closed.
func TestMappedFilePages(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("files are mapped on Linux only")
	}
	const size = 64 << 20
	path := filepath.Join(t.TempDir(), "big.pickle")
	if err := os.WriteFile(path, bytes.Repeat([]byte{1}, size), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var read atomic.Int64
	cf := &countingFile{f: f, read: &read}
	before := mappedResident(t)
	mp, err := mapper(cf, size)()
	if err != nil {
		t.Fatal(err)
	}
	m := mp.(*mappedFile)
	// Ahead of the decoder, before it reads: the first window, where the kernel can map pages ahead (Linux 5.14).
	probe, err := sysmem.MapFile(f, 0, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	ahead := sysmem.PopulateRead(probe.Bytes())
	probe.Close()
	if ahead {
		waitFor(t, "mapping the first window ahead", func() bool { return mappedResident(t)-before >= mapAhead*3/4 })
		if got := mappedResident(t) - before; got > 2*mapAhead {
			t.Errorf("%d bytes of the file resident before it is read, want about %d", got, mapAhead)
		}
	}
	b := m.Bytes()
	pages := 0
	for i := 0; i < size/2; i += os.Getpagesize() {
		pages += int(b[i]) // the decoder reads the first half, a 1 in every page
	}
	if pages != size/2/os.Getpagesize() {
		t.Errorf("read %d pages of ones, want %d", pages, size/2/os.Getpagesize())
	}
	m.Consumed(size / 2)
	if read.Load() != size/2 {
		t.Errorf("counted %d bytes read after the decoder read %d", read.Load(), size/2)
	}
	// Behind the decoder given back; ahead of it the next window.
	waitFor(t, "giving back what was read", func() bool { return mappedResident(t)-before <= 2*mapAhead })
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if read.Load() != size {
		t.Errorf("counted %d bytes read after Close, the file has %d", read.Load(), size)
	}
}
