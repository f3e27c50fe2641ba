package results

import (
	"cmp"
	"fmt"
	"image/color"
	"slices"

	"github.com/memscan/memscan/internal/plots"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/phases"
	"github.com/memscan/memscan/report"
)

// envelopeBuckets is the number of buckets of the timeline PNG, about one per pixel column of its plot.
const envelopeBuckets = 900

// envelopeCharts draws memory_timeline.png (and memory_timeline_deviceN.png) from the full-resolution trace:
// by allocation event, every bucket's true extremes, so the peak and every spike show at their height.
func envelopeCharts(r *report.Report, snap *report.SnapshotReport) []chartJob {
	details := peakFirst(snap.Details, func(d *report.TimelineDetail) int { return d.Device }, r.Peak)
	var jobs []chartJob
	for k := range details {
		d := &details[k]
		if d.Events == 0 {
			continue
		}
		name := timelineChartName(k, d.Device)
		title := fmt.Sprintf("Memory over the trace: %s, device %d", titleFile(r.File), d.Device)
		j := newChartJob(name, title, func(p string) error {
			return plots.Envelope(p, envelopeChart(title, r, snap, d))
		})
		j.long = true
		jobs = append(jobs, j)
	}
	return jobs
}

// envelopeChart maps device d's trace to the chart.
func envelopeChart(title string, r *report.Report, snap *report.SnapshotReport, d *report.TimelineDetail) plots.EnvelopeChart {
	e := d.Envelope(0, d.Events, envelopeBuckets)
	nb := len(e.Start)
	c := plots.EnvelopeChart{Title: title, XLabel: "allocation event (trace index)", IntegerX: true, X: make([]float64, nb+1),
		AllocMin: toFloats(e.AllocMin), AllocMax: toFloats(e.AllocMax), ReservedMax: toFloats(e.ReservedMax), ReservedEnd: toFloats(e.ReservedEnd)}
	for k, s := range e.Start {
		c.X[k] = float64(s)
	}
	c.X[nb] = float64(e.To)
	if len(e.WhatIfEnd) > 0 {
		c.WhatIfEnd = toFloats(e.WhatIfEnd)
		// The legend column is narrow: the settings go in the title.
		c.WhatIfLabel = "reserved, what-if"
		c.Title += " (what-if: " + whatIfName(snap, d.Device) + ")"
	}
	// Categories by their bytes in the highest bucket (the peak's live set), the smallest folded into "other".
	top := 0
	for k := range nb {
		if e.AllocMax[k] > e.AllocMax[top] {
			top = k
		}
	}
	order := make([]int, len(d.Categories))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(e.ByCategory[b][top], e.ByCategory[a][top]) })
	var other []int64
	folded := 0
	for i, cat := range order {
		if slices.Max(e.ByCategory[cat]) <= 0 {
			continue
		}
		if i >= maxTimelineStacks-1 && len(order) > maxTimelineStacks {
			if other == nil {
				other = make([]int64, nb)
			}
			for k, v := range e.ByCategory[cat] {
				other[k] += v
			}
			folded++
			continue
		}
		name := d.Categories[cat]
		c.Stacked = append(c.Stacked, plots.Series{Name: name, Values: toFloats(e.ByCategory[cat]), Color: plots.CategoryColor(name)})
	}
	if other != nil {
		c.Stacked = append(c.Stacked, plots.Series{Name: fmt.Sprintf("other (%d categories)", folded), Values: toFloats(other), Color: plots.ColorOther})
	}
	for _, tl := range snap.Iterations {
		if tl.Device != d.Device {
			continue
		}
		for _, it := range tl.Iterations {
			for _, b := range []struct {
				sp   phases.Span
				kind string
				col  color.Color
			}{{it.Forward, "forward", plots.BandForward}, {it.Backward, "backward", plots.BandBackward}, {it.Optimizer, "optimizer", plots.BandOptimizer}} {
				if !b.sp.Empty() {
					c.Bands = append(c.Bands, plots.Band{X0: float64(b.sp.Start), X1: float64(b.sp.End), Kind: b.kind, Color: b.col})
				}
			}
			c.Labels = append(c.Labels, plots.XLabel{X: float64(it.Span.Start), Text: fmt.Sprintf("iter %d", it.Index)})
		}
	}
	for _, o := range snap.OOMs {
		if o.Device == d.Device {
			c.OOMs = append(c.OOMs, plots.XLabel{X: float64(o.EventIndex), Text: "OOM: asked " + units.PyTorchBytes(o.RequestedBytes)})
		}
	}
	for _, pk := range snap.DevicePeaks {
		if pk.Device != d.Device {
			continue
		}
		text := "peak " + units.Bytes(pk.Bytes)
		if w := peakWhere(&pk); w != "" {
			text += " (" + w + ")"
		}
		c.Peak = &plots.XLabel{X: float64(max(pk.EventIndex, 0)) + 0.5, Y: float64(pk.Bytes), Text: text}
	}
	return c
}

// peakAllocated and peakReserved are allocated and reserved memory at the trace's peak, 0 without one.
func peakAllocated(r *report.Report) float64 {
	if r.Peak == nil || r.Peak.ReservedBytes == 0 {
		return 0
	}
	return float64(r.Peak.Bytes)
}

func peakReserved(r *report.Report) float64 {
	if r.Peak == nil {
		return 0
	}
	return float64(r.Peak.ReservedBytes)
}
