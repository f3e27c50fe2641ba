package analyze

import (
	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/internal/replay"
	"github.com/memscan/memscan/report"
)

// summarySteps are the steps of Options.SummaryOnly: the checks and totals of the final state, then per device
// trace the replay's peak and out-of-memory events and the categories of the blocks still live at its end (the
// lifetime decides those of stackless blocks, as in the full analysis), then the live blocks' categories. No
// element is categorized that is not live at the end, and neither the detectors nor the allocator model run.
func (a *analysis) summarySteps() []func() error {
	return []func() error{a.checkSizes, a.totals, a.summaryReplay, a.liveBlocks}
}

// summaryReplay replays every device trace for the peak, the OOM events and the categories of the blocks live at
// its end.
func (a *analysis) summaryReplay() error {
	var best *report.Peak
	err := a.eachTrace(func(dev int, t *replay.Trace) {
		(&devTrace{Trace: t, a: a}).ooms()
		p := report.Peak{Device: dev}
		p.EventIndex, p.Bytes = t.PeakIndex()
		if best == nil || p.Bytes > best.Bytes {
			best = &p
		}
		a.endCategories(t)
	})
	a.rep.Peak = best
	return err
}

// endCategories records the category the full analysis gives each block live at the end of t (judge): the trace's
// own category where the event carries one, else the attribution of its stack and lifetime.
func (a *analysis) endCategories(t *replay.Trace) {
	var d *replay.DeviceTrace // its phases are found at the first block that needs them
	n := int32(len(t.Events))
	for i := range t.Elements {
		el := &t.Elements[i]
		if el.End != n {
			continue
		}
		cat := ""
		if el.Origin >= 0 {
			cat = t.Events[el.Origin].Category()
		}
		if cat == "" {
			if d == nil {
				d = t.DeviceTrace()
			}
			cat = categorize.Attribute(a.cat.Stack(t.Stack(i)), categorize.Life{Start: int(el.Start), End: int(el.End)}, d.Timeline()).Category
		}
		if a.endCategory == nil {
			a.endCategory = map[deviceAddr]string{}
		}
		a.endCategory[deviceAddr{t.Device, t.Addr(i)}] = cat
	}
}
