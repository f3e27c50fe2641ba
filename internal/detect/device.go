// Package detect judges one allocator snapshot the way a GPU memory expert would: at the peak (or the OOM), not
// at the moment of the dump, with iterations and phases from package phases and every live block attributed by
// package categorize (stack rules, and lifetimes where stacks are missing or generic).
//
// The detectors are pure functions of a prepared Input: the device traces replayed (any replay that yields
// lifetimes and the allocated/reserved series will do), their phases and the per-block attribution. Every
// threshold, and why it has its value, is in package findings (thresholds.go), which also words every finding.
package detect

import (
	"cmp"
	"slices"
	"strings"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/internal/replay"
	"github.com/memscan/memscan/snapshot"
)

// Block is one allocation of the trace with its attribution, as the detectors read it. Device keeps blocks as the
// replay's pointer-free elements and an attribution index each (Device.Block builds a Block when asked): a long
// trace has millions of blocks and few distinct attributions. Attr is shared and must not be changed.
type Block struct {
	replay.Lifetime
	Attr *categorize.Attribution
}

// Device is one device's trace, prepared for the detectors.
type Device struct {
	*replay.DeviceTrace
	// attrs are the distinct attributions; attrOf[i] is the index of element i's.
	attrs  []categorize.Attribution
	attrOf []int32

	// leakSites memoizes Leaks: the report lists every growing site and the finding names the first.
	leakSites []findings.LeakSite
	leaksDone bool
	// segs memoizes segments; addrs and seg blockPlaces.
	segs  []segment
	addrs []uint64
	seg   []int32
}

// Input is everything the detectors read about one snapshot.
type Input struct {
	Snapshot *snapshot.Snapshot
	Devices  []*Device
	// Model, when set, replays a device's trace through an allocator model; nil means estimates only.
	Model AllocatorModel
}

// Prepare finds the phases of a replayed device trace and attributes every element (with cz, which must be used by
// one goroutine at a time), then gives the loss's tensors that their stacks do not name their category
// (attributeLoss). Elements of one stack whose lifetimes the rules cannot tell apart (categorize.LifeClass) share
// one attribution, decided once.
func Prepare(r *replay.DeviceTrace, cz *categorize.Categorizer) *Device {
	d := &Device{DeviceTrace: r, attrOf: make([]int32, len(r.Elements))}
	lives := categorize.NewLifeClassifier(d.Timeline())
	// The attributions decided so far, per stack (Element.Stack): a stack has a handful of lifetime classes.
	type decided struct {
		life categorize.LifeClass
		attr int32
	}
	byStack := make([][]decided, len(r.Stacks))
	byAttr := map[categorize.Attribution]int32{}
	for i := range r.Elements {
		el := &r.Elements[i]
		life := lives.Classify(categorize.Life{Start: int(el.Start), End: int(el.End)})
		a := int32(-1)
		for _, x := range byStack[el.Stack] {
			if x.life == life {
				a = x.attr
				break
			}
		}
		if a < 0 {
			a = d.intern(byAttr, categorize.AttributeClass(cz.Stack(r.Stacks[el.Stack]), life))
			byStack[el.Stack] = append(byStack[el.Stack], decided{life, a})
		}
		d.attrOf[i] = a
	}
	attributeLoss(d, byAttr)
	return d
}

// intern returns the index of attr among the device's attributions, adding it when new; byAttr indexes them. The
// attributions stay distinct: tables are indexed by them.
func (d *Device) intern(byAttr map[categorize.Attribution]int32, attr categorize.Attribution) int32 {
	a, ok := byAttr[attr]
	if !ok {
		a = int32(len(d.attrs))
		d.attrs = append(d.attrs, attr)
		byAttr[attr] = a
	}
	return a
}

// Attr returns the attribution of element i (shared: do not change it).
func (d *Device) Attr(i int) *categorize.Attribution { return &d.attrs[d.attrOf[i]] }

// AttrIndex returns the index of element i's attribution among Attrs, for tables indexed by attribution.
func (d *Device) AttrIndex(i int) int { return int(d.attrOf[i]) }

// Attrs returns the distinct attributions of the device's elements (shared: do not change them).
func (d *Device) Attrs() []categorize.Attribution { return d.attrs }

// Block returns element i with its attribution.
func (d *Device) Block(i int) Block { return Block{Lifetime: d.Lifetime(i), Attr: d.Attr(i)} }

// allocatedAt is the live bytes after event j (before the first event when j is −1).
func (d *Device) allocatedAt(j int) int64 {
	if j < 0 {
		return d.InitialAllocated
	}
	return d.Allocated[j]
}

// reservedAt is the segment bytes after event j.
func (d *Device) reservedAt(j int) int64 { return d.Reserved.At(j) }

// PeakIndex is the first event after which allocated memory is highest, and that memory: the replay's
// (replay.DeviceTrace.Peak), found once for the detectors and the report alike.
func (d *Device) PeakIndex() (int, int64) { return d.DeviceTrace.Peak() }

// MaxReservedIndex is the first event after which reserved memory is highest, and that memory.
func (d *Device) MaxReservedIndex() (int, int64) { return d.Reserved.ArgMax(len(d.Allocated)) }

// live returns the blocks live after event j.
func (d *Device) live(j int) []Block {
	var out []Block
	for i := range d.Elements {
		if el := &d.Elements[i]; int(el.Start) <= j && j < int(el.End) {
			out = append(out, d.Block(i))
		}
	}
	return out
}

// LiveAt breaks down the blocks live after event j; top bounds BySite (0: 20).
func (d *Device) LiveAt(j, top int) findings.LiveSet {
	ls := findings.LiveSet{Device: d.Device, Event: j}
	if j >= 0 && j < len(d.Trace) && d.Trace[j].HasTime {
		ls.TimeUS = d.Trace[j].TimeUS
	}
	it, ph := d.Timeline().At(j)
	ls.Iteration, ls.Phase = it+1, ph.String()
	cats, comps, phs, sites := map[string]*findings.Share{}, map[string]*findings.Share{}, map[string]*findings.Share{}, map[string]*findings.Share{}
	add := func(m map[string]*findings.Share, k string, b int64) {
		s := m[k]
		if s == nil {
			s = &findings.Share{Name: k}
			m[k] = s
		}
		s.Bytes += b
		s.Count++
	}
	for _, b := range d.live(j) {
		ls.Bytes += b.Size
		add(cats, b.Attr.Category, b.Size)
		add(comps, string(b.Attr.Component), b.Size)
		add(phs, b.Attr.AllocPhase.String(), b.Size)
		add(sites, siteKey(b.Attr), b.Size)
		if b.Attr.DecidedBy == categorize.DecidedByLifetime {
			ls.DecidedByLifetime += b.Size
		}
	}
	if top <= 0 {
		top = 20
	}
	ls.ByCategory, ls.ByComponent, ls.ByPhase = sorted(cats, 0), sorted(comps, 0), sorted(phs, 0)
	ls.BySite = sorted(sites, top)
	return ls
}

// siteKey names where a block came from: its stack's site, else its category and the lifetime rule that placed it.
func siteKey(a *categorize.Attribution) string {
	if a.Site != "" {
		return a.Site
	}
	if a.Lifetime != "" {
		return "(no stack: " + a.Category + ", " + a.Lifetime + ")"
	}
	return "(no stack)"
}

func sorted(m map[string]*findings.Share, top int) []findings.Share {
	out := make([]findings.Share, 0, len(m))
	for _, s := range m {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b findings.Share) int {
		return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), strings.Compare(a.Name, b.Name))
	})
	if top > 0 && len(out) > top {
		out = out[:top]
	}
	return out
}

// IterationPeak is the first event at the highest allocated memory within iteration k (0-based); ok is false when
// there is no such iteration. LiveAt breaks it down where the live set is wanted.
func (d *Device) IterationPeak(k int) (int, bool) {
	if k < 0 || k >= len(d.Timeline().Iterations) {
		return 0, false
	}
	sp := d.Timeline().Iterations[k].Span
	best := sp.Start
	for j := sp.Start; j < sp.End && j < len(d.Allocated); j++ {
		if d.Allocated[j] > d.Allocated[best] {
			best = j
		}
	}
	return best, true
}
