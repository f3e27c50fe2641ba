package analyze

import (
	"runtime"

	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/internal/replay"
	"github.com/memscan/memscan/phases"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/snapshot"
)

// summarySteps are the steps of Options.SummaryOnly: the checks and totals of the final state, then per device
// trace the replay's peak and out-of-memory events and the categories of the blocks still live at its end (the
// lifetime decides those of stackless blocks, as in the full analysis), then the live blocks' categories. No
// element is categorized that is not live at the end, and neither the detectors nor the allocator model run.
func (a *analysis) summarySteps() []analysisStep {
	return []analysisStep{{StageTotals, a.checkSizes}, {StageTotals, a.totals}, {StageTrace, a.summaryReplay}, {StageCategories, a.liveBlocks}}
}

// summaryReplay replays every device trace for the peak, the OOM events and the categories of the blocks live at
// its end.
func (a *analysis) summaryReplay() error {
	var best *report.Peak
	// The devices are replayed side by side: a summary holds little of each once it has its categories.
	err := a.eachTrace(runtime.GOMAXPROCS(0), a.liveAtEnd, func(dev int, t *replay.Trace) {
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

// liveAtEnd reports whether device dev holds an allocated block in the final state: only then does the summary
// attribute blocks (endCategories), which reads the device's iterations and phases.
func (a *analysis) liveAtEnd(dev int) bool {
	for i := range a.snap.Segments {
		if seg := &a.snap.Segments[i]; seg.Device == dev {
			for j := range seg.Blocks {
				if seg.Blocks[j].State == snapshot.BlockActiveAllocated {
					return true
				}
			}
		}
	}
	return false
}

// endCategories records the category the full analysis gives each block live at the end of t (judge): the trace's
// own category where the event carries one, else the attribution of its stack and lifetime, or Loss/Logits where
// the loss's pattern (categorize.LossPattern, as detect.Prepare applies it) takes the block.
func (a *analysis) endCategories(t *replay.Trace) {
	var d *replay.DeviceTrace // its phases are found at the first block that needs them
	timeline := func() *phases.Timeline {
		if d == nil {
			d = t.DeviceTrace()
		}
		return d.Timeline()
	}
	n := int32(len(t.Events))
	// Attributions are decided once per stack and lifetime class, as detect.Prepare does.
	type key struct {
		stack *snapshot.Stack
		life  categorize.LifeClass
	}
	byKey := map[key]string{}
	attribute := func(i int) string {
		el := &t.Elements[i]
		k := key{t.Stack(i), categorize.ClassifyLife(categorize.Life{Start: int(el.Start), End: int(el.End)}, timeline())}
		c, ok := byKey[k]
		if !ok {
			c = categorize.AttributeClass(a.cat.Stack(k.stack), k.life).Category
			byKey[k] = c
		}
		return c
	}
	own := t.TraceCategory
	loss := a.endLoss(t, n, own, timeline, attribute)
	for i := range t.Elements {
		el := &t.Elements[i]
		if el.End != n {
			continue
		}
		cat := own(i)
		switch {
		case cat != "":
		case loss[i]:
			cat = categorize.LossLogits
		default:
			cat = attribute(i)
		}
		if a.endCategory == nil {
			a.endCategory = map[deviceAddr]string{}
		}
		a.endCategory[deviceAddr{t.Device, t.Addr(i)}] = cat
	}
}

// endLoss returns the blocks live at the end of t that the loss's pattern moves to Loss/Logits: only looked for
// when such a block could be one (live at the end, allocated in the trace, as large as the pattern's tensors,
// without a category of the trace's own). The pattern is found within one iteration at a time, from the
// categories of its large blocks: only the iterations where such a block was allocated can name one, so only
// their blocks are attributed (the others keep their place in the scan, which starts afresh at each iteration).
func (a *analysis) endLoss(t *replay.Trace, n int32, own func(int) string, timeline func() *phases.Timeline, attribute func(int) string) map[int]bool {
	var inIter []bool     // by iteration: a block that could be the loss's was allocated in it
	var cur phases.Cursor // elements come in trace order: each lookup starts from the previous one's iteration
	for i := range t.Elements {
		if el := &t.Elements[i]; el.End == n && el.Start >= 0 && el.Size >= categorize.LossMinBytes && own(i) == "" {
			tl := timeline()
			if inIter == nil {
				cur = tl.Cursor()
			}
			if k, _ := cur.At(int(el.Start)); k >= 0 {
				if inIter == nil {
					inIter = make([]bool, len(tl.Iterations))
				}
				inIter[k] = true
			}
		}
	}
	if inIter == nil {
		return nil
	}
	tl := timeline()
	cur = tl.Cursor()
	idx := categorize.LossPattern(tl, len(t.Elements), func(i int) categorize.LossBlock {
		el := &t.Elements[i]
		b := categorize.LossBlock{Start: int(el.Start), Size: el.Size}
		if el.Start >= 0 && el.Size >= categorize.LossMinBytes { // the only blocks the pattern reads the category of
			if k, _ := cur.At(b.Start); k >= 0 && inIter[k] {
				b.Category = attribute(i)
			}
		}
		return b
	})
	out := map[int]bool{}
	for _, i := range idx {
		if t.Elements[i].End == n {
			out[i] = true
		}
	}
	return out
}
