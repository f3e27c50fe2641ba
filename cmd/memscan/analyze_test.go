package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/realsnap"
	"github.com/memscan/memscan/internal/results"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/snapshot"
)

// runCLI runs memscan with args and returns the exit code, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// cliErrorCase is a command line that must exit with code and say wantErr on stderr.
type cliErrorCase struct {
	name    string
	args    []string
	code    int
	wantErr string
}

// checkCLIErrors runs each case as a subtest.
func checkCLIErrors(t *testing.T, cases []cliErrorCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d (stderr %s)", code, tc.code, stderr)
			}
			if !strings.Contains(stderr, tc.wantErr) {
				t.Errorf("stderr %q lacks %q", stderr, tc.wantErr)
			}
		})
	}
}

// fixture returns a committed snapshot fixture by its path from the repository root.
func fixture(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join(testutil.RepoRoot(t), filepath.FromSlash(rel))
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("fixture %s: %v", rel, err)
	}
	return p
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestAnalyzeUsageErrors(t *testing.T) {
	good := fixture(t, "testdata/example/rank0_memory_snapshot.pickle")
	noRunDirs := t.TempDir() // a usage error is found before any analysis, so nothing may be written here
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"no input", []string{"analyze"}, "no INPUT given"},
		{"unknown flag", []string{"analyze", "--bogus", good}, "unknown flag: --bogus"},
		{"bad format", []string{"analyze", "--format", "xml", good}, "--format must be text, json or md"},
		{"zero jobs", []string{"analyze", "--jobs", "0", good}, "--jobs must be at least 1"},
		{"zero top", []string{"analyze", "--top", "0", good}, "--top must be at least 1"},
		{"bad progress", []string{"analyze", "--progress", "sometimes", good}, "--progress must be auto, always or never"},
		{"negative rank", []string{"analyze", "--rank", "-3", good}, "--rank must be 0 or more"},
		{"missing rules", []string{"analyze", "--rules", filepath.Join(t.TempDir(), "nope.yaml"), good}, "--rules"},
		{"missing static config", []string{"analyze", "--static", filepath.Join(t.TempDir(), "nope.json"), "--out", noRunDirs, good}, "--static"},
		{"rank with several inputs", []string{"analyze", "--rank", "1", "--out", t.TempDir(), good, fixture(t, "snapshot/testdata/v22_oom.pickle")}, "--rank applies to a single input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d (stderr %q)", code, exitUsage, stderr)
			}
			if entries, _ := os.ReadDir(noRunDirs); len(entries) != 0 {
				t.Errorf("a run directory was written before the usage error")
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr %q lacks %q", stderr, tt.want)
			}
			if stdout != "" {
				t.Errorf("usage error wrote to stdout: %q", stdout)
			}
		})
	}
}

func TestAnalyzeHelp(t *testing.T) {
	code, stdout, _ := runCLI(t, "analyze", "--help")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, flag := range []string{"--out", "--name", "--jobs", "--rules", "--top", "--format", "--no-plots", "--progress", "--rank", "--quiet", "--static"} {
		if !strings.Contains(stdout, flag) {
			t.Errorf("help does not explain %s", flag)
		}
	}
	for _, want := range []string{"Exit status:", "  3  some inputs failed", "Examples:", "iteration_N/rankR_memory_snapshot.pickle"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

func TestAnalyzeNothingAnalyzable(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pickle")
	if err := os.WriteFile(garbage, []byte("\x80\x04this is not a pickle at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	emptyDir := filepath.Join(dir, "nothing_here")
	os.Mkdir(emptyDir, 0o755)
	out := filepath.Join(dir, "results")
	tests := []struct {
		name string
		args []string
		want []string // lines in stderr
	}{
		{"missing file", []string{filepath.Join(dir, "missing.pickle")}, []string{"missing.pickle: no such file or directory"}},
		{"garbage file", []string{garbage}, []string{"garbage.pickle"}},
		{"glob without match", []string{filepath.Join(dir, "*.nothing")}, []string{"no files match this pattern"}},
		{"empty directory", []string{emptyDir}, []string{"no snapshot, tracer, timeline or log files found"}},
		{"all bad", []string{garbage, filepath.Join(dir, "missing.pickle")}, []string{"garbage.pickle", "missing.pickle"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, append([]string{"analyze", "--out", out}, tt.args...)...)
			if code != exitFailed {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, exitFailed, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if stdout != "" {
				t.Errorf("stdout should be empty, got %q", stdout)
			}
			if strings.Contains(stderr, "panic") {
				t.Errorf("panic in stderr:\n%s", stderr)
			}
		})
	}
	if _, err := os.Stat(out); err == nil {
		entries, _ := os.ReadDir(out)
		if len(entries) > 0 {
			t.Errorf("a run with nothing analyzed left %d entries in %s", len(entries), out)
		}
	}
}

// expectedTotals sums the decoded blocks by the definitions in DESIGN.md, independently of the analyze package.
func expectedTotals(t *testing.T, path string) map[string]int64 {
	t.Helper()
	in, err := load.DecodeFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int64{}
	for _, s := range in.Snapshot.Segments {
		m["reserved_bytes"] += s.TotalSize
		for _, b := range s.Blocks {
			if b.State == snapshot.BlockActiveAllocated {
				m["allocated_bytes"] += b.Size
				m["requested_bytes"] += b.RequestedSize
				m["internal_free_bytes"] += b.Size - b.RequestedSize
			} else {
				m["external_free_bytes"] += b.Size
			}
		}
	}
	return m
}

type summaryFile struct {
	Version  int                            `json:"version"`
	Tool     string                         `json:"tool"`
	Inputs   []map[string]json.RawMessage   `json:"inputs"`
	Failures []struct{ File, Error string } `json:"failures"`
	Cross    *struct {
		Rows []struct {
			File string `json:"file"`
			Rank int    `json:"rank"`
		} `json:"rows"`
	} `json:"cross"`
}

func readSummary(t *testing.T, dir string) summaryFile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, results.FileSummary))
	if err != nil {
		t.Fatal(err)
	}
	var s summaryFile
	if err := json.Unmarshal(data, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func intField(t *testing.T, in map[string]json.RawMessage, key string) int64 {
	t.Helper()
	var v int64
	if err := json.Unmarshal(in[key], &v); err != nil {
		t.Fatalf("%s = %s is not an integer: %v", key, in[key], err)
	}
	return v
}

func stringField(t *testing.T, in map[string]json.RawMessage, key string) string {
	t.Helper()
	var v string
	if err := json.Unmarshal(in[key], &v); err != nil {
		t.Fatalf("%s = %s: %v", key, in[key], err)
	}
	return v
}

var runDirRE = regexp.MustCompile(`^\d{8}_\d{6}_iter1_3ranks$`)

func TestAnalyzeEndToEnd(t *testing.T) {
	dir := t.TempDir()
	srcs := []string{
		fixture(t, "testdata/example/rank0_memory_snapshot.pickle"),
		fixture(t, "snapshot/testdata/v21_multi_device.pickle"),
		fixture(t, "snapshot/testdata/v22_oom.pickle"),
	}
	// Lay the fixtures out as torchtitan does, ranks 0, 1 and 10, to check discovery and natural ordering.
	var inputs []string
	for i, rank := range []string{"0", "10", "1"} {
		p := filepath.Join(dir, "snaps", "iteration_1", "rank"+rank+"_memory_snapshot.pickle")
		copyFile(t, srcs[i], p)
		inputs = append(inputs, p)
	}
	// A config file and an earlier memscan run inside the tree must not be picked up.
	copyFile(t, srcs[0], filepath.Join(dir, "snaps", "old_results", "20250101_000000_x", "rank9_memory_snapshot.pickle"))
	os.WriteFile(filepath.Join(dir, "snaps", "old_results", "20250101_000000_x", results.FileSummary), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(dir, "snaps", "old_results", "20250101_000000_x", results.FileMsgpack), []byte{0x80}, 0o644)
	os.WriteFile(filepath.Join(dir, "snaps", "config.json"), []byte(`{"lr": 1}`), 0o644)

	out := filepath.Join(dir, "results")
	code, stdout, stderr := runCLI(t, "analyze", "--out", out, "--jobs", "3", "--progress", "never", filepath.Join(dir, "snaps"))
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var runDir string
	for _, e := range entries {
		if e.Name() != results.LatestName {
			runDir = filepath.Join(out, e.Name())
			if !runDirRE.MatchString(e.Name()) {
				t.Errorf("run directory %s does not match %s", e.Name(), runDirRE)
			}
		}
	}
	if !strings.Contains(stderr, "wrote "+runDir) {
		t.Errorf("stderr lacks the run directory:\n%s", stderr)
	}
	if target, err := os.Readlink(filepath.Join(out, results.LatestName)); err != nil || target != filepath.Base(runDir) {
		t.Errorf("latest -> %q (%v), want %q", target, err, filepath.Base(runDir))
	}
	for _, f := range []string{results.FileTextReport, results.FileReadme, results.FileSummary, results.FileMsgpack, results.FileHTML,
		results.ChartRanks, "iter1_rank0/" + results.ChartOverview, "iter1_rank0/" + results.ChartTopConsumers,
		"iter1_rank0/" + results.ChartEfficiency, "iter1_rank10/" + results.ChartOverview} {
		if fi, err := os.Stat(filepath.Join(runDir, filepath.FromSlash(f))); err != nil || fi.Size() == 0 {
			t.Errorf("%s missing or empty (%v)", f, err)
		}
	}

	sum := readSummary(t, runDir)
	if len(sum.Inputs) != 3 || len(sum.Failures) != 0 {
		t.Fatalf("%d inputs and %d failures, want 3 and 0: %+v", len(sum.Inputs), len(sum.Failures), sum.Failures)
	}
	// Inputs come out in natural order (rank0, rank1, rank10) whatever the worker scheduling.
	wantOrder := []string{inputs[0], inputs[2], inputs[1]}
	for i, in := range sum.Inputs {
		if got := stringField(t, in, "file"); got != wantOrder[i] {
			t.Errorf("inputs[%d].file = %s, want %s", i, got, wantOrder[i])
		}
		want := expectedTotals(t, wantOrder[i])
		for key, v := range want {
			if got := intField(t, in, key); got != v {
				t.Errorf("inputs[%d].%s = %d, want %d (summed from the decoded blocks)", i, key, got, v)
			}
		}
		if r, rq, fi, fe := intField(t, in, "reserved_bytes"), intField(t, in, "requested_bytes"), intField(t, in, "internal_free_bytes"), intField(t, in, "external_free_bytes"); r != rq+fi+fe {
			t.Errorf("inputs[%d]: reserved %d != requested %d + internal %d + external %d", i, r, rq, fi, fe)
		}
	}
	if sum.Cross == nil || len(sum.Cross.Rows) != 3 {
		t.Fatalf("cross section missing or incomplete: %+v", sum.Cross)
	}

	// stdout is the summary of the same run: the cross-input table first, then each input's answer, every line
	// within 100 columns.
	if !strings.Contains(stdout, "Across 3 inputs") || !strings.Contains(stdout, "[3/3] "+inputs[1]) || !strings.Contains(stdout, "Peak ") {
		t.Errorf("stdout is not the summary:\n%.600s", stdout)
	}
	for _, line := range strings.Split(stdout, "\n") {
		if n := len([]rune(line)); n > results.SummaryWidth {
			t.Errorf("a summary line of %d columns: %q", n, line)
		}
	}
	back, err := results.ReadMsgpack(filepath.Join(runDir, results.FileMsgpack))
	if err != nil {
		t.Fatal(err)
	}
	if totals, _ := back.Inputs[1].AllocatorTotals(); totals.RequestedBytes != intField(t, sum.Inputs[1], "requested_bytes") {
		t.Error("report.msgpack and summary.json disagree")
	}
}

// TestAnalyzeDeterministic checks that the worker count does not change the report.
func TestAnalyzeDeterministic(t *testing.T) {
	files := []string{
		fixture(t, "testdata/example/rank0_memory_snapshot.pickle"),
		fixture(t, "snapshot/testdata/v21_multi_device.pickle"),
		fixture(t, "snapshot/testdata/v25_pools.pickle"),
		fixture(t, "snapshot/testdata/v28_expandable.pickle"),
	}
	var outs []string
	for _, jobs := range []string{"1", "4"} {
		code, stdout, stderr := runCLI(t, append([]string{"analyze", "--out", t.TempDir(), "--no-plots", "--format", "json", "--jobs", jobs}, files...)...)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		outs = append(outs, stdout)
	}
	if outs[0] != outs[1] {
		t.Error("--jobs 1 and --jobs 4 give different summary JSON")
	}
}

func TestAnalyzePartialFailure(t *testing.T) {
	dir := t.TempDir()
	good := fixture(t, "testdata/example/rank0_memory_snapshot.pickle")
	bad := fixture(t, "snapshot/testdata/bad/truncated.pickle")
	out := filepath.Join(dir, "results")
	code, stdout, stderr := runCLI(t, "analyze", "--out", out, "--no-plots", "--format", "md", good, bad)
	if code != exitPartial {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitPartial, stderr)
	}
	// One line for the failure as it happens, and the summary line; no panic.
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	var badLines int
	for _, l := range lines {
		if strings.Contains(l, "truncated.pickle") && strings.Contains(l, "byte") {
			badLines++
		}
	}
	if badLines != 1 {
		t.Errorf("want one line naming the bad file and its byte offset, got:\n%s", stderr)
	}
	if !strings.Contains(stderr, "1 of 2 input(s) failed") {
		t.Errorf("stderr lacks the partial-failure summary:\n%s", stderr)
	}
	if !strings.HasPrefix(stdout, "# memscan findings") {
		t.Errorf("--format md did not write Markdown to stdout:\n%.300s", stdout)
	}
	sum := readSummary(t, filepath.Join(out, results.LatestName))
	if len(sum.Inputs) != 1 || len(sum.Failures) != 1 || sum.Failures[0].File != bad {
		t.Errorf("summary.json: %d inputs, failures %+v; want 1 input and the truncated file", len(sum.Inputs), sum.Failures)
	}
}

func TestAnalyzeQuietAndRank(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCLI(t, "analyze", "--out", out, "--no-plots", "--quiet", "--rank", "5", "--name", "my run",
		fixture(t, "testdata/example/rank0_memory_snapshot.pickle"))
	if code != exitOK || stdout != "" || stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q; want 0 and silence", code, stdout, stderr)
	}
	entries, _ := os.ReadDir(out)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if len(names) != 2 || !strings.HasSuffix(names[0], "_my_run") {
		t.Errorf("results root holds %v, want one *_my_run directory and latest", names)
	}
	sum := readSummary(t, filepath.Join(out, results.LatestName))
	if got := intField(t, sum.Inputs[0], "rank"); got != 5 {
		t.Errorf("rank = %d, want the --rank override 5", got)
	}
}

// TestAnalyzeQuietWithFormat: an explicit --format still prints that report under --quiet (the documented
// `memscan analyze --format json --quiet snapshot.pickle > summary.json`), with nothing on stderr, and the
// printed JSON is the summary.json of the run directory.
func TestAnalyzeQuietWithFormat(t *testing.T) {
	for _, tc := range []struct {
		format, want string
	}{
		{"json", `"reserved_bytes"`},
		{"md", "# memscan findings"},
	} {
		t.Run(tc.format, func(t *testing.T) {
			out := t.TempDir()
			code, stdout, stderr := runCLI(t, "analyze", "--out", out, "--no-plots", "--quiet", "--format", tc.format,
				fixture(t, "testdata/example/rank0_memory_snapshot.pickle"))
			if code != exitOK || stderr != "" {
				t.Fatalf("exit %d, stderr %q; want 0 and no stderr", code, stderr)
			}
			if !strings.Contains(stdout, tc.want) {
				t.Fatalf("stdout %.200q does not hold %q", stdout, tc.want)
			}
			if tc.format == "json" {
				file, err := os.ReadFile(filepath.Join(out, results.LatestName, "summary.json"))
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(bytes.TrimSpace(file), bytes.TrimSpace([]byte(stdout))) {
					t.Errorf("stdout differs from summary.json (%d vs %d bytes)", len(stdout), len(file))
				}
			}
		})
	}
}

// TestAnalyzeRealSnapshots runs the CLI on the real snapshots and compares summary.json with PyTorch's own totals.
func TestAnalyzeRealSnapshots(t *testing.T) {
	dir, manifest := realsnap.Load(t)
	var files []string
	want := map[string][4]int64{}
	for _, m := range manifest {
		p := filepath.Join(dir, m.File)
		files = append(files, p)
		want[p] = [4]int64{m.Segsum.Reserved, m.Segsum.Allocated, m.Segsum.FreeInt, m.Segsum.FreeExt}
	}
	out := t.TempDir()
	code, _, stderr := runCLI(t, append([]string{"analyze", "--out", out, "--no-plots", "--quiet"}, files...)...)
	if code != exitOK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	sum := readSummary(t, filepath.Join(out, results.LatestName))
	if len(sum.Inputs) != len(files) {
		t.Fatalf("%d inputs analyzed, want %d", len(sum.Inputs), len(files))
	}
	for _, in := range sum.Inputs {
		f := stringField(t, in, "file")
		got := [4]int64{intField(t, in, "reserved_bytes"), intField(t, in, "requested_bytes"), intField(t, in, "internal_free_bytes"), intField(t, in, "external_free_bytes")}
		if got != want[f] {
			t.Errorf("%s: reserved/requested/internal/external = %v, PyTorch says %v", filepath.Base(f), got, want[f])
		}
	}
}

func TestAnalyzeProgressGoesToStderr(t *testing.T) {
	files := []string{fixture(t, "testdata/example/rank0_memory_snapshot.pickle"), fixture(t, "snapshot/testdata/v22_oom.pickle")}
	code, stdout, stderr := runCLI(t, append([]string{"analyze", "--out", t.TempDir(), "--no-plots", "--progress", "always", "--format", "json"}, files...)...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "analyzing") {
		t.Errorf("--progress always drew no bar on stderr: %q", stderr)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Errorf("stdout is not just the JSON report: %v", err)
	}
}

func TestAnalyzeCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"analyze", "--out", out, fixture(t, "testdata/example/rank0_memory_snapshot.pickle")}, &stdout, &stderr)
	if code == exitOK {
		t.Fatal("a cancelled analysis exited 0")
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr %q does not say the run was interrupted", stderr.String())
	}
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("a cancelled run left %d entries in the results root", len(entries))
	}
}
