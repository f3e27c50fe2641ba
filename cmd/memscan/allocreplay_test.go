package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/memscan/memscan/allocator"
	"github.com/memscan/memscan/internal/results"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/snapshot"
)

func TestAnalyzeAllocConfUsageErrors(t *testing.T) {
	good := fixture(t, "testdata/example/rank0_memory_snapshot.pickle")
	out := t.TempDir()
	checkCLIErrors(t, []cliErrorCase{
		{"unknown setting", []string{"analyze", "--out", out, "--alloc-conf", "expandable_segment:True", good}, exitUsage, `"expandable_segment": unknown setting`},
		{"malformed value", []string{"analyze", "--out", out, "--alloc-conf", "expandable_segments:True,max_split_size_mb:10", good}, exitUsage, `"max_split_size_mb"`},
		{"malformed list", []string{"analyze", "--out", out, "--alloc-conf", "roundup_power2_divisions:[64:3]", good}, exitUsage, `"roundup_power2_divisions"`},
		{"unmodelled backend", []string{"analyze", "--out", out, "--alloc-conf", "backend:cudaMallocAsync", good}, exitUsage, `"backend"`},
		{"unknown gpu", []string{"analyze", "--out", out, "--gpu", "h9000", good}, exitUsage, `--gpu: unknown GPU "h9000"`},
		{"bad device memory", []string{"analyze", "--out", out, "--device-memory", "lots", good}, exitUsage, `--device-memory: cannot read "lots"`},
		{"device memory below the context", []string{"analyze", "--out", out, "--device-memory", "512MiB", good}, exitUsage, "leaves nothing"},
		{"gpu and device memory", []string{"analyze", "--out", out, "--gpu", "h100-sxm", "--device-memory", "80GB", good}, exitUsage, "--gpu or --device-memory, not both"},
	})
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Errorf("a usage error wrote %d entries to --out", len(entries))
	}
}

// recordedPeak is the running maximum of the trace's segment events of device 0, computed here without the
// allocator model.
func recordedPeak(t *testing.T, path string) int64 {
	t.Helper()
	in, err := load.DecodeFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	var cur, peak int64
	for _, e := range in.Snapshot.DeviceTraces[0] {
		switch e.Action {
		case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentMap:
			cur += e.Size
		case snapshot.ActionSegmentFree, snapshot.ActionSegmentUnmap:
			cur -= e.Size
		}
		peak = max(peak, cur)
	}
	return peak
}

// TestAnalyzeAllocConf runs a what-if end to end: summary.json's allocator_replay, the text report, README.md and
// index.html all carry recorded vs replayed vs what-if.
func TestAnalyzeAllocConf(t *testing.T) {
	snap := fixture(t, "testdata/example/rank0_memory_snapshot.pickle")
	want := recordedPeak(t, snap)
	out := t.TempDir()
	code, stdout, stderr := runCLI(t, "analyze", "--out", out, "--no-plots", "--quiet", "--format", "json",
		"--alloc-conf", "expandable_segments:True", "--device-memory", "80GB", snap)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum struct {
		Inputs []struct {
			AllocatorReplay *struct {
				Settings         string `json:"settings"`
				RecordedSettings string `json:"recorded_settings"`
				WhatIf           bool   `json:"what_if"`
				Capacity         int64  `json:"capacity_bytes"`
				CapacitySource   string `json:"capacity_source"`
				Recorded         int64  `json:"recorded_peak_reserved_bytes"`
				Baseline         int64  `json:"baseline_peak_reserved_bytes"`
				Peak             int64  `json:"peak_reserved_bytes"`
				Partial          *bool  `json:"partial"`
				Matches          bool   `json:"baseline_matches_recording"`
				BaseFrag         struct {
					Reserved int64 `json:"reserved_bytes"`
				} `json:"baseline_fragmentation_at_peak"`
				Frag struct {
					Reserved int64 `json:"reserved_bytes"`
					Free     int64 `json:"free_bytes"`
				} `json:"fragmentation_at_peak"`
			} `json:"allocator_replay"`
		} `json:"inputs"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	ar := sum.Inputs[0].AllocatorReplay
	if ar == nil {
		t.Fatal("summary.json has no allocator_replay")
	}
	if ar.Settings != "expandable_segments:True" || !ar.WhatIf || ar.RecordedSettings == "" {
		t.Errorf("settings %q (what-if %v), recorded %q", ar.Settings, ar.WhatIf, ar.RecordedSettings)
	}
	if ar.Capacity != 80_000_000_000-allocator.ContextReserve || !strings.Contains(ar.CapacitySource, "--device-memory") {
		t.Errorf("capacity %d from %q", ar.Capacity, ar.CapacitySource)
	}
	if ar.Recorded != want || ar.Baseline != want || !ar.Matches || ar.Partial == nil || *ar.Partial || ar.BaseFrag.Reserved != want {
		t.Errorf("recorded %d, baseline %d (matches %v, partial %v); the trace's segment events peak at %d", ar.Recorded, ar.Baseline, ar.Matches, ar.Partial, want)
	}
	if ar.Peak <= 0 || ar.Frag.Reserved != ar.Peak || ar.Frag.Free < 0 {
		t.Errorf("what-if peak %d, fragmentation %+v", ar.Peak, ar.Frag)
	}

	dir := filepath.Join(out, "latest")
	text, err := os.ReadFile(filepath.Join(dir, results.FileTextReport))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Allocator replay (device 0)", "what-if", "expandable_segments:True", results.GroupDigits(want), "from --device-memory"} {
		if !strings.Contains(string(text), s) {
			t.Errorf("%s lacks %q", results.FileTextReport, s)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, results.FileReadme))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "Under `expandable_segments:True` the same trace would reserve") {
		t.Errorf("README.md lacks the what-if finding")
	}
	page, err := os.ReadFile(filepath.Join(dir, results.FileHTML))
	if err != nil {
		t.Fatal(err)
	}
	for field, v := range map[string]int64{"recorded_peak_reserved_bytes": want, "baseline_peak_reserved_bytes": want, "peak_reserved_bytes": ar.Peak} {
		if s := `data-field="allocator_replay.` + field + `" data-device="0" data-value="` + strconv.FormatInt(v, 10) + `"`; !strings.Contains(string(page), s) {
			t.Errorf("index.html lacks %s", s)
		}
	}
}

// TestAnalyzeBaselineOnly: without --alloc-conf the baseline still runs and says which capacity it assumed.
func TestAnalyzeBaselineOnly(t *testing.T) {
	snap := fixture(t, "testdata/example/rank0_memory_snapshot.pickle")
	code, stdout, stderr := runCLI(t, "analyze", "--out", t.TempDir(), "--no-plots", "--quiet", "--format", "text", "--verbose", snap)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, s := range []string{"Allocator replay (device 0)", "capacity:          unlimited (no --gpu or --device-memory given", "reproduces the recorded peak to the byte"} {
		if !strings.Contains(stdout, s) {
			t.Errorf("report lacks %q", s)
		}
	}
	if strings.Contains(stdout, "what-if") {
		t.Errorf("a what-if row without --alloc-conf")
	}
}

// TestAnalyzeGPUCapacity: --gpu takes the catalogue's memory less the context reserve.
func TestAnalyzeGPUCapacity(t *testing.T) {
	snap := fixture(t, "testdata/example/rank0_memory_snapshot.pickle")
	code, stdout, stderr := runCLI(t, "analyze", "--out", t.TempDir(), "--no-plots", "--quiet", "--format", "json", "--gpu", "h100-sxm", "--alloc-conf", "max_split_size_mb:64", snap)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var sum struct {
		Inputs []struct {
			AllocatorReplay struct {
				Capacity int64  `json:"capacity_bytes"`
				Source   string `json:"capacity_source"`
				Settings string `json:"settings"`
			} `json:"allocator_replay"`
		} `json:"inputs"`
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	// The catalogue lists the H100 SXM with 79.19 GiB visible.
	ar := sum.Inputs[0].AllocatorReplay
	gib := 79.19
	if want := int64(gib*(1<<30)) - allocator.ContextReserve; ar.Capacity != want || !strings.Contains(ar.Source, "--gpu h100-sxm") || ar.Settings != "max_split_size_mb:64" {
		t.Errorf("capacity %d from %q (want %d), settings %q", ar.Capacity, ar.Source, want, ar.Settings)
	}
}

// TestAnalyzeCapacityBelowRecording: a device memory too small for what the recording itself reserved (the
// usual cause: "80GB" read as 80·10^9 bytes for an 80 GiB card) is named in the warnings; a capacity above the
// recording is not.
func TestAnalyzeCapacityBelowRecording(t *testing.T) {
	snap := fixture(t, "testdata/example/rank0_memory_snapshot.pickle")
	recorded := recordedPeak(t, snap)
	below := units.Bytes(recorded + allocator.ContextReserve - 64<<20) // 64 MiB short of what was reserved
	for _, tc := range []struct {
		memory string
		warns  bool
	}{
		{fmt.Sprint(recorded + allocator.ContextReserve - 64<<20), true},
		{fmt.Sprint(recorded + allocator.ContextReserve), false},
		{"80GB", false},
	} {
		t.Run(tc.memory, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, "analyze", "--out", t.TempDir(), "--no-plots", "--quiet", "--format", "json",
				"--device-memory", tc.memory, snap)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var sum struct {
				Inputs []struct {
					Warnings []string `json:"warnings"`
				} `json:"inputs"`
			}
			if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("device 0 reserved %s in the recording, more than the capacity of", units.Bytes(recorded))
			found := false
			for _, w := range sum.Inputs[0].Warnings {
				found = found || strings.Contains(w, want)
			}
			if found != tc.warns {
				t.Errorf("warned %v, want %v (capacity %s below would warn): %q", found, tc.warns, below, sum.Inputs[0].Warnings)
			}
		})
	}
}
