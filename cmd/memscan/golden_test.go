package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// goldenFixtures names every committed input the golden tests read, from the repository root, in one place so
// that moving a fixture changes one line.
var goldenFixtures = map[string]string{
	"example":     "testdata/example/rank0_memory_snapshot.pickle",
	"tracer":      "tracer/testdata/small_rank0.json",
	"tracer-r1":   "tracer/testdata/run_r1_small.json",
	"log":         "trainlog/testdata/megatron.log",
	"timeline":    "memtimeline/testdata/small_memory_timeline.json",
	"history":     "snapshot/testdata/v20_history.pickle",
	"multidevice": "snapshot/testdata/v21_multi_device.pickle",
	"llama3":      "testdata/static/llama3-8b-fsdp8.json",
	"llama2-70b":  "testdata/static/llama2-70b-tp8-pp2.yaml",
	"mixtral":     "testdata/static/mixtral-8x7b-ep8.json",
	"manifest":    "testdata/calibration/megatron.json",
}

// runStamp matches the timestamp part of a run directory name, which changes on every run. Each case writes into
// its own results root, so no run takes a collision suffix (_2) that would depend on the clock.
var runStamp = regexp.MustCompile(`\d{8}_\d{6}`)

// maskVariable replaces what differs between runs and machines (the temporary directory, run-directory
// timestamps) with fixed words, so that the rest of the output is compared byte for byte.
func maskVariable(s, tmp string) string {
	s = strings.ReplaceAll(s, tmp, "$TMP")
	return runStamp.ReplaceAllString(s, "YYYYMMDD_HHMMSS")
}

// checkGolden compares got with testdata/golden/name, or rewrites that file under -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(want, []byte(got)) {
		t.Errorf("%s differs from the golden file (go test -run %s -update rewrites it):\n%s", path, t.Name(), firstDiff(string(want), got))
	}
}

// firstDiff shows the first differing line of want and got with its line number.
func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(wl), len(gl)); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return "line " + strconv.Itoa(i+1) + ":\n  want " + w + "\n  got  " + g
		}
	}
	return "(only line endings differ)"
}

// TestCLIGolden pins the stdout of every text-producing command on small committed or generated inputs. Only
// run-directory timestamps and machine paths are masked; every number is compared.
func TestCLIGolden(t *testing.T) {
	// Inputs are named relative to this package's directory (the test's working directory), so that paths and the
	// underlines sized to them are the same in every checkout.
	root := filepath.Join("..", "..")
	in := func(key string) string {
		fixture(t, goldenFixtures[key])
		return filepath.Join(root, filepath.FromSlash(goldenFixtures[key]))
	}

	tmp := t.TempDir()
	writeSummaries(t, tmp, 8)
	before, after := compareRunDirs(t, tmp)

	// outRoot stands for the case's own results root in the arguments below.
	const outRoot = "$OUT"
	analyzeArgs := func(format string, inputs ...string) []string {
		return append([]string{"analyze", "--no-plots", "--progress", "never", "--jobs", "1", "--out", outRoot, "--format", format}, inputs...)
	}
	cases := []struct {
		golden string
		args   []string
	}{
		{"analyze_example.txt", analyzeArgs("text", in("example"))},
		{"analyze_example_verbose.txt", append(analyzeArgs("text", "--verbose", "--name", "verbose"), in("example"))}, // its own run name: a third rank0 directory would take a suffix that depends on the clock
		{"analyze_example.md", analyzeArgs("md", in("example"))},
		{"analyze_tracer.txt", analyzeArgs("text", in("tracer"))},
		{"analyze_tracer.md", analyzeArgs("md", in("tracer"))},
		{"analyze_log.txt", analyzeArgs("text", in("log"))},
		{"analyze_two_snapshots.txt", analyzeArgs("text", in("history"), in("multidevice"))},
		// summary.json is a contract: one input of each kind, byte for byte.
		{"analyze_four_kinds.json", analyzeArgs("json", in("example"), in("tracer"), in("timeline"), in("log"))},
		{"static_llama3.txt", []string{"static", "--no-files", "--no-plots", "--config", in("llama3")}},
		{"static_llama2_70b.txt", []string{"static", "--no-files", "--no-plots", "--config", in("llama2-70b")}},
		{"static_mixtral.txt", []string{"static", "--no-files", "--no-plots", "--config", in("mixtral")}},
		{"static_llama3_strategies.txt", []string{"static", "--no-files", "--no-plots", "--config", in("llama3"), "--compare-strategies"}},
		{"calibrate_manifest.txt", []string{"calibrate", "--no-files", "--no-plots", "--jobs", "1", "--manifest", in("manifest")}},
		{"calibrate_manifest.md", []string{"calibrate", "--no-files", "--no-plots", "--jobs", "1", "--format", "md", "--manifest", in("manifest")}},
		{"compare_rundirs.md", []string{"compare", "--no-plots", "--out", outRoot, before, after}},
		{"compare_tracers.md", []string{"compare", "--no-plots", "--out", outRoot, in("tracer"), in("tracer-r1")}},
		{"gpus.txt", []string{"gpus"}},
		{"gpus_presets.txt", []string{"gpus", "--presets"}},
		{"merge_8ranks.txt", []string{"merge", "--no-files", "--stages", "2", "--jobs", "1", filepath.Join(tmp, "ranks")}},
	}
	for _, tc := range cases {
		t.Run(tc.golden, func(t *testing.T) {
			args := slices.Clone(tc.args)
			for i, a := range args {
				if a == outRoot {
					args[i] = filepath.Join(tmp, "results", tc.golden)
				}
			}
			code, stdout, stderr := runCLI(t, args...)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			checkGolden(t, tc.golden, maskVariable(stdout, tmp))
			checkGolden(t, tc.golden+".stderr", maskVariable(stderr, tmp))
		})
	}
}

// TestCLIFailureGolden pins what every command prints when it refuses or fails: exit status, stdout and stderr,
// and every --help text, so that restructuring the CLI cannot change a message unnoticed.
func TestCLIFailureGolden(t *testing.T) {
	root := filepath.Join("..", "..")
	in := func(key string) string {
		fixture(t, goldenFixtures[key])
		return filepath.Join(root, filepath.FromSlash(goldenFixtures[key]))
	}
	tmp := t.TempDir()
	// A snapshot cut in half: a decode error that names the byte offset.
	example, err := os.ReadFile(in("example"))
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(tmp, "truncated.pickle")
	if err := os.WriteFile(truncated, example[:len(example)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	badConfig := filepath.Join(tmp, "bad.json")
	if err := os.WriteFile(badConfig, []byte(`{"model": {"hidden_size": 4096, "no_such_key": 1}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// A torch.profiler trace, the file people most often take for a memory dump.
	profTrace := filepath.Join(tmp, "trace.json")
	if err := os.WriteFile(profTrace, []byte(`{"schemaVersion": 1, "deviceProperties": [], "traceEvents": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(tmp, "empty")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "results")
	cases := []struct {
		golden string
		args   []string
	}{
		{"fail_no_command.txt", nil},
		{"fail_unknown_command.txt", []string{"analyse"}},
		{"help_top.txt", []string{"--help"}},
		{"help_help.txt", []string{"help"}},
		{"version.txt", []string{"version"}},
		{"version_flag.txt", []string{"--version"}},
		{"help_command_merge.txt", []string{"help", "merge"}},
		{"fail_help_unknown.txt", []string{"help", "analyse"}},
		{"help_analyze.txt", []string{"analyze", "--help"}},
		{"help_static.txt", []string{"static", "--help"}},
		{"help_gpus.txt", []string{"gpus", "--help"}},
		{"help_calibrate.txt", []string{"calibrate", "--help"}},
		{"help_compare.txt", []string{"compare", "--help"}},
		{"help_export.txt", []string{"export", "--help"}},
		{"help_merge.txt", []string{"merge", "--help"}},
		{"help_view.txt", []string{"view", "--help"}},
		{"fail_analyze_no_input.txt", []string{"analyze", "--out", out}},
		{"fail_analyze_bad_flag.txt", []string{"analyze", "--no-plot", in("example")}},
		{"fail_analyze_bad_format.txt", []string{"analyze", "--format", "xml", "--out", out, in("example")}},
		{"fail_analyze_missing.txt", []string{"analyze", "--progress", "never", "--out", out, filepath.Join(tmp, "missing.pickle")}},
		{"fail_analyze_truncated.txt", []string{"analyze", "--progress", "never", "--no-plots", "--out", out, truncated}},
		{"fail_analyze_profiler_trace.txt", []string{"analyze", "--progress", "never", "--no-plots", "--out", out, profTrace}},
		{"fail_analyze_bad_alloc_conf.txt", []string{"analyze", "--alloc-conf", "expandable_segment:True", "--out", out, in("example")}},
		{"fail_analyze_bad_gpu.txt", []string{"analyze", "--gpu", "h9000", "--out", out, in("example")}},
		{"fail_static_no_config.txt", []string{"static", "--no-files"}},
		{"fail_static_missing_config.txt", []string{"static", "--no-files", "--config", filepath.Join(tmp, "missing.json")}},
		{"fail_static_bad_key.txt", []string{"static", "--no-files", "--config", badConfig}},
		{"fail_gpus_bad_format.txt", []string{"gpus", "--format", "xml"}},
		{"fail_calibrate_no_input.txt", []string{"calibrate", "--no-files"}},
		{"fail_compare_one_input.txt", []string{"compare", "--no-plots", "--out", out, in("tracer")}},
		{"fail_export_no_format.txt", []string{"export", in("example")}},
		{"fail_export_bad_format.txt", []string{"export", "--format", "svg", in("example")}},
		{"fail_export_tracer.txt", []string{"export", "--format", "pprof", in("tracer")}},
		{"fail_merge_empty.txt", []string{"merge", "--no-files", empty}},
		{"fail_merge_bad_stages.txt", []string{"merge", "--no-files", "--stages", "-2", empty}},
	}
	for _, tc := range cases {
		t.Run(tc.golden, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tc.args...)
			got := "exit " + strconv.Itoa(code) + "\n--- stdout\n" + stdout + "--- stderr\n" + stderr
			checkGolden(t, tc.golden, maskVariable(got, tmp))
		})
	}
}

// TestRunDirGolden pins summary.json and report.msgpack of the bundled example byte for byte: both are contracts
// that scripts and memscan compare read.
func TestRunDirGolden(t *testing.T) {
	example := filepath.Join("..", "..", filepath.FromSlash(goldenFixtures["example"]))
	fixture(t, goldenFixtures["example"])
	out := filepath.Join(t.TempDir(), "results")
	code, _, stderr := runCLI(t, "analyze", "--no-plots", "--progress", "never", "--jobs", "1", "--quiet", "--out", out, example)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, name := range []string{"summary.json", "report.msgpack"} {
		data, err := os.ReadFile(filepath.Join(out, "latest", name))
		if err != nil {
			t.Fatal(err)
		}
		checkGoldenBytes(t, "rundir_example_"+name, data)
	}
}

// checkGoldenBytes compares binary output with testdata/golden/name, or rewrites it under -update.
func checkGoldenBytes(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		n := 0
		for n < min(len(want), len(got)) && want[n] == got[n] {
			n++
		}
		t.Errorf("%s differs from the golden file at byte %d (%d bytes, want %d); go test -run %s -update rewrites it", path, n, len(got), len(want), t.Name())
	}
}
