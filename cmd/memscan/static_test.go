package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/results"
)

func TestStaticCommand(t *testing.T) {
	dir := t.TempDir()
	code, out, errOut := runCLI(t, "static", "--config", filepath.Join("..", "..", "testdata", "static", "llama3-8b-fsdp8.json"),
		"--out", dir, "--compare-strategies", "--max-batch-size", "--max-seq-length")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"FITS", "MEMORY PER GPU", "STRATEGY COMPARISON", "Max training.micro_batch_size", "ROOFLINE", "ASSUMPTIONS"} {
		if !strings.Contains(out, want) {
			t.Errorf("console output lacks %q", want)
		}
	}
	run := filepath.Join(dir, results.LatestName)
	for _, f := range []string{"static_report.json", "static_report.md", "memory_breakdown.png", "peak_per_stage.png", "strategy_comparison.png", "roofline.png"} {
		b, err := os.ReadFile(filepath.Join(run, f))
		if err != nil {
			t.Errorf("missing %s: %v", f, err)
			continue
		}
		if strings.HasSuffix(f, ".png") && !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Errorf("%s is not a PNG", f)
		}
	}
	var rep struct {
		Summary map[string]any   `json:"summary"`
		Ops     []map[string]any `json:"operators"`
	}
	b, _ := os.ReadFile(filepath.Join(run, "static_report.json"))
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Summary["param_count"].(float64) != 8_030_261_248 || len(rep.Ops) == 0 {
		t.Errorf("static_report.json: param_count %v, %d operators", rep.Summary["param_count"], len(rep.Ops))
	}
}

func TestStaticFlagsOnly(t *testing.T) {
	code, out, errOut := runCLI(t, "static", "--model", "llama2-70b", "--gpu", "h100", "--num-gpus", "8", "--tp", "8", "--mode", "inference",
		"--batch-size", "8", "--seq-length", "4096", "--no-files", "--format", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Summary struct {
			KV int64 `json:"kv_cache_memory_bytes"`
		} `json:"summary"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	// 2 · 80 layers · 1 KV head per GPU · 128 · 2 B = 40 KiB per token; 8 × 4096 tokens.
	if want := int64(40960 * 8 * 4096); rep.Summary.KV != want {
		t.Errorf("KV cache %d, want %d", rep.Summary.KV, want)
	}
	code, out, _ = runCLI(t, "static", "--model-size", "7.0", "--no-files", "--format", "md")
	if code != exitOK || !strings.Contains(out, "# memscan static report") {
		t.Errorf("--model-size 7.0: exit %d", code)
	}
}

func TestStaticErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"model":{"preset":"llama3-8b"},"parallel":{"tp":3},"hardware":{"num_gpus":3}}`), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"static", "--config", bad, "--no-files"}, "parallel.tp: 3 does not divide model.num_attention_heads (32)"},
		{[]string{"static", "--no-files"}, "give --config FILE"},
		{[]string{"static", "--model", "llama3-8b", "--tp", "5", "--num-gpus", "5", "--no-files"}, "parallel.tp: 5"},
		{[]string{"static", "--bogus"}, "unknown flag"},
		{[]string{"static", "--model-size", "0", "--no-files"}, "--model-size must be a positive number"},
		{[]string{"static", "--model-size", "-7", "--no-files"}, "--model-size must be a positive number"},
		{[]string{"static", "--config", filepath.Join(dir, "missing.json")}, "no such file"},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 1 and %q", tc.args, code, errOut, tc.want)
		}
	}
}

func TestStaticAndGPUsHelp(t *testing.T) {
	code, out, _ := runCLI(t, "static", "--help")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, flag := range []string{"--config", "--out", "--model", "--model-size", "--gpu", "--num-gpus", "--tp", "--pp", "--dp", "--cp", "--ep", "--sp",
		"--zero", "--dist-opt", "--attention", "--recompute", "--loss", "--kernels", "--precision", "--optimizer", "--max-batch-size", "--max-seq-length",
		"--compare-strategies", "--unroll", "--mode", "--gpus-file", "--usable-fraction", "--mfu", "--train-tokens", "--price-per-gpu-hour"} {
		if !strings.Contains(out, flag) {
			t.Errorf("static --help does not explain %s", flag)
		}
	}
	code, out, _ = runCLI(t, "gpus")
	if code != exitOK || !strings.Contains(out, "h100-sxm") || !strings.Contains(out, "mi300x") || !strings.Contains(out, "RIDGE") {
		t.Errorf("gpus: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, "gpus", "--help")
	if code != exitOK || !strings.Contains(out, "--gpus-file") {
		t.Errorf("gpus --help: exit %d", code)
	}
}

func TestCustomGPUFile(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "gpus.yaml")
	os.WriteFile(f, []byte("- key: my-card\n  name: My Card 48GB\n  memory_gib: 47.5\n  bandwidth_tbs: 1.2\n  bf16_tflops: 300\n"), 0o644)
	code, out, errOut := runCLI(t, "gpus", "--gpus-file", f)
	if code != exitOK || !strings.Contains(out, "my-card") {
		t.Fatalf("gpus --gpus-file: exit %d %s", code, errOut)
	}
	code, out, errOut = runCLI(t, "static", "--model", "llama3.2-1b", "--gpus-file", f, "--gpu", "my-card", "--no-files")
	if code != exitOK || !strings.Contains(out, "My Card 48GB") || !strings.Contains(out, "47.5 GiB") {
		t.Errorf("static with custom GPU: exit %d %s\n%s", code, errOut, out)
	}
}

// TestStaticLayoutFlagKeepsGlobalBatch: a layout flag on top of a config changes the layout, not the training
// step. testdata/static/llama3-8b-fsdp8.json has global batch 32 and micro-batch 1; with --tp 8 on its 8 GPUs
// dp becomes 1, so the step is 32 / (1 · 1) = 32 micro-batches.
func TestStaticLayoutFlagKeepsGlobalBatch(t *testing.T) {
	cfg := fixture(t, "testdata/static/llama3-8b-fsdp8.json")
	code, out, errOut := runCLI(t, "static", "--config", cfg, "--tp", "8", "--no-files", "--no-plots")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.Contains(out, "global batch 32 (32 micro-batches)") {
		t.Errorf("global batch not kept:\n%s", out)
	}
}

// TestStaticWritesRunDirectories: each run of memscan static writes a run directory of its own, named from the
// config, and points latest at the newest, as analyze, compare, calibrate and merge do; it used to write into
// outputs/ and overwrite the previous run.
func TestStaticWritesRunDirectories(t *testing.T) {
	out := t.TempDir()
	cfg := fixture(t, goldenFixtures["llama3"])
	var dirs []string
	for range 2 {
		code, _, stderr := runCLI(t, "static", "--no-plots", "--out", out, "--config", cfg)
		if code != exitOK {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		dir, ok := strings.CutPrefix(strings.TrimSpace(stderr), "wrote ")
		if !ok || filepath.Dir(dir) != out || !runStamp.MatchString(filepath.Base(dir)) || !strings.Contains(filepath.Base(dir), "_static_llama3-8b-fsdp8") {
			t.Fatalf("stderr %q does not name a run directory in %s", stderr, out)
		}
		dirs = append(dirs, dir)
	}
	if dirs[0] == dirs[1] {
		t.Fatalf("both runs wrote %s", dirs[0])
	}
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "static_report.json")); err != nil {
			t.Error(err)
		}
	}
	if target, err := os.Readlink(filepath.Join(out, results.LatestName)); err != nil || target != filepath.Base(dirs[1]) {
		t.Errorf("latest -> %q (%v), want %s", target, err, filepath.Base(dirs[1]))
	}
	code, _, stderr := runCLI(t, "static", "--no-plots", "--out", out, "--model", "llama3-8b", "--name", "mine")
	if code != exitOK || !strings.HasSuffix(strings.TrimSpace(stderr), "_mine") {
		t.Errorf("--name: exit %d, stderr %q", code, stderr)
	}
}
