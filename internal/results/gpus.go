package results

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/memscan/memscan/gpu"
	"github.com/memscan/memscan/static"
)

// WriteGPUTable renders the GPU catalogue (memscan gpus): memory, bandwidth, dense peaks and interconnect.
func WriteGPUTable(w io.Writer, list []gpu.Spec) error {
	w = printable(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tNAME\tMEM GiB\tBW TB/s\tBF16\tFP16\tFP8\tTF32\tFP32\tRIDGE\tINTERCONNECT")
	dash := func(v float64) string {
		if v == 0 {
			return "—"
		}
		return fmt.Sprintf("%g", v)
	}
	for _, g := range list {
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.3g\t%s\t%s\t%s\t%s\t%s\t%.0f\t%s %g GB/s\n", g.Key, g.Name, g.MemoryGiB, g.BandwidthTBs,
			dash(g.BF16TFLOPS), dash(g.FP16TFLOPS), dash(g.FP8TFLOPS), dash(g.TF32TFLOPS), dash(g.FP32TFLOPS), g.RidgePoint("bf16"),
			strings.TrimSpace(g.Interconnect), g.IntraGBps)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nTFLOP/s are dense vendor figures (— = the part lacks the format); RIDGE = BF16 peak (FP16 without BF16) / bandwidth in FLOP/byte; MEM is the CUDA-visible total.")
	return nil
}

// WritePresetList renders the model presets of memscan static (memscan gpus --presets), one line each.
func WritePresetList(w io.Writer) error {
	for _, n := range static.PresetNames() {
		m, err := static.ResolvedPreset(n) // the values an estimate uses, family defaults filled
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "%-14s %s L=%d h=%d heads=%d kv=%d ffn=%d vocab=%d experts=%d\n", n, m.Type, m.NumLayers, m.HiddenSize, m.NumAttentionHeads, m.NumKVHeads, m.FFNHiddenSize, m.VocabSize, m.NumExperts); err != nil {
			return err
		}
	}
	return nil
}
