package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/units"
)

// TestSummaryOnlyTracerLine checks that --summary-only prints what a tracer file measured (its peak and the sum
// of its listed tensors) and "-" for the allocator totals it lacks, instead of "reserved 0.0B". The expected
// values are read from the fixture's JSON directly: peak_memory_mb × 2^20 and the sum of size_bytes on cuda:0.
func TestSummaryOnlyTracerLine(t *testing.T) {
	src := fixture(t, "tracer/testdata/small_rank0.json")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]struct {
		PeakMB  float64 `json:"peak_memory_mb"`
		Tensors []struct {
			SizeBytes int64 `json:"size_bytes"`
		} `json:"tensors"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	dev := doc["cuda:0"]
	var listed int64
	for _, tn := range dev.Tensors {
		listed += tn.SizeBytes
	}
	peak := int64(dev.PeakMB * (1 << 20))

	code, stdout, stderr := runCLI(t, "analyze", "--summary-only", "--progress", "never", "--out", t.TempDir(), src)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "reserved -, allocated -, peak " + units.Bytes(peak) + ", listed " + units.Bytes(listed)
	if !strings.Contains(stdout, want) {
		t.Errorf("stdout = %q, want it to contain %q", stdout, want)
	}
}

// TestAnalyzeOutIsFile checks that an --out that cannot be a directory is a usage error (exit 1) reported
// before anything is analyzed, not "nothing analyzed" (exit 2).
func TestAnalyzeOutIsFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "plain.txt")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	src := fixture(t, "snapshot/testdata/v21_multi_device.pickle")
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"file", []string{"analyze", "--quiet", "--no-plots", "--out", file, src}},
		{"below a file", []string{"analyze", "--quiet", "--no-plots", "--out", filepath.Join(file, "sub"), src}},
		{"summary-only", []string{"analyze", "--summary-only", "--quiet", "--out", file, src}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d: %s", code, exitUsage, stderr)
			}
			if !strings.Contains(stderr, "--out") || !strings.Contains(stderr, "file") {
				t.Errorf("stderr does not say --out is a file: %q", stderr)
			}
			if strings.Contains(stderr, "wrote") {
				t.Errorf("something was written: %q", stderr)
			}
		})
	}
}
