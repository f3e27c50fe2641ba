package results

import (
	"fmt"
	"strings"

	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/static"
)

// The sentences below say, once for the console view and static_report.md, how the estimator reached the
// figures a plain table cannot explain: which attention kernel runs, how reserved memory was predicted, the
// LoRA split and where a run that cannot fit fails.

// attentionKeeps says what an attention kernel saves for backward, the reason the kernel choice moves the
// peak: the unfused kernels keep b·h·s² tensors, the fused ones only per-token tensors.
var attentionKeeps = map[string]string{
	"math":      "keeps the b·h·s² scores and probabilities",
	"standard":  "keeps the b·h·s² scores and probabilities",
	"flash":     "keeps no s² tensor (Q, K, V, output, log-sum-exp)",
	"efficient": "keeps no s² tensor (Q, K, V, output, log-sum-exp)",
	"cudnn":     "keeps no s² tensor (Q, K, V, output, log-sum-exp)",
	"flex":      "keeps no s² tensor (Q, K, V, output, log-sum-exp)",
}

// staticAttention describes the kernel that runs: "sdpa → math (why); keeps …", or "why; keeps …" when the
// config named the kernel itself. Empty without an attention choice.
func staticAttention(a *static.AttentionChoice) string {
	if a == nil || a.Kernel == "" {
		return ""
	}
	s := a.Why
	if a.Requested != a.Kernel {
		s = fmt.Sprintf("%s → %s (%s)", a.Requested, a.Kernel, a.Why)
	}
	if s == "" {
		s = a.Kernel
	}
	if k := attentionKeeps[a.Kernel]; k != "" {
		s += "; " + k
	}
	return s
}

// staticAttentionLine is the console's attention line. It is left out when the config named the kernel, which
// the workload line already shows; it appears whenever PyTorch's dispatch (sdpa) made the choice.
func staticAttentionLine(r *static.Report) string {
	a := r.Attention
	if a == nil || (a.Requested == a.Kernel && a.Requested != "sdpa") {
		return ""
	}
	return "Attention: " + staticAttention(a)
}

// staticReservedLine says what peak reserved is and how it was predicted.
func staticReservedLine(r *static.Report) string {
	s := r.Summary
	how := ""
	switch s.ReservedSource {
	case static.ReservedByReplay:
		how = "caching-allocator replay of the predicted allocation sequence"
	case static.ReservedByAllowance:
		how = "flat allowance: allocator rounding + allocator.fragmentation_fraction"
	case "":
	default:
		how = s.ReservedSource
	}
	if how != "" {
		how += "; "
	}
	line := fmt.Sprintf("Reserved: %s (%s%s above peak allocated)", units.Bytes(s.PeakReservedBytes), how,
		units.Bytes(s.PeakReservedBytes-s.PeakMemoryBytes))
	if s.ReservedSegments > 0 {
		// The replayed pool at its peak: how many segments, and what of them no live block used then.
		line += fmt.Sprintf("; %d segments, %s cached at the peak", s.ReservedSegments, units.Bytes(s.ReservedFreeAtPeakBytes))
	}
	if r.OOM != nil {
		line += ", what the step would need on a GPU large enough"
	}
	return line
}

// staticLoRALine summarises LoRA / QLoRA training: the trainable adapters and the frozen base.
func staticLoRALine(l *static.LoRAMemory) string {
	s := fmt.Sprintf("LoRA r=%d on %s: %s adapter params (%s, %s); frozen %s base %s", l.Rank, strings.Join(l.Targets, ", "),
		commas(l.AdapterParams), l.AdapterDtype, units.Bytes(l.AdapterBytes), l.BaseDtype, units.Bytes(l.FrozenBaseBytes))
	if l.DequantTempBytes > 0 {
		s += fmt.Sprintf("; dequantization temporary %s", units.Bytes(l.DequantTempBytes))
	}
	return s
}

// staticOOMLine names the first allocation that fails: "Out of memory at step 1 forward, layer 9
// mlp.down_proj: 1.8 GiB requested with 137.4 GiB allocated of 139.1 GiB (…)". The layer, operator and request
// are left out where the prediction has none (a failure found from the phase peaks only).
func staticOOMLine(o *static.OOMPoint) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Out of memory at step %d %s", o.Step, o.Phase)
	if o.Layer >= 0 {
		fmt.Fprintf(&b, ", layer %d", o.Layer)
	}
	if o.Operator != "" && o.Operator != o.Phase {
		fmt.Fprintf(&b, " %s", o.Operator)
	}
	b.WriteString(": ")
	if o.RequestBytes > 0 {
		fmt.Fprintf(&b, "%s requested with ", units.Bytes(o.RequestBytes))
	}
	fmt.Fprintf(&b, "%s allocated of %s (the GPU less CUDA context and NCCL)", units.Bytes(o.AllocatedBytes), units.Bytes(o.LimitBytes))
	return b.String()
}

// writeStaticMarkdownExtras writes static_report.md's attention, reserved and LoRA sections.
func writeStaticMarkdownExtras(b *strings.Builder, r *static.Report) {
	fmt.Fprintf(b, "%s.\n\n", staticReservedLine(r))
	if a := staticAttention(r.Attention); a != "" {
		fmt.Fprintf(b, "## Attention\n\n%s.\n\n", a)
	}
	if l := r.LoRA; l != nil {
		b.WriteString("## LoRA\n\n| key | value |\n|---|---|\n")
		fmt.Fprintf(b, "| rank | %d |\n| targets | %s |\n| adapter_params | %s |\n| adapter_dtype | %s |\n| base_dtype | %s |\n",
			l.Rank, strings.Join(l.Targets, ", "), commas(l.AdapterParams), l.AdapterDtype, l.BaseDtype)
		for _, kv := range []struct {
			k string
			v int64
		}{{"adapter_bytes", l.AdapterBytes}, {"frozen_base_bytes", l.FrozenBaseBytes}, {"dequant_temp_bytes", l.DequantTempBytes}} {
			fmt.Fprintf(b, "| %s | %s (%s) |\n", kv.k, commas(kv.v), units.Bytes(kv.v))
		}
		b.WriteString("\n")
	}
}
