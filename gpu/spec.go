package gpu

import (
	"fmt"
	"math"
	"strings"
)

// Spec is one accelerator: capacity, bandwidth and dense peak throughput (no 2:4 sparsity).
type Spec struct {
	Key          string  `json:"key"`
	Name         string  `json:"name"`
	MemoryGB     float64 `json:"memory_gb"`     // marketing capacity
	MemoryGiB    float64 `json:"memory_gib"`    // what CUDA reports as total (auto: memory_gb·0.931·0.99)
	BandwidthTBs float64 `json:"bandwidth_tbs"` // HBM/GDDR bandwidth, TB/s
	BF16TFLOPS   float64 `json:"bf16_tflops"`   // dense; 0 = no bf16 (V100 and older)
	FP16TFLOPS   float64 `json:"fp16_tflops"`   // dense
	FP8TFLOPS    float64 `json:"fp8_tflops"`    // dense; 0 = unsupported
	TF32TFLOPS   float64 `json:"tf32_tflops"`   // dense; 0 = no TF32 (fp32 matmuls then run at the fp32 rate)
	FP32TFLOPS   float64 `json:"fp32_tflops"`   // non-tensor
	// FP32MatrixTFLOPS is an fp32 matrix-core rate on parts without TF32 (AMD CDNA2); 0 = none.
	FP32MatrixTFLOPS float64 `json:"fp32_matrix_tflops,omitempty"`
	IntraGBps        float64 `json:"interconnect_gbps"` // GPU-to-GPU inside a node, GB/s (bidirectional, as vendors quote)
	Interconnect     string  `json:"interconnect"`
	// ComputeCapability is the CUDA SM version (8.0 A100, 9.0 H100); it decides which attention kernels and
	// fp8 paths PyTorch can use. 0 = not NVIDIA or unknown.
	ComputeCapability float64 `json:"compute_capability,omitempty"`
	Vendor            string  `json:"vendor"`
	Source            string  `json:"source"`
}

// Bounds of a custom spec's figures: far beyond any part made, near enough that every capacity, rate and time
// computed from them stays finite and exact (a 9.3e12 GB part once overflowed the capacity to a negative number,
// and 1e-300 TFLOPS made the step time +Inf).
const (
	MaxMemoryGB      = 1e5 // 100 TB (memory_gb, memory_gib)
	MaxBandwidthTBs  = 1e3
	MinTFLOPS        = 0.01 // a rate that is given (0 means the part lacks the format, where allowed)
	MaxTFLOPS        = 1e6
	MaxInterconnect  = 1e6 // GB/s
	MaxComputeCap    = 100
	maxSpecTextBytes = 256 // key, name, interconnect, vendor, source
)

// Validate fills the figures a custom spec may leave out (from the ones it gives) and checks every figure
// against its bounds, naming the key as written; key names the spec in errors (a config key or a file and
// index).
func (g *Spec) Validate(key string) error {
	if err := g.checkGiven(key); err != nil {
		return err
	}
	if g.MemoryGiB == 0 && g.MemoryGB > 0 {
		g.MemoryGiB = g.MemoryGB * 1e9 / (1 << 30) * 0.99
	}
	if g.Name == "" {
		g.Name = "custom GPU"
	}
	if g.Key == "" {
		g.Key = "custom"
	}
	if g.FP16TFLOPS == 0 {
		g.FP16TFLOPS = g.BF16TFLOPS
	}
	if g.TF32TFLOPS == 0 && g.BF16TFLOPS > 0 && (g.ComputeCapability == 0 || g.ComputeCapability >= 8) {
		g.TF32TFLOPS = g.BF16TFLOPS / 2 // TF32 arrived with bf16 (Ampere)
	}
	if g.FP32TFLOPS == 0 {
		g.FP32TFLOPS = g.FP16TFLOPS / 8
	}
	if g.IntraGBps == 0 {
		g.IntraGBps = 64 // PCIe 4 x16
	}
	switch {
	case !(g.MemoryGiB > 0):
		return &FieldError{Spec: key, Field: "memory_gib", Msg: "missing (set memory_gb or memory_gib, > 0)"}
	case !(g.FP16TFLOPS > 0):
		return &FieldError{Spec: key, Field: "bf16_tflops", Msg: "missing (set bf16_tflops or fp16_tflops, > 0; bf16 0 = a part without bf16)"}
	case g.FP32TFLOPS < MinTFLOPS:
		return &FieldError{Spec: key, Field: "fp32_tflops", Msg: fmt.Sprintf("%g, derived from fp16_tflops / 8, is below %g; give fp32_tflops", g.FP32TFLOPS, MinTFLOPS)}
	}
	return nil
}

// checkGiven checks the figures as the file wrote them, before any is derived from another: a negative
// memory_gb is reported as memory_gb, not as the memory_gib it would have been turned into.
func (g *Spec) checkGiven(key string) error {
	for _, f := range []struct {
		name     string
		v        float64
		min, max float64
		zeroOK   bool
	}{
		{"memory_gb", g.MemoryGB, 0, MaxMemoryGB, true},
		{"memory_gib", g.MemoryGiB, 0, MaxMemoryGB, true},
		{"bandwidth_tbs", g.BandwidthTBs, 0, MaxBandwidthTBs, false},
		{"bf16_tflops", g.BF16TFLOPS, MinTFLOPS, MaxTFLOPS, true},
		{"fp16_tflops", g.FP16TFLOPS, MinTFLOPS, MaxTFLOPS, true},
		{"fp8_tflops", g.FP8TFLOPS, MinTFLOPS, MaxTFLOPS, true},
		{"tf32_tflops", g.TF32TFLOPS, MinTFLOPS, MaxTFLOPS, true},
		{"fp32_tflops", g.FP32TFLOPS, MinTFLOPS, MaxTFLOPS, true},
		{"fp32_matrix_tflops", g.FP32MatrixTFLOPS, MinTFLOPS, MaxTFLOPS, true},
		{"interconnect_gbps", g.IntraGBps, 0, MaxInterconnect, true},
		{"compute_capability", g.ComputeCapability, 0, MaxComputeCap, true},
	} {
		var msg string
		switch {
		case f.v == 0 && f.zeroOK:
		case f.v == 0:
			msg = "0 (must be > 0)"
		case math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0:
			msg = fmt.Sprintf("%g (must be > 0)", f.v)
		case f.v > f.max:
			msg = fmt.Sprintf("%g exceeds the limit of %g", f.v, f.max)
		case f.min > 0 && f.v < f.min:
			msg = fmt.Sprintf("%g is below the smallest rate memscan accepts, %g (0 where the part lacks the format)", f.v, f.min)
		}
		if msg != "" {
			return &FieldError{Spec: key, Field: f.name, Msg: msg}
		}
	}
	for _, f := range []struct{ name, v string }{{"key", g.Key}, {"name", g.Name}, {"interconnect", g.Interconnect}, {"vendor", g.Vendor}, {"source", g.Source}} {
		if len(f.v) > maxSpecTextBytes {
			return &FieldError{Spec: key, Field: f.name, Msg: fmt.Sprintf("%d bytes long; at most %d", len(f.v), maxSpecTextBytes)}
		}
	}
	return nil
}

// FieldError is a custom spec's figure out of its bounds: the spec (a config key, or a file's index), the
// figure's key and what is wrong.
type FieldError struct {
	Spec, Field, Msg string
}

func (e *FieldError) Error() string { return e.Spec + "." + e.Field + ": " + e.Msg }

// PeakTFLOPS is the dense peak for a compute dtype. A dtype the part lacks falls back to what would run instead
// (configs asking for bf16 on a part without it are refused by the estimator; this only keeps the rate finite).
func (g Spec) PeakTFLOPS(dtype string) float64 {
	switch dtype {
	case "fp32":
		// PyTorch matmuls in fp32 use TF32 when allowed; parts without TF32 run fp32.
		switch {
		case g.TF32TFLOPS > 0:
			return g.TF32TFLOPS
		case g.FP32MatrixTFLOPS > 0:
			return g.FP32MatrixTFLOPS
		}
		return g.FP32TFLOPS
	case "fp16":
		return g.FP16TFLOPS
	case "fp8":
		if g.FP8TFLOPS > 0 {
			return g.FP8TFLOPS
		}
	}
	if g.BF16TFLOPS > 0 {
		return g.BF16TFLOPS
	}
	return g.FP16TFLOPS
}

// HasBF16 reports whether the part computes in bf16 (NVIDIA from Ampere, compute capability 8.0).
func (g Spec) HasBF16() bool { return g.BF16TFLOPS > 0 }

// FP8Capable reports whether g has fp8 tensor cores (NVIDIA Ada/Hopper/Blackwell, AMD MI300).
func (g Spec) FP8Capable() bool {
	if g.ComputeCapability > 0 && strings.EqualFold(g.Vendor, "NVIDIA") {
		return g.ComputeCapability >= 8.9
	}
	return g.FP8TFLOPS > 0
}

// HopperOrNewer reports whether g is an NVIDIA GPU of compute capability 9.0 or later (Hopper, Blackwell),
// judged from the catalogue key or, for custom specs, the name. Unknown parts count as older.
func (g Spec) HopperOrNewer() bool {
	if g.Vendor != "" && !strings.EqualFold(g.Vendor, "NVIDIA") {
		return false
	}
	for _, p := range []string{"h100", "h200", "gh200", "b200", "gb200", "b300", "gb300"} {
		if strings.HasPrefix(strings.ToLower(g.Key), p) {
			return true
		}
	}
	n := strings.ToLower(g.Name)
	for _, w := range []string{"h100", "h200", "b200", "b300", "hopper", "blackwell"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// RidgePoint is FLOPs per byte where the compute and bandwidth roofs meet.
func (g Spec) RidgePoint(dtype string) float64 {
	return g.PeakTFLOPS(dtype) * 1e12 / (g.BandwidthTBs * 1e12)
}

// MemoryBytes is the CUDA-visible capacity in bytes.
func (g Spec) MemoryBytes() int64 { return int64(g.MemoryGiB * (1 << 30)) }
