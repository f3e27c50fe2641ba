package analyze

import (
	"cmp"
	"slices"
	"strings"

	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/report"
)

// tracerPrimary is the primary device of a tracer report; nil for the other kinds.
func tracerPrimary(r *report.Report) *report.TracerDeviceView {
	if t, ok := r.Part.(*report.TracerReport); ok && t.Tracer != nil {
		return t.Tracer.Primary()
	}
	return nil
}

// CrossTracer compares the tracer reports among reports (others are ignored); nil when fewer than two reports
// are tracer input. Ranks are ordered by rank (unknown ranks last), then file, so the result does not depend on
// the order the inputs were analyzed in.
func CrossTracer(reports []*report.Report) *report.TracerCross {
	var rs []*report.Report
	for _, r := range reports {
		if r != nil && tracerPrimary(r) != nil {
			rs = append(rs, r)
		}
	}
	if len(rs) < 2 {
		return nil
	}
	slices.SortStableFunc(rs, func(a, b *report.Report) int {
		ra, rb := a.Rank, b.Rank
		if ra < 0 {
			ra = int(^uint(0) >> 1)
		}
		if rb < 0 {
			rb = int(^uint(0) >> 1)
		}
		return cmp.Or(cmp.Compare(ra, rb), strings.Compare(a.File, b.File))
	})
	c := &report.TracerCross{}
	peaks := make([]int64, 0, len(rs))
	modIdx := map[string]int{}
	phaseIdx := map[string]int{}
	for i, r := range rs {
		p := tracerPrimary(r)
		c.Ranks = append(c.Ranks, report.TracerRankRow{File: r.File, Rank: r.Rank, Device: p.Device, PeakBytes: p.PeakBytes,
			ListedBytes: p.ListedBytes, GapBytes: p.GapBytes, Tensors: p.Tensors})
		peaks = append(peaks, p.PeakBytes)
		if i == 0 || p.PeakBytes > c.MaxPeakBytes {
			c.MaxPeakBytes, c.MaxPeakRank, c.MaxPeakFile = p.PeakBytes, r.Rank, r.File
		}
		for _, m := range p.Modules {
			j, ok := modIdx[m.Pattern]
			if !ok {
				j = len(c.Modules)
				modIdx[m.Pattern] = j
				c.Modules = append(c.Modules, report.TracerModuleAcross{Pattern: m.Pattern, Bytes: make([]int64, len(rs))})
			}
			c.Modules[j].Bytes[i] += m.Bytes
		}
		for _, ph := range p.Phases {
			j, ok := phaseIdx[ph.Name]
			if !ok {
				j = len(c.Phases)
				phaseIdx[ph.Name] = j
				c.Phases = append(c.Phases, report.TracerPhaseAcross{Name: ph.Name, Bytes: make([]int64, len(rs))})
			}
			c.Phases[j].Bytes[i] += ph.Bytes
		}
	}
	c.MedianPeakBytes = units.Percentile(peaks, 50)
	c.MinPeakBytes = slices.Min(peaks)
	if c.MedianPeakBytes > 0 {
		c.ImbalancePct = (float64(c.MaxPeakBytes)/float64(c.MedianPeakBytes) - 1) * 100
		for i := range c.Ranks {
			c.Ranks[i].VsMedianPct = (float64(c.Ranks[i].PeakBytes)/float64(c.MedianPeakBytes) - 1) * 100
		}
	}
	for i := range c.Modules {
		m := &c.Modules[i]
		m.MaxBytes, m.MinBytes = slices.Max(m.Bytes), slices.Min(m.Bytes)
		m.SpreadBytes = m.MaxBytes - m.MinBytes
	}
	// Modules that differ most between ranks first: that is where stages hold different things.
	slices.SortStableFunc(c.Modules, func(a, b report.TracerModuleAcross) int {
		return cmp.Or(cmp.Compare(b.SpreadBytes, a.SpreadBytes), cmp.Compare(b.MaxBytes, a.MaxBytes), strings.Compare(a.Pattern, b.Pattern))
	})
	slices.SortStableFunc(c.Phases, func(a, b report.TracerPhaseAcross) int {
		return cmp.Or(cmp.Compare(slices.Max(b.Bytes), slices.Max(a.Bytes)), strings.Compare(a.Name, b.Name))
	})
	return c
}
