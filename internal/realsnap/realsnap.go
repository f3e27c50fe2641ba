// Package realsnap loads the real PyTorch snapshots that CI places beside the checkout (../shared/real_snapshots)
// and their manifest, for the tests of every package that checks them.
//
// It imports no memscan package, so that any test — snapshot's internal tests included — can use it.
package realsnap

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/memscan/memscan/internal/gen"
)

// RepoRoot returns the module root (the directory holding go.mod).
func RepoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("realsnap: cannot locate source file")
	}
	// This file is <root>/internal/realsnap/realsnap.go.
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// SharedDir returns the path of the shared data folder that CI places beside the checkout (../shared), or skips
// the test with a clear message when it is absent, so that a fresh clone still passes.
func SharedDir(t testing.TB, sub ...string) string {
	t.Helper()
	dir := os.Getenv("MEMSCAN_SHARED")
	if dir == "" {
		dir = filepath.Join(RepoRoot(t), "..", "shared")
	}
	p := filepath.Join(append([]string{dir}, sub...)...)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared test data not found at %s (set MEMSCAN_SHARED or place it beside the checkout): %v", p, err)
	}
	return p
}

// Entry is one file of ../shared/real_snapshots/manifest.json. The manifest was written by PyTorch-side tooling
// (pickle.load plus torch.cuda._memory_viz stats), independently of memscan.
type Entry struct {
	File      string          `json:"file"`
	Proto     int             `json:"proto"`
	Torch     string          `json:"torch"`
	Shape     string          `json:"shape"`
	TopKeys   json.RawMessage `json:"top_keys"`
	Segments  int             `json:"segments"`
	Blocks    int             `json:"blocks"`
	Devices   []int           `json:"devices"`
	TraceLens []int           `json:"trace_lens"`
	Actions   map[string]int  `json:"actions"`
	ExtAnn    *int            `json:"ext_ann"`
	States    map[string]int  `json:"states"`
	Pools     [][]int64       `json:"pools"`
	Streams   int             `json:"streams"`
	Expand    int             `json:"expandable"`
	Segsum    Segsum          `json:"segsum"`
}

// Segsum is PyTorch's _memory_viz stats totals for one file.
type Segsum struct {
	Segments  int   `json:"segments"`
	Reserved  int64 `json:"reserved"`
	Allocated int64 `json:"allocated"`
	FreeInt   int64 `json:"free_int"`
	FreeExt   int64 `json:"free_ext"`
}

// Load returns the real-snapshot folder and its manifest, skipping when the folder is absent and failing when the
// manifest cannot be read or lists no files.
func Load(t testing.TB) (string, []Entry) {
	t.Helper()
	dir := SharedDir(t, "real_snapshots")
	raw, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m []Entry
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("manifest.json: %v", err)
	}
	if len(m) == 0 {
		t.Fatal("manifest.json lists no files")
	}
	return dir, m
}

// BenchGenerated is the generated 200k-entry, two-device snapshot the decode and analysis benchmarks share; it is
// built once per test binary.
var BenchGenerated = sync.OnceValues(func() ([]byte, error) {
	var buf bytes.Buffer
	_, err := gen.Write(&buf, gen.Config{Seed: 1, Entries: 200_000, Devices: 2, Stacks: gen.StacksPython, ShareStack: true})
	return buf.Bytes(), err
})

// BenchGenerated4 is BenchGenerated on four devices (800k entries, 200k each), the multi-device case whose
// trace lists the decoder sizes from the file.
var BenchGenerated4 = sync.OnceValues(func() ([]byte, error) {
	var buf bytes.Buffer
	_, err := gen.Write(&buf, gen.Config{Seed: 1, Entries: 800_000, Devices: 4, Stacks: gen.StacksPython, ShareStack: true})
	return buf.Bytes(), err
})

// BenchStackless is a generated 2.4M-event single-device snapshot without stacks (no training loop in it), built
// once per test binary: the size the allocator replay and the periodic phase split are benchmarked at.
var BenchStackless = sync.OnceValues(func() ([]byte, error) {
	var buf bytes.Buffer
	_, err := gen.Write(&buf, gen.Config{Seed: 7, Entries: 2_400_000, Devices: 1, Stacks: gen.StacksNone})
	return buf.Bytes(), err
})

// BenchFile returns the snapshot file named by MEMSCAN_BENCH_FILE and sets b's bytes per operation to its size,
// skipping the benchmark when the variable is unset.
func BenchFile(b *testing.B) string {
	b.Helper()
	path := os.Getenv("MEMSCAN_BENCH_FILE")
	if path == "" {
		b.Skip("set MEMSCAN_BENCH_FILE to a snapshot pickle")
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	return path
}

// GPURuns reads ../shared/gpu_runs/runs.json (PyTorch's own measurements of the H200 runs) into runs, a pointer
// to a slice of whatever fields the calling test needs, and returns the gpu_runs folder. It skips like SharedDir.
func GPURuns(t testing.TB, runs any) string {
	t.Helper()
	dir := SharedDir(t, "gpu_runs")
	raw, err := os.ReadFile(filepath.Join(dir, "runs.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, runs); err != nil {
		t.Fatalf("runs.json: %v", err)
	}
	return dir
}
