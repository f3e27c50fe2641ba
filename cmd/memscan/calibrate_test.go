package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/testutil"
)

func TestCalibrateManifestCLI(t *testing.T) {
	out := t.TempDir()
	corr := filepath.Join(t.TempDir(), "corrections.json")
	code, stdout, stderr := runCLI(t, "calibrate", "--manifest", fixture(t, "testdata/calibration/megatron.json"),
		"--out", out, "--save-corrections", corr)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	for _, want := range []string{"peak_allocated", "end_of_step_allocated", "Leave-one-out", "held-out", "gpt3_7b_tp4_pp1_memory_speed/h100"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q", want)
		}
	}
	checkOnlyRun(t, out)
	for _, f := range []string{"calibration.md", "calibration.json", "calibration_components.png", "calibration_scatter.png", "corrections.json"} {
		if _, err := os.Stat(filepath.Join(out, "latest", f)); err != nil {
			t.Errorf("run directory: %v", err)
		}
	}

	// static --calibration keeps the raw report byte for byte and adds the corrected table after it.
	cfg := fixture(t, "testdata/calibration/megatron/gpt3_mcore_tp1_pp2.json")
	code, raw, stderr := runCLI(t, "static", "--config", cfg, "--no-files")
	if code != exitOK {
		t.Fatalf("static: exit %d, %s", code, stderr)
	}
	code, both, stderr := runCLI(t, "static", "--config", cfg, "--no-files", "--calibration", corr)
	if code != exitOK {
		t.Fatalf("static --calibration: exit %d, %s", code, stderr)
	}
	if !strings.HasPrefix(both, raw) {
		t.Error("static --calibration changed the raw report")
	}
	if tail := strings.TrimPrefix(both, raw); !strings.Contains(tail, "Calibrated prediction") || !strings.Contains(tail, "peak_allocated") {
		t.Errorf("no corrected table after the raw report:\n%s", tail)
	}
	staticOut := t.TempDir()
	if code, _, stderr := runCLI(t, "static", "--config", cfg, "--out", staticOut, "--no-plots", "--calibration", corr); code != exitOK {
		t.Fatalf("static --calibration with files: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(staticOut, "latest", "static_calibrated.json")); err != nil {
		t.Error(err)
	}
}

func TestCalibrateUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"neither", []string{"calibrate"}, "exactly one of"},
		{"both", []string{"calibrate", "--config", "a.json", "--manifest", "m.json"}, "exactly one of"},
		{"nothing-measured", []string{"calibrate", "--config", "a.json"}, "no RUNTIME"},
		{"jobs", []string{"calibrate", "--manifest", "m.json", "--jobs", "0"}, "--jobs"},
		{"missing-manifest", []string{"calibrate", "--manifest", "/nonexistent/m.json"}, "manifest"},
		{"bad-corrections", []string{"static", "--model", "llama3.2-1b", "--no-files", "--calibration", "/nonexistent/c.json"}, "--calibration"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, exitUsage, tc.want)
			}
		})
	}
}

func TestCalibrateConfigWithSnapshot(t *testing.T) {
	out := t.TempDir()
	code, stdout, stderr := runCLI(t, "calibrate", "--config", fixture(t, "testdata/static/llama3-8b-fsdp8.json"),
		"--out", out, "--no-plots", fixture(t, "testdata/example/rank0_memory_snapshot.pickle"))
	if code != exitOK {
		t.Fatalf("exit %d, %s", code, stderr)
	}
	for _, want := range []string{"peak_allocated", "weights", "activations", "peak stage predicted"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, stderr = runCLI(t, "analyze", "--static", fixture(t, "testdata/static/llama3-8b-fsdp8.json"), "--out", out, "--no-plots",
		fixture(t, "testdata/example/rank0_memory_snapshot.pickle"))
	if code != exitOK {
		t.Fatalf("analyze --static: exit %d, %s", code, stderr)
	}
	if !strings.Contains(stdout, "memscan calibrate") {
		t.Error("analyze --static printed no calibration table")
	}
	if _, err := os.Stat(filepath.Join(out, "latest", "calibration.json")); err != nil {
		t.Error(err)
	}
}

// TestCalibrateH200Snapshot runs memscan calibrate on the shared healthy Llama snapshot with its config: the
// observed peak is in backward (as predicted, not "forward"), calibration.json keeps the prediction's at_peak and
// the attribution's components, and every component is within 5 % of the measured total.
func TestCalibrateH200Snapshot(t *testing.T) {
	snap := filepath.Join(testutil.SharedDir(t, "gpu_runs"), "llama1b-bf16-b4-s2048-snap.pickle.gz")
	cfg := fixture(t, "testdata/static/h200/llama1b-bf16-b4-s2048-snap.json")
	code, stdout, stderr := runCLI(t, "calibrate", "--config", cfg, "--format", "json", "--no-files", snap)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var c struct {
		Runs []struct {
			Prediction struct {
				AtPeak map[string]int64 `json:"at_peak"`
			} `json:"prediction"`
			Attribution struct {
				Components []struct {
					Component string `json:"component"`
					Bytes     int64  `json:"bytes"`
				} `json:"components"`
			} `json:"attribution"`
			Observed  string `json:"peak_stage_observed"`
			Predicted string `json:"peak_stage_predicted"`
			Rows      []struct {
				Metric, Component string
				ErrorOfTotalPct   float64 `json:"error_of_total_pct"`
			} `json:"rows"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(stdout), &c); err != nil || len(c.Runs) != 1 {
		t.Fatalf("calibration.json: %v, %d runs", err, len(c.Runs))
	}
	r := c.Runs[0]
	if r.Observed != "backward" || r.Predicted != "backward" {
		t.Errorf("peak stage predicted %q, observed %q; want backward for both", r.Predicted, r.Observed)
	}
	if len(r.Prediction.AtPeak) < 5 || len(r.Attribution.Components) < 5 {
		t.Errorf("at_peak %v, components %v", r.Prediction.AtPeak, r.Attribution.Components)
	}
	n := 0
	for _, row := range r.Rows {
		if row.Metric == "allocated_at_peak" {
			n++
			if row.ErrorOfTotalPct < -5 || row.ErrorOfTotalPct > 5 {
				t.Errorf("%s off by %+.1f %% of the total", row.Component, row.ErrorOfTotalPct)
			}
		}
	}
	if n < 5 {
		t.Errorf("%d component rows", n)
	}
}
