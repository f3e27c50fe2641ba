package analyze

import (
	"cmp"
	"slices"
	"strings"

	"github.com/memscan/memscan/units"
)

// TracerCross compares tracer inputs (one file per simulated rank): a per-rank table, per-module and per-phase
// bytes across ranks (which pipeline stage holds what), and the peak imbalance.
type TracerCross struct {
	Ranks   []TracerRankRow      `json:"ranks" msgpack:"ranks"`
	Modules []TracerModuleAcross `json:"modules" msgpack:"modules"`
	Phases  []TracerPhaseAcross  `json:"phases" msgpack:"phases"`
	// Peak statistics over ranks. ImbalancePct is (max/median − 1) × 100 of the peaks.
	MaxPeakBytes    int64   `json:"max_peak_bytes" msgpack:"max_peak_bytes"`
	MinPeakBytes    int64   `json:"min_peak_bytes" msgpack:"min_peak_bytes"`
	MedianPeakBytes int64   `json:"median_peak_bytes" msgpack:"median_peak_bytes"`
	MaxPeakRank     int     `json:"max_peak_rank" msgpack:"max_peak_rank"`
	MaxPeakFile     string  `json:"max_peak_file" msgpack:"max_peak_file"`
	ImbalancePct    float64 `json:"imbalance_pct" msgpack:"imbalance_pct"`
}

// TracerRankRow is one tracer input in the cross-rank table.
type TracerRankRow struct {
	File        string  `json:"file" msgpack:"file"`
	Rank        int     `json:"rank" msgpack:"rank"`
	Device      string  `json:"device" msgpack:"device"`
	PeakBytes   int64   `json:"peak_bytes" msgpack:"peak_bytes"`
	ListedBytes int64   `json:"listed_bytes" msgpack:"listed_bytes"`
	GapBytes    int64   `json:"gap_bytes" msgpack:"gap_bytes"`
	Tensors     int     `json:"tensors" msgpack:"tensors"`
	VsMedianPct float64 `json:"vs_median_pct" msgpack:"vs_median_pct"` // (peak/median − 1) × 100
}

// TracerModuleAcross is one merged module pattern's bytes on every rank, in the order of TracerCross.Ranks.
type TracerModuleAcross struct {
	Pattern     string  `json:"pattern" msgpack:"pattern"`
	Bytes       []int64 `json:"bytes" msgpack:"bytes"`
	MaxBytes    int64   `json:"max_bytes" msgpack:"max_bytes"`
	MinBytes    int64   `json:"min_bytes" msgpack:"min_bytes"`
	SpreadBytes int64   `json:"spread_bytes" msgpack:"spread_bytes"` // max − min
}

// TracerPhaseAcross is one phase's bytes on every rank, in the order of TracerCross.Ranks.
type TracerPhaseAcross struct {
	Name  string  `json:"name" msgpack:"name"`
	Bytes []int64 `json:"bytes" msgpack:"bytes"`
}

// tracerPrimary is the primary device of a tracer report; nil for the other kinds.
func tracerPrimary(r *Report) *TracerDeviceView {
	if t, ok := r.Part.(*TracerReport); ok && t.Tracer != nil {
		return t.Tracer.Primary()
	}
	return nil
}

// CrossTracer compares the tracer reports among reports (others are ignored); nil when fewer than two reports
// are tracer input. Ranks are ordered by rank (unknown ranks last), then file, so the result does not depend on
// the order the inputs were analyzed in.
func CrossTracer(reports []*Report) *TracerCross {
	var rs []*Report
	for _, r := range reports {
		if r != nil && tracerPrimary(r) != nil {
			rs = append(rs, r)
		}
	}
	if len(rs) < 2 {
		return nil
	}
	slices.SortStableFunc(rs, func(a, b *Report) int {
		ra, rb := a.Rank, b.Rank
		if ra < 0 {
			ra = int(^uint(0) >> 1)
		}
		if rb < 0 {
			rb = int(^uint(0) >> 1)
		}
		return cmp.Or(cmp.Compare(ra, rb), strings.Compare(a.File, b.File))
	})
	c := &TracerCross{}
	peaks := make([]int64, 0, len(rs))
	modIdx := map[string]int{}
	phaseIdx := map[string]int{}
	for i, r := range rs {
		p := tracerPrimary(r)
		c.Ranks = append(c.Ranks, TracerRankRow{File: r.File, Rank: r.Rank, Device: p.Device, PeakBytes: p.PeakBytes,
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
				c.Modules = append(c.Modules, TracerModuleAcross{Pattern: m.Pattern, Bytes: make([]int64, len(rs))})
			}
			c.Modules[j].Bytes[i] += m.Bytes
		}
		for _, ph := range p.Phases {
			j, ok := phaseIdx[ph.Name]
			if !ok {
				j = len(c.Phases)
				phaseIdx[ph.Name] = j
				c.Phases = append(c.Phases, TracerPhaseAcross{Name: ph.Name, Bytes: make([]int64, len(rs))})
			}
			c.Phases[j].Bytes[i] += ph.Bytes
		}
	}
	c.MedianPeakBytes = units.Median(peaks)
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
	slices.SortStableFunc(c.Modules, func(a, b TracerModuleAcross) int {
		return cmp.Or(cmp.Compare(b.SpreadBytes, a.SpreadBytes), cmp.Compare(b.MaxBytes, a.MaxBytes), strings.Compare(a.Pattern, b.Pattern))
	})
	slices.SortStableFunc(c.Phases, func(a, b TracerPhaseAcross) int {
		return cmp.Or(cmp.Compare(slices.Max(b.Bytes), slices.Max(a.Bytes)), strings.Compare(a.Name, b.Name))
	})
	return c
}
