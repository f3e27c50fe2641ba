package gpu

import (
	"fmt"
	"sort"
	"strings"
)

// catalogue: dense vendor figures (static_formulas.md §4 of the design notes). memory_gib is the total CUDA reports
// (torch.cuda.get_device_properties().total_memory), which is below the marketing number.
var catalogue = []Spec{
	{Key: "a100-40gb-sxm", Name: "NVIDIA A100 40GB SXM4", MemoryGB: 40, MemoryGiB: 39.39, BandwidthTBs: 1.555, BF16TFLOPS: 312, FP16TFLOPS: 312, TF32TFLOPS: 156, FP32TFLOPS: 19.5, IntraGBps: 600, Interconnect: "NVLink3", ComputeCapability: 8.0, Vendor: "NVIDIA", Source: "A100 datasheet"},
	{Key: "a100-80gb-sxm", Name: "NVIDIA A100 80GB SXM4", MemoryGB: 80, MemoryGiB: 79.15, BandwidthTBs: 2.039, BF16TFLOPS: 312, FP16TFLOPS: 312, TF32TFLOPS: 156, FP32TFLOPS: 19.5, IntraGBps: 600, Interconnect: "NVLink3", ComputeCapability: 8.0, Vendor: "NVIDIA", Source: "A100 datasheet"},
	{Key: "a100-40gb-pcie", Name: "NVIDIA A100 40GB PCIe", MemoryGB: 40, MemoryGiB: 39.39, BandwidthTBs: 1.555, BF16TFLOPS: 312, FP16TFLOPS: 312, TF32TFLOPS: 156, FP32TFLOPS: 19.5, IntraGBps: 64, Interconnect: "PCIe4 (NVLink bridge 600 per pair)", ComputeCapability: 8.0, Vendor: "NVIDIA", Source: "A100 datasheet"},
	{Key: "a100-80gb-pcie", Name: "NVIDIA A100 80GB PCIe", MemoryGB: 80, MemoryGiB: 79.15, BandwidthTBs: 1.935, BF16TFLOPS: 312, FP16TFLOPS: 312, TF32TFLOPS: 156, FP32TFLOPS: 19.5, IntraGBps: 64, Interconnect: "PCIe4 (NVLink bridge 600 per pair)", ComputeCapability: 8.0, Vendor: "NVIDIA", Source: "A100 datasheet"},
	{Key: "h100-sxm", Name: "NVIDIA H100 SXM5 80GB", MemoryGB: 80, MemoryGiB: 79.19, BandwidthTBs: 3.35, BF16TFLOPS: 989, FP16TFLOPS: 989, FP8TFLOPS: 1979, TF32TFLOPS: 495, FP32TFLOPS: 67, IntraGBps: 900, Interconnect: "NVLink4", ComputeCapability: 9.0, Vendor: "NVIDIA", Source: "H100 datasheet"},
	{Key: "h100-pcie", Name: "NVIDIA H100 PCIe 80GB", MemoryGB: 80, MemoryGiB: 79.19, BandwidthTBs: 2.0, BF16TFLOPS: 756, FP16TFLOPS: 756, FP8TFLOPS: 1513, TF32TFLOPS: 378, FP32TFLOPS: 51, IntraGBps: 128, Interconnect: "PCIe5 (NVLink bridge 600 per pair)", ComputeCapability: 9.0, Vendor: "NVIDIA", Source: "H100 datasheet / PB-11133"},
	{Key: "h100-nvl", Name: "NVIDIA H100 NVL 94GB", MemoryGB: 94, MemoryGiB: 93.0, BandwidthTBs: 3.9, BF16TFLOPS: 835, FP16TFLOPS: 835, FP8TFLOPS: 1671, TF32TFLOPS: 418, FP32TFLOPS: 60, IntraGBps: 128, Interconnect: "PCIe5 (NVLink bridge 600 per pair)", ComputeCapability: 9.0, Vendor: "NVIDIA", Source: "H100 datasheet (NVL)"},
	{Key: "h100-96gb", Name: "NVIDIA H100 96GB HBM2e", MemoryGB: 96, MemoryGiB: 94.99, BandwidthTBs: 2.4, BF16TFLOPS: 989, FP16TFLOPS: 989, FP8TFLOPS: 1979, TF32TFLOPS: 495, FP32TFLOPS: 67, IntraGBps: 900, Interconnect: "NVLink4", ComputeCapability: 9.0, Vendor: "NVIDIA", Source: "torchtitan benchmark (compute figures assumed as H100 SXM)"},
	{Key: "h200-sxm", Name: "NVIDIA H200 SXM 141GB", MemoryGB: 141, MemoryGiB: 139.8, BandwidthTBs: 4.8, BF16TFLOPS: 989, FP16TFLOPS: 989, FP8TFLOPS: 1979, TF32TFLOPS: 495, FP32TFLOPS: 67, IntraGBps: 900, Interconnect: "NVLink4", ComputeCapability: 9.0, Vendor: "NVIDIA", Source: "H200 datasheet"},
	{Key: "h200-nvl", Name: "NVIDIA H200 NVL 141GB", MemoryGB: 141, MemoryGiB: 139.8, BandwidthTBs: 4.8, BF16TFLOPS: 835, FP16TFLOPS: 835, FP8TFLOPS: 1671, TF32TFLOPS: 418, FP32TFLOPS: 60, IntraGBps: 900, Interconnect: "NVLink bridge", ComputeCapability: 9.0, Vendor: "NVIDIA", Source: "H200 datasheet"},
	{Key: "b200", Name: "NVIDIA B200 (HGX, 1000 W)", MemoryGB: 180, MemoryGiB: 178.4, BandwidthTBs: 8.0, BF16TFLOPS: 2250, FP16TFLOPS: 2250, FP8TFLOPS: 4500, TF32TFLOPS: 1100, FP32TFLOPS: 80, IntraGBps: 1800, Interconnect: "NVLink5", ComputeCapability: 10.0, Vendor: "NVIDIA", Source: "HGX/DGX B200 spec"},
	{Key: "gb200", Name: "NVIDIA GB200 (per GPU, NVL72)", MemoryGB: 186, MemoryGiB: 184.3, BandwidthTBs: 8.0, BF16TFLOPS: 2500, FP16TFLOPS: 2500, FP8TFLOPS: 5000, TF32TFLOPS: 1250, FP32TFLOPS: 80, IntraGBps: 1800, Interconnect: "NVLink5", ComputeCapability: 10.0, Vendor: "NVIDIA", Source: "GB200 NVL72 spec / 72"},
	{Key: "l40s", Name: "NVIDIA L40S 48GB", MemoryGB: 48, MemoryGiB: 44.4, BandwidthTBs: 0.864, BF16TFLOPS: 362, FP16TFLOPS: 362, FP8TFLOPS: 733, TF32TFLOPS: 183, FP32TFLOPS: 91.6, IntraGBps: 64, Interconnect: "PCIe4", ComputeCapability: 8.9, Vendor: "NVIDIA", Source: "L40S datasheet"},
	{Key: "l4", Name: "NVIDIA L4 24GB", MemoryGB: 24, MemoryGiB: 22.168, BandwidthTBs: 0.300, BF16TFLOPS: 121, FP16TFLOPS: 121, FP8TFLOPS: 242.5, TF32TFLOPS: 60, FP32TFLOPS: 30.3, IntraGBps: 64, Interconnect: "PCIe4", ComputeCapability: 8.9, Vendor: "NVIDIA", Source: "L4 datasheet; memory: total_memory as torch reports it on an L4 (22.168 GiB)"},
	{Key: "rtx4090", Name: "NVIDIA GeForce RTX 4090", MemoryGB: 24, MemoryGiB: 23.6, BandwidthTBs: 1.008, BF16TFLOPS: 165.2, FP16TFLOPS: 165.2, FP8TFLOPS: 330, TF32TFLOPS: 82.6, FP32TFLOPS: 82.6, IntraGBps: 64, Interconnect: "PCIe4", ComputeCapability: 8.9, Vendor: "NVIDIA", Source: "Ada whitepaper (FP32 accumulate)"},
	{Key: "rtx3090", Name: "NVIDIA GeForce RTX 3090", MemoryGB: 24, MemoryGiB: 23.6, BandwidthTBs: 0.936, BF16TFLOPS: 71, FP16TFLOPS: 71, TF32TFLOPS: 35.6, FP32TFLOPS: 35.6, IntraGBps: 112.5, Interconnect: "NVLink bridge", ComputeCapability: 8.6, Vendor: "NVIDIA", Source: "GA102 whitepaper (FP32 accumulate)"},
	{Key: "a10g", Name: "NVIDIA A10G (AWS)", MemoryGB: 24, MemoryGiB: 22.0, BandwidthTBs: 0.600, BF16TFLOPS: 70, FP16TFLOPS: 70, TF32TFLOPS: 35, FP32TFLOPS: 31.2, IntraGBps: 64, Interconnect: "PCIe4", ComputeCapability: 8.6, Vendor: "NVIDIA", Source: "unofficial (llm-analysis config)"},
	{Key: "v100-32gb", Name: "NVIDIA V100 SXM2 32GB", MemoryGB: 32, MemoryGiB: 31.7, BandwidthTBs: 0.900, FP16TFLOPS: 125, FP32TFLOPS: 15.7, IntraGBps: 300, Interconnect: "NVLink2", ComputeCapability: 7.0, Vendor: "NVIDIA", Source: "V100 datasheet (sm 7.0: FP16 tensor cores only, no BF16 or TF32)"},
	{Key: "v100-16gb", Name: "NVIDIA V100 SXM2 16GB", MemoryGB: 16, MemoryGiB: 15.8, BandwidthTBs: 0.900, FP16TFLOPS: 125, FP32TFLOPS: 15.7, IntraGBps: 300, Interconnect: "NVLink2", ComputeCapability: 7.0, Vendor: "NVIDIA", Source: "V100 datasheet (sm 7.0: FP16 tensor cores only, no BF16 or TF32)"},
	{Key: "mi250x", Name: "AMD Instinct MI250X (both GCDs)", MemoryGB: 128, MemoryGiB: 127.98, BandwidthTBs: 3.277, BF16TFLOPS: 383, FP16TFLOPS: 383, FP32TFLOPS: 47.9, FP32MatrixTFLOPS: 95.7, IntraGBps: 800, Interconnect: "Infinity Fabric", Vendor: "AMD", Source: "MI250X spec (CDNA2: no TF32; fp32 matrix cores 95.7)"},
	{Key: "mi300x", Name: "AMD Instinct MI300X", MemoryGB: 192, MemoryGiB: 191.98, BandwidthTBs: 5.3, BF16TFLOPS: 1307, FP16TFLOPS: 1307, FP8TFLOPS: 2615, TF32TFLOPS: 654, FP32TFLOPS: 163.4, IntraGBps: 896, Interconnect: "Infinity Fabric", Vendor: "AMD", Source: "MI300X datasheet"},
	{Key: "mi325x", Name: "AMD Instinct MI325X", MemoryGB: 256, MemoryGiB: 255.98, BandwidthTBs: 6.0, BF16TFLOPS: 1307, FP16TFLOPS: 1307, FP8TFLOPS: 2615, TF32TFLOPS: 654, FP32TFLOPS: 163.4, IntraGBps: 896, Interconnect: "Infinity Fabric", Vendor: "AMD", Source: "MI325X datasheet"},
	{Key: "tpu-v5e", Name: "Google TPU v5e (chip)", MemoryGB: 16, MemoryGiB: 15.75, BandwidthTBs: 0.819, BF16TFLOPS: 197, FP16TFLOPS: 197, FP32TFLOPS: 24.6, IntraGBps: 400, Interconnect: "ICI", Vendor: "Google", Source: "cloud.google.com/tpu/docs/v5e (no TF32; FP32 not published, assumed bf16/8)"},
	{Key: "tpu-v5p", Name: "Google TPU v5p (chip)", MemoryGB: 95, MemoryGiB: 95, BandwidthTBs: 2.765, BF16TFLOPS: 459, FP16TFLOPS: 459, FP32TFLOPS: 57.4, IntraGBps: 1200, Interconnect: "ICI", Vendor: "Google", Source: "cloud.google.com/tpu/docs/v5p (no TF32; FP32 not published, assumed bf16/8)"},
}

var aliases = map[string]string{
	"h100": "h100-sxm", "nvidia h100": "h100-sxm", "h100-80gb": "h100-sxm", "h100-sxm5": "h100-sxm",
	"a100": "a100-80gb-sxm", "nvidia a100": "a100-80gb-sxm", "a100-80gb": "a100-80gb-sxm", "a100-40gb": "a100-40gb-sxm",
	"h200": "h200-sxm", "nvidia h200": "h200-sxm", "nvidia b200": "b200", "mi300": "mi300x", "amd mi300x": "mi300x",
	"4090": "rtx4090", "rtx-4090": "rtx4090", "3090": "rtx3090", "rtx-3090": "rtx3090", "v100": "v100-32gb",
	"a100_80gb_sxm": "a100-80gb-sxm", "a100_40gb_sxm": "a100-40gb-sxm",
}

// List returns the catalogue (a copy), sorted by key.
func List() []Spec {
	out := append([]Spec(nil), catalogue...)
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Lookup finds a catalogue entry by key, alias or full name (case-insensitive).
func Lookup(name string) (Spec, error) {
	k := strings.ToLower(strings.TrimSpace(name))
	if a, ok := aliases[k]; ok {
		k = a
	}
	for _, g := range catalogue {
		if g.Key == k || strings.ToLower(g.Name) == k {
			return g, nil
		}
	}
	keys := make([]string, 0, len(catalogue))
	for _, g := range catalogue {
		keys = append(keys, g.Key)
	}
	sort.Strings(keys)
	return Spec{}, fmt.Errorf("unknown GPU %q (known: %s; or define hardware.custom)", name, strings.Join(keys, ", "))
}
