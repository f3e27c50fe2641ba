package detect_test

import (
	"strings"
	"testing"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/internal/detect"
	"github.com/memscan/memscan/internal/units"
)

// TestLossLogitsFires: a Hugging Face style cross-entropy over bf16 logits of L bytes holds, at the start of the
// backward, the logits (L), the fp32 log-probabilities (2L) and autograd's two fp32 gradients (2L each): 7L, all
// Loss/Logits although the gradients have no stack and the logits the output layer's. Computed over 1024 of the T
// tokens at a time each of them keeps 1024/T of its bytes, and nothing else in the run comes near, so the peak
// drops by 7L·(T−1024)/T.
func TestLossLogitsFires(t *testing.T) {
	c := healthy
	c.LossVocab = 32768
	in, got := runDetect(t, c)
	L := c.LogitsBytes
	T := L / 2 / int64(c.LossVocab)
	live := peakLive(in.Devices[0])
	if got := shareOf(live.ByCategory, categorize.LossLogits); got != 7*L {
		t.Errorf("Loss/Logits at the peak %d, want 7·%d (%v)", got, L, live.ByCategory)
	}
	f, ok := got[findings.LossLogits]
	if !ok {
		t.Fatalf("no loss-logits finding: %v", got)
	}
	want := 7 * L * (T - 1024) / T
	if f.Value != float64(want) || f.SavedBytes != want || f.Basis != findings.BasisTrace {
		t.Errorf("saving %g (saved %d, %s), want %d", f.Value, f.SavedBytes, f.Basis, want)
	}
	for _, s := range []string{"the logits " + units.Bytes(L) + " (/home/user/proj/model.py:85:forward)", "log-probabilities " + units.Bytes(2*L),
		"gradients " + units.Bytes(4*L), "1024 of the 49152 tokens", units.Bytes(want) + " lower"} {
		if !strings.Contains(f.Evidence, s) {
			t.Errorf("evidence lacks %q: %s", s, f.Evidence)
		}
	}
	if !strings.Contains(f.Advice, "fused linear cross-entropy") || !strings.Contains(f.Advice, units.Bytes(want)) {
		t.Errorf("advice: %s", f.Advice)
	}
}

// TestLossLogitsSilent: small logits (the loss's tensors save less than the threshold) and a run without a loss
// leave no finding; the small loss's tensors are still Loss/Logits at the peak.
func TestLossLogitsSilent(t *testing.T) {
	c := healthy
	c.LossVocab, c.LogitsBytes = 32768, 32*mib
	in, got := runDetect(t, c)
	if f, ok := got[findings.LossLogits]; ok {
		t.Errorf("fired for a loss of 7·32 MiB: %+v", f)
	}
	if f, ok := detect.LossLogits(in.Devices[0]); ok {
		t.Errorf("LossLogits fired: %+v", f)
	}
	in = prepare(t, healthy.Build())
	if f, ok := detect.LossLogits(in.Devices[0]); ok {
		t.Errorf("fired on a run without a loss: %+v", f)
	}
	if got := shareOf(peakLive(in.Devices[0]).ByCategory, categorize.LossLogits); got != 0 {
		t.Errorf("Loss/Logits %d in a run without a loss", got)
	}
}
