package detect

import (
	"slices"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/phases"
)

// RuleLossPattern names the attribution attributeLoss gives (categorize.Attribution.Rule).
const RuleLossPattern = "loss-pattern"

// attributeLoss gives the Loss/Logits category to the blocks categorize.LossPattern finds: the logits and the
// loss's gradients that their stacks do not name. Only the blocks it moves get new attributions, shared per old one
// (byAttr indexes the device's attributions).
func attributeLoss(d *Device, byAttr map[categorize.Attribution]int32) {
	idx := categorize.LossPattern(d.Timeline(), len(d.Elements), func(i int) categorize.LossBlock {
		el := &d.Elements[i]
		return categorize.LossBlock{Start: int(el.Start), Size: el.Size, Category: d.Attr(i).Category}
	})
	moved := map[int32]int32{}
	for _, i := range idx {
		old := d.attrOf[i]
		a, ok := moved[old]
		if !ok {
			c := d.attrs[old]
			c.Category, c.DecidedBy, c.Rule = categorize.LossLogits, categorize.DecidedByLoss, RuleLossPattern
			a = d.intern(byAttr, c)
			moved[old] = a
		}
		d.attrOf[i] = a
	}
}

// LossLogits judges what a chunked or fused linear cross-entropy would save at the peak, from the trace alone:
// every Loss/Logits block (attributeLoss and the stack rules) would be held one chunk at a time — 1024 of the
// iteration's tokens (findings.LossChunkTokens, the estimator's chunk) where the labels show the number of
// tokens, else one of findings.LossChunksUnknownTokens chunks — and the peak is the highest allocated memory with
// the rest of those blocks taken out, wherever that moves it. Silent below LossLogitsMinSavingBytes.
func LossLogits(d *Device) (findings.Finding, bool) {
	tl := d.Timeline()
	if !tl.Training() {
		return findings.Finding{}, false
	}
	peakIdx, peak := d.PeakIndex()
	f := findings.LossFacts{Peak: at(d, peakIdx), PeakBytes: peak}
	tokens := lossTokens(d)
	type change struct {
		at    int
		bytes int64
	}
	var starts, ends []change
	for i := range d.Elements {
		if d.Attr(i).Category != categorize.LossLogits {
			continue
		}
		b := d.Block(i)
		k, _ := tl.At(b.Start)
		keep := b.Size / findings.LossChunksUnknownTokens
		if k >= 0 && tokens[k] > 0 {
			keep = b.Size * int64(min(tokens[k], findings.LossChunkTokens)) / int64(tokens[k])
		}
		starts = append(starts, change{b.Start, b.Size - keep})
		ends = append(ends, change{b.End, b.Size - keep})
		if b.Start <= peakIdx && peakIdx < b.End {
			f.HeldBytes += b.Size
			switch {
			case b.Attr.Rule == RuleLossPattern && b.Attr.AllocPhase == phases.Forward:
				f.LogitsBytes += b.Size
				f.LogitsSite = siteKey(b.Attr)
			case b.Attr.AllocPhase == phases.Backward:
				f.GradientBytes += b.Size
			default:
				f.ForwardBytes += b.Size
			}
			if k >= 0 {
				f.Tokens = tokens[k]
			}
		}
	}
	if f.HeldBytes == 0 {
		return findings.Finding{}, false
	}
	// A few blocks per iteration: sorted by start and by end, they are swept once over the events.
	slices.SortFunc(starts, func(x, y change) int { return x.at - y.at })
	slices.SortFunc(ends, func(x, y change) int { return x.at - y.at })
	var removed int64
	newPeak := d.InitialAllocated
	si, ei := 0, 0
	for j, v := range d.Allocated {
		for ; si < len(starts) && starts[si].at <= j; si++ {
			removed += starts[si].bytes
		}
		for ; ei < len(ends) && ends[ei].at <= j; ei++ {
			removed -= ends[ei].bytes
		}
		newPeak = max(newPeak, v-removed)
	}
	f.NewPeakBytes = newPeak
	if f.Saving() < findings.LossLogitsMinSavingBytes {
		return findings.Finding{}, false
	}
	return findings.NewLossLogits(f), true
}

// lossTokens is, per iteration, the number of tokens the loss ran over (0: not shown): the labels are an int64
// Loss/Logits allocation of 8 bytes a token, whose count divides the logits' elements into a vocabulary of at
// least lossMinVocab classes. The largest such count wins (padded labels, one longer per sequence, do not divide).
func lossTokens(d *Device) []int {
	tl := d.Timeline()
	out := make([]int, len(tl.Iterations))
	largest := make([]int64, len(tl.Iterations))
	for i := range d.Elements {
		if a := d.Attr(i); a.Category != categorize.LossLogits || a.AllocPhase != phases.Forward {
			continue
		}
		b := d.Block(i)
		if k, _ := tl.At(b.Start); k >= 0 {
			largest[k] = max(largest[k], b.Size)
		}
	}
	for i := range d.Elements {
		a, el := d.Attr(i), &d.Elements[i]
		if a.Category != categorize.LossLogits || a.AllocPhase != phases.Forward || el.Size%8 != 0 || el.Size >= categorize.LossMinBytes {
			continue
		}
		b := d.Block(i)
		k, _ := tl.At(b.Start)
		if k < 0 || largest[k] == 0 {
			continue
		}
		t := b.Size / 8
		// The largest anchor holds the logits' elements in fp32 (4 bytes) or in 16 bits (2).
		for _, per := range []int64{4, 2} {
			if n := largest[k] / per; largest[k]%per == 0 && n%t == 0 && n/t >= lossMinVocab && int(t) > out[k] {
				out[k] = int(t)
			}
		}
	}
	return out
}

// lossMinVocab is the smallest vocabulary taken for a language model's (byte-level models have 256 classes).
const lossMinVocab = 256
