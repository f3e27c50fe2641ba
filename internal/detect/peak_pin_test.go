package detect_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/internal/realsnap"
	"github.com/memscan/memscan/load"
)

// llamaRun is what runs.json says of the shared H200 Llama run: its dimensions, parameter count and PyTorch's
// own replay of the trace.
type llamaRun struct {
	Name  string `json:"name"`
	Model struct {
		L     int64 `json:"L"`
		H     int64 `json:"h"`
		Heads int64 `json:"heads"`
		KV    int64 `json:"kv"`
		V     int64 `json:"V"`
	} `json:"model"`
	Settings struct {
		B int64 `json:"b"`
		S int64 `json:"s"`
	} `json:"settings"`
	NParams int64 `json:"n_params"`
	Segsum  struct {
		Traces []struct {
			ReplayPeak int64 `json:"replay_peak_from_zero"`
		} `json:"traces"`
	} `json:"segsum"`
}

// TestLlamaPeakBreakdown pins the categories of the live set at the allocated peak of the shared H200 Llama run
// (llama1b-bf16-b4-s2048-snap: Llama 3.2 1B dimensions, pure bf16, AdamW, SDPA, batch 4 × 2048; the peak is at
// the start of step 2's backward). The peak itself is PyTorch's replay of the trace (runs.json), and these
// categories are derived from the model's code:
//   - Parameters/Weights: n_params bf16 values, and Hugging Face's two rotary inv_freq buffers of head_dim/2 fp32;
//   - Optimizer State: AdamW's exp_avg and exp_avg_sq of every parameter in its dtype (the step counters live on
//     the CPU);
//   - Attention, per layer: apply_rotary_pos_emb's rotated query (b·heads·s·d) and key (b·kv·s·d) in bf16, SDPA's
//     output (b·s·heads·d, bf16), its logsumexp (b·heads·s, fp32) and its two 8-byte RNG seed and offset;
//   - Loss/Logits: the lm_head's bf16 logits (b·s·V·2), cross_entropy's fp32 log-probabilities (b·s·V·4) saved for
//     its backward, autograd's fp32 gradients of nll_loss and log_softmax (b·s·V·4 each; the backward has just
//     begun) and the 4-byte loss;
//
// The rest (forward intermediates, the backward's temporaries) is memscan's measure, pinned so that a change of
// rules or lifetimes that moves bytes between categories must show up here.
func TestLlamaPeakBreakdown(t *testing.T) {
	const name = "llama1b-bf16-b4-s2048-snap"
	var runs []llamaRun
	realsnap.GPURuns(t, &runs)
	var run *llamaRun
	for i := range runs {
		if runs[i].Name == name {
			run = &runs[i]
		}
	}
	if run == nil || len(run.Segsum.Traces) != 1 {
		t.Fatalf("%s with one trace is not in runs.json", name)
	}
	r := loadReal(t, name)
	pk := peakLive(r.in.Devices[0])
	if pk.Bytes != run.Segsum.Traces[0].ReplayPeak {
		t.Errorf("live at the peak %d, PyTorch's replay peaks at %d", pk.Bytes, run.Segsum.Traces[0].ReplayPeak)
	}

	m, b, s := run.Model, run.Settings.B, run.Settings.S
	d := m.H / m.Heads
	rotary := m.L * (b*m.Heads*s*d*2 + b*m.KV*s*d*2)
	want := map[string]int64{
		categorize.Parameters:     run.NParams*2 + 2*(d/2)*4,
		categorize.OptimizerState: 2 * run.NParams * 2,
		categorize.Attention:      rotary + m.L*(b*s*m.Heads*d*2+b*m.Heads*s*4+2*8),
		categorize.LossLogits:     b*s*m.V*(2+4+4+4) + 4,
		// memscan's measure.
		categorize.Activation:   8_759_312_384,
		categorize.LinearMatMul: 4_429_185_024,
		categorize.Temporary:    4,
		categorize.Gradient:     33_554_432,
		categorize.Unknown:      65_536,
	}
	checkShares(t, "category", pk.ByCategory, want)
	checkShares(t, "component", pk.ByComponent, map[string]int64{
		"activations": 20_717_273_348, "temporaries": 8_405_385_220, "optimizer": 4_943_257_600, "weights": want[categorize.Parameters],
		"gradients": 33_554_432, "other": 65_536,
	})

	// The rotary blocks alone: 640 MiB in 32 blocks (one query and one key per layer), all Attention.
	j, _ := r.in.Devices[0].PeakIndex()
	var rotBytes, rotBlocks int64
	byCat := map[string]int64{}
	dev := r.in.Devices[0]
	for i := range dev.Elements {
		bl := dev.Block(i)
		if bl.Start <= j && j < bl.End && bl.Stack != nil && len(bl.Stack.Frames) > 0 && bl.Stack.Frames[0].Name == "apply_rotary_pos_emb" {
			rotBytes += bl.Size
			rotBlocks++
			byCat[bl.Attr.Category+" by "+bl.Attr.Rule] += bl.Size
		}
	}
	if rotBytes != rotary || rotBlocks != 2*m.L || byCat[categorize.Attention+" by attention-functions"] != rotary {
		t.Errorf("rotary blocks at the peak: %d bytes in %d blocks (%v), want %d in %d, all Attention by attention-functions",
			rotBytes, rotBlocks, byCat, rotary, 2*m.L)
	}
}

// TestScatterPeakComponents pins the components at the peaks of a public torch_geometric DataParallel snapshot
// (three GPUs, one forward each with no backward). On GPUs 1 and 2, 240 MiB (and 8 KiB) of the scattered inputs come from
// DataParallel's scatter (Communication) and stay to the end of the forward: activation memory, as everything
// else there; GPU 0 also holds the model (weights) and its own temporaries.
func TestScatterPeakComponents(t *testing.T) {
	dir := realsnap.SharedDir(t, "real_snapshots")
	dec, err := load.DecodeFile(context.Background(), filepath.Join(dir, "Constructor-Sun__code_location__memory_snapshot.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	in := prepare(t, dec.Snapshot)
	want := []map[string]int64{
		{"activations": 5_459_800_552, "weights": 2_634_820_864, "temporaries": 361_851_972},
		{"activations": 84_063_351_764},
		{"activations": 20_230_619_160, "temporaries": 1_334_026_640},
	}
	if len(in.Devices) != len(want) {
		t.Fatalf("%d devices with a trace, want %d", len(in.Devices), len(want))
	}
	for i, dv := range in.Devices {
		pk := peakLive(dv)
		checkShares(t, fmt.Sprintf("GPU %d component", dv.Device), pk.ByComponent, want[i])
		if i > 0 {
			if c := shareOf(pk.ByCategory, categorize.Communication); c != 251_666_432 {
				t.Errorf("GPU %d: Communication at the peak %d bytes, want 251,666,432 (240 MiB + 8 KiB)", dv.Device, c)
			}
		}
	}
}

// checkShares compares shares with want exactly, names included.
func checkShares(t *testing.T, what string, got []findings.Share, want map[string]int64) {
	t.Helper()
	seen := map[string]bool{}
	for _, s := range got {
		seen[s.Name] = true
		if w, ok := want[s.Name]; !ok || s.Bytes != w {
			t.Errorf("%s %s: %d bytes at the peak, want %d", what, s.Name, s.Bytes, w)
		}
	}
	for name, w := range want {
		if !seen[name] {
			t.Errorf("%s %s: missing at the peak, want %d bytes", what, name, w)
		}
	}
}
