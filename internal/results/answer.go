package results

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/report"
)

// answer is what every renderer leads with for one input: the peak (allocated and reserved, when, which
// iteration and phase), what held it, the OOMs, then the findings ranked by the bytes they would save. The
// totals at the dump follow it, labelled as such.
type answer struct {
	Peak *report.Peak
	// MaxReserved is the most the allocator reserved over the trace (the recorded peak reserved), 0 when unknown.
	MaxReserved int64
	// Held is the live set at the peak by category and Components by the static estimator's components.
	Held, Components []report.CategoryStat
	OOMs             []report.OOM
	// Findings are the input's recommendations, those that save bytes first, most bytes first.
	Findings []findings.Finding
}

// newAnswer gathers the answer of r.
func newAnswer(r *report.Report) answer {
	a := answer{Peak: r.Peak, OOMs: r.OOMs(), Findings: rankFindings(r.Recommendations)}
	if r.Peak != nil {
		a.Held, a.Components = r.Peak.Categories, r.Peak.Components
	}
	if s, ok := r.Part.(*report.SnapshotReport); ok && s.AllocatorReplay != nil {
		a.MaxReserved = s.AllocatorReplay.RecordedPeakReservedBytes
	}
	return a
}

// findingSaving is the bytes a finding says could be saved at the peak (SavedBytes), else, for an OOM, the bytes
// missing, else its measure in bytes; false when it has none of them.
func findingSaving(r findings.Finding) (int64, bool) {
	switch {
	case r.SavedBytes > 0 && r.ID != findings.OOM:
		return r.SavedBytes, true
	case r.Unit != findings.Bytes:
		return 0, false
	}
	return int64(r.Value), true
}

// rankFindings orders recommendations by the bytes they would save, largest first; those measured in other units
// follow in their own order.
func rankFindings(recs []findings.Finding) []findings.Finding {
	out := slices.Clone(recs)
	slices.SortStableFunc(out, func(x, y findings.Finding) int {
		sx, okx := findingSaving(x)
		sy, oky := findingSaving(y)
		switch {
		case okx && oky:
			return cmp.Compare(sy, sx)
		case okx:
			return -1
		case oky:
			return 1
		}
		return 0
	})
	return out
}

// peakSentence words the peak in one line: "Peak 9.1 GiB allocated, 14.1 GiB reserved (64.5 % efficiency), on
// device 0 at event 452877 (2025-05-23 11:33:29 UTC), iteration 3, backward." The allocated bytes are torch's
// block bytes where the allocator replay measured them.
func peakSentence(p *report.Peak) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Peak %s allocated", units.Bytes(cmp.Or(p.AllocatedBytes, p.Bytes)))
	if p.ReservedBytes > 0 {
		fmt.Fprintf(&b, ", %s reserved", units.Bytes(p.ReservedBytes))
		if p.EfficiencyPct > 0 {
			fmt.Fprintf(&b, " (%.1f %% efficiency)", p.EfficiencyPct)
		}
	}
	fmt.Fprintf(&b, ", on device %d at %s", p.Device, findings.EventName(p.EventIndex))
	if p.TimeUS != 0 {
		fmt.Fprintf(&b, " (%s)", FormatTimeUS(p.TimeUS))
	}
	if w := peakWhere(p); w != "" {
		b.WriteString(", " + w)
	}
	b.WriteString(".")
	return b.String()
}

// heldLine words the largest shares of the live set at the peak: "Attention 3.4 GiB (38 %), Gradient 1.4 GiB
// (16 %), ...", at most n entries.
func heldLine(cs []report.CategoryStat, total int64, n int) string {
	parts := make([]string, 0, min(n, len(cs))+1)
	var rest int64
	for i, c := range cs {
		if i >= n {
			rest += c.Bytes
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s (%s)", c.Name, units.Bytes(c.Bytes), shortPercent(c.Bytes, total)))
	}
	if rest > 0 {
		parts = append(parts, fmt.Sprintf("%d more %s", len(cs)-n, units.Bytes(rest)))
	}
	return strings.Join(parts, ", ")
}

// shortPercent is a share rounded to a whole percent ("38 %"), "<1 %" for a sliver.
func shortPercent(part, whole int64) string {
	if whole <= 0 {
		return "-"
	}
	p := float64(part) * 100 / float64(whole)
	if p > 0 && p < 1 {
		return "<1 %"
	}
	return fmt.Sprintf("%.0f %%", p)
}

// oomSentence words one OOM: "OOM on device 0 at event 812: asked for 2.00 GiB with 1.20 GiB free; 77.9 GiB
// allocated, 78.1 GiB reserved."
func oomSentence(o report.OOM) string {
	s := fmt.Sprintf("OOM on device %d at event %d: asked for %s with %s free on the device; %s allocated, %s reserved",
		o.Device, o.EventIndex, units.PyTorchBytes(o.RequestedBytes), units.PyTorchBytes(o.DeviceFreeBytes),
		units.Bytes(o.AllocatedBytes), units.Bytes(o.ReservedBytes))
	if o.Site != "" {
		s += " (" + o.Site + ")"
	}
	return s + "."
}

// findingSavingText is "saves 1.2 GiB" style wording of a finding's bytes, "" when it has none.
func findingSavingText(r findings.Finding) string {
	b, ok := findingSaving(r)
	if !ok || b <= 0 {
		return ""
	}
	if r.ID == "oom" {
		return units.Bytes(b) + " short"
	}
	return units.Bytes(b)
}

// barWidth is part's share of whole as a CSS width ("37.8%").
func barWidth(part, whole int64) string {
	if whole <= 0 || part <= 0 {
		return "0%"
	}
	return fmt.Sprintf("%.1f%%", min(100, float64(part)*100/float64(whole)))
}

// answer writes an input's answer as the first lines of its README.md section.
func (m *mdWriter) answer(r *report.Report) {
	a := newAnswer(r)
	if a.Peak == nil && len(a.OOMs) == 0 {
		return
	}
	m.printf("**Answer**\n\n")
	if a.Peak != nil {
		m.printf("- **%s**", mdText(peakSentence(a.Peak)))
		if a.MaxReserved > 0 {
			m.printf(" The allocator reserved at most %s over the trace.", units.Bytes(a.MaxReserved))
		}
		m.printf("\n")
		if len(a.Held) > 0 {
			m.printf("- Held by: %s.\n", mdText(heldLine(a.Held, a.Peak.Bytes, 6)))
		}
		if len(a.Components) > 0 {
			m.printf("- By component: %s.\n", mdText(heldLine(a.Components, a.Peak.Bytes, 6)))
		}
	}
	for _, o := range a.OOMs {
		m.printf("- **%s**\n", mdText(oomSentence(o)))
	}
	for i, f := range a.Findings {
		save := ""
		if s := findingSavingText(f); s != "" {
			save = " (" + s + ")"
		}
		m.printf("- Finding %d: **%s**%s. %s\n", i+1, mdText(f.Title), save, mdText(f.Advice))
	}
	m.printf("\n")
}
