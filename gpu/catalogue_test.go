package gpu

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestCatalogueFormats: each part lists only the formats its tensor cores have (vendor datasheets): V100 (sm 7.0)
// has FP16 tensor cores (125 TFLOP/s) and no BF16 or TF32, so fp32 matmuls run at its 15.7 TFLOP/s fp32 rate;
// MI250X (CDNA2) has no TF32 but fp32 matrix cores (95.7); TPUs have no TF32.
func TestCatalogueFormats(t *testing.T) {
	tests := []struct {
		key                    string
		bf16, fp16, tf32, fp32 float64 // catalogue fields
		peakFP32, peakBF16     float64 // what the roofline uses for fp32 and bf16 compute
	}{
		{"v100-32gb", 0, 125, 0, 15.7, 15.7, 125},
		{"v100-16gb", 0, 125, 0, 15.7, 15.7, 125},
		{"mi250x", 383, 383, 0, 47.9, 95.7, 383},
		{"tpu-v5e", 197, 197, 0, 24.6, 24.6, 197},
		{"a100-80gb-sxm", 312, 312, 156, 19.5, 156, 312},
	}
	for _, tc := range tests {
		g, err := Lookup(tc.key)
		if err != nil {
			t.Fatal(err)
		}
		if g.BF16TFLOPS != tc.bf16 || g.FP16TFLOPS != tc.fp16 || g.TF32TFLOPS != tc.tf32 || g.FP32TFLOPS != tc.fp32 {
			t.Errorf("%s: bf16 %g fp16 %g tf32 %g fp32 %g, want %g %g %g %g", tc.key, g.BF16TFLOPS, g.FP16TFLOPS, g.TF32TFLOPS, g.FP32TFLOPS,
				tc.bf16, tc.fp16, tc.tf32, tc.fp32)
		}
		if p := g.PeakTFLOPS("fp32"); p != tc.peakFP32 {
			t.Errorf("%s: fp32 matmul peak %g, want %g", tc.key, p, tc.peakFP32)
		}
		if p := g.PeakTFLOPS("bf16"); p != tc.peakBF16 {
			t.Errorf("%s: bf16 peak %g, want %g", tc.key, p, tc.peakBF16)
		}
	}
	for _, g := range List() {
		if g.ComputeCapability > 0 && g.ComputeCapability < 8 && (g.BF16TFLOPS > 0 || g.TF32TFLOPS > 0) {
			t.Errorf("%s (sm %.1f) lists bf16 %g / tf32 %g: both arrived with sm 8.0", g.Key, g.ComputeCapability, g.BF16TFLOPS, g.TF32TFLOPS)
		}
	}
}

// TestLookup: keys, aliases and full names find the same part, case and spacing aside; an unknown name lists the
// keys.
func TestLookup(t *testing.T) {
	for _, name := range []string{"h100-sxm", "H100", " nvidia h100 ", "NVIDIA H100 SXM5 80GB", "h100-sxm5"} {
		g, err := Lookup(name)
		if err != nil || g.Key != "h100-sxm" {
			t.Errorf("Lookup(%q) = %q, %v; want h100-sxm", name, g.Key, err)
		}
	}
	_, err := Lookup("h900")
	if err == nil || !strings.Contains(err.Error(), `unknown GPU "h900"`) || !strings.Contains(err.Error(), "a100-40gb-pcie, a100-40gb-sxm") {
		t.Errorf("Lookup(h900) error %v, want the unknown name and the sorted keys", err)
	}
	list := List()
	if len(list) != len(catalogue) || !sort.SliceIsSorted(list, func(i, j int) bool { return list[i].Key < list[j].Key }) {
		t.Errorf("List: %d entries (catalogue %d), sorted %v", len(list), len(catalogue), sort.SliceIsSorted(list, func(i, j int) bool { return list[i].Key < list[j].Key }))
	}
	list[0].Key = "changed"
	if List()[0].Key == "changed" {
		t.Error("List returned the catalogue itself, not a copy")
	}
}

// TestLoadFile: YAML and JSON lists load with the left-out figures filled (memory from GB at 1e9/2^30·0.99, FP16
// from BF16, TF32 = BF16/2, FP32 = FP16/8, PCIe 4 interconnect); bad files name the file and what is wrong.
func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	wantGiB := 48 * 1e9 / (1 << 30) * 0.99
	for _, p := range []string{
		write("cards.yaml", "- key: my-card\n  memory_gb: 48\n  bandwidth_tbs: 1\n  bf16_tflops: 200\n"),
		write("cards.json", `[{"key": "my-card", "memory_gb": 48, "bandwidth_tbs": 1, "bf16_tflops": 200}]`),
	} {
		specs, err := LoadFile(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		g := specs[0]
		if len(specs) != 1 || g.Key != "my-card" || g.Name != "custom GPU" || g.MemoryGiB != wantGiB || g.FP16TFLOPS != 200 ||
			g.TF32TFLOPS != 100 || g.FP32TFLOPS != 25 || g.IntraGBps != 64 {
			t.Errorf("%s: %+v", p, specs)
		}
	}
	for _, tc := range []struct{ name, body, want string }{
		{"syntax.json", `[{"key": "x",}]`, "syntax.json:1:14: invalid JSON: invalid character '}'"},
		{"unknown.json", `[{"key": "x", "memroy_gb": 4}]`, `unknown.json:1:15: [0].memroy_gb: unknown key (did you mean "memory_gb"?)`},
		{"type.json", `[{"key": "x", "memory_gb": "big"}]`, `type.json:1:28: [0].memory_gb: expected a number, got the string "big"`},
		{"nomem.yaml", "- key: x\n  bandwidth_tbs: 1\n  bf16_tflops: 1\n", "nomem.yaml:1:3: [0].memory_gib: missing (set memory_gb or memory_gib, > 0)"},
		{"bad.yaml", "- key: [x\n", "bad.yaml: invalid YAML"},
		// Figures beyond any part made, which gave a negative capacity, +Inf hours or a 0-byte report, and a
		// negative memory_gb reported as the memory_gib it would have become ("memory_gib: 0").
		{"huge.yaml", "- key: big\n  memory_gb: 9.3e12\n  bandwidth_tbs: 3\n  bf16_tflops: 1000\n", "huge.yaml:2:14: [0].memory_gb: 9.3e+12 exceeds the limit of 100000"},
		{"slow.yaml", "- key: slow\n  memory_gb: 80\n  bandwidth_tbs: 3\n  bf16_tflops: 1e-300\n", "slow.yaml:4:16: [0].bf16_tflops: 1e-300 is below the smallest rate memscan accepts, 0.01"},
		{"negative.yaml", "- key: neg\n  memory_gb: -80\n  bandwidth_tbs: 3\n  bf16_tflops: 1000\n", "negative.yaml:2:14: [0].memory_gb: -80 (must be > 0)"},
		{"infinite.yaml", "- key: inf\n  memory_gb: 80\n  bandwidth_tbs: .inf\n  bf16_tflops: 1000\n", "infinite.yaml:3:18: [0].bandwidth_tbs: .inf is not a finite number"},
		{"fp32.json", `[{"key": "x", "memory_gb": 80, "bandwidth_tbs": 3, "bf16_tflops": 1000, "fp32_tflops": 1e7}]`, "[0].fp32_tflops: 1e+07 exceeds the limit of 1e+06"},
	} {
		_, err := LoadFile(write(tc.name, tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	if _, err := LoadFile(filepath.Join(dir, "missing.json")); err == nil || err.Error() != filepath.Join(dir, "missing.json")+": no such file or directory" {
		t.Errorf("missing file: error %v", err)
	}
}
