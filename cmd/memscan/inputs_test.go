package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/testutil"
)

// gzipCopy writes src gzip-compressed to dst.
func gzipCopy(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, testutil.Gzip(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// summaryInput is what these tests read of one input in summary.json.
type summaryInput struct {
	File          string `json:"file"`
	ReservedBytes int64  `json:"reserved_bytes"`
}

// analyzeSummary runs analyze with --format json and returns the inputs of summary.json, in order, and stderr.
func analyzeSummary(t *testing.T, args ...string) ([]summaryInput, string) {
	t.Helper()
	code, stdout, stderr := runCLI(t, append([]string{"analyze", "--no-plots", "--progress", "never", "--format", "json", "--out", t.TempDir()}, args...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var s struct {
		Inputs []summaryInput `json:"inputs"`
	}
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatal(err)
	}
	return s.Inputs, stderr
}

// TestAnalyzeFolderOfCompressedSnapshots: memscan analyze DIR finds *.pickle.gz and *.pkl.gz snapshots (it used
// to find none and exit 0), analyzes them like the uncompressed file, and notes on stderr what it skipped.
func TestAnalyzeFolderOfCompressedSnapshots(t *testing.T) {
	example := fixture(t, goldenFixtures["example"])
	dir := t.TempDir()
	gzipCopy(t, example, filepath.Join(dir, "rank0.pickle.gz"))
	gzipCopy(t, example, filepath.Join(dir, "rank1.pkl.gz"))
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("a: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, stderr := analyzeSummary(t, dir)
	if len(got) != 2 || filepath.Base(got[0].File) != "rank0.pickle.gz" || filepath.Base(got[1].File) != "rank1.pkl.gz" {
		t.Fatalf("inputs %+v, want rank0.pickle.gz and rank1.pkl.gz", got)
	}
	plain, _ := analyzeSummary(t, example)
	for _, in := range got {
		if in.ReservedBytes != plain[0].ReservedBytes || in.ReservedBytes == 0 {
			t.Errorf("%s: reserved %d, the uncompressed snapshot %d", in.File, in.ReservedBytes, plain[0].ReservedBytes)
		}
	}
	if want := "memscan: note: " + dir + ": skipped 1 file not named like an input (name one to read it anyway): config.yaml\n"; !strings.Contains(stderr, want) {
		t.Errorf("stderr %q lacks %q", stderr, want)
	}
}

// TestAnalyzeKeepsArgumentOrder: the report lists the inputs in the order they were given, not sorted by path.
func TestAnalyzeKeepsArgumentOrder(t *testing.T) {
	inputs := []string{
		fixture(t, goldenFixtures["tracer"]),
		fixture(t, goldenFixtures["log"]),
		fixture(t, goldenFixtures["example"]),
		fixture(t, goldenFixtures["timeline"]),
	}
	for _, order := range [][]int{{0, 1, 2, 3}, {3, 2, 1, 0}, {2, 0, 3, 1}} {
		var args []string
		for _, i := range order {
			args = append(args, inputs[i])
		}
		inputs, _ := analyzeSummary(t, args...)
		var got []string
		for _, in := range inputs {
			got = append(got, in.File)
		}
		if !slices.Equal(got, args) {
			t.Errorf("given\n%s\nreported\n%s", strings.Join(args, "\n"), strings.Join(got, "\n"))
		}
	}
}
