package analyze

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/memscan/memscan/categorize"
	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/snapshot"
)

// Growth thresholds shared with the cross-snapshot view (crossinput.go): the trace's own leak detector and its
// reasons are in package findings (thresholds.go), and these are the same numbers.
const (
	LeakMinMarkers     = findings.LeakMinIterations
	LeakMinGrowthBytes = findings.LeakMinGrowthBytes
)

// element is one allocation in a replayed trace, live during events [start, end): start −1 means live before the
// first recorded event, end == len(trace) means still live at the end.
type element struct {
	size int64
	// Event indices are int32: a trace of 2^31 events would be a file of hundreds of gigabytes (run refuses one),
	// and half-size indices keep a million-element replay 24 MB smaller.
	start, end int32
	freeReq    int32 // index of a free_requested with no free_completed yet; −1 when none
	cat, site  int32 // indices into the replay's category and site tables
	// origin is the trace event the element was seen at first (its alloc, or a free whose alloc predates the
	// trace); −1−k for preBlocks[k], a live block of the final state that the trace never allocated.
	origin int32
}

// blockRef is a block of the snapshot's segments.
type blockRef struct{ seg, blk int }

// replay is the state of replaying one device trace.
type replay struct {
	a        *analysis
	dev      int
	trace    []snapshot.TraceEntry
	elems    []element
	catNames []string
	catIdx   map[string]int
	siteName []string
	siteCat  []int
	siteIdx  map[string]int
	byStack  map[*snapshot.Stack][2]int // category and site index per shared stack
	alloc    []int64                    // live requested bytes after each event
	reserved []int64                    // segment bytes after each event
	initial  int64                      // live bytes before the first event
	// initialReserved is the segment bytes before the first event; preBlocks the final-state blocks live all along.
	initialReserved int64
	preBlocks       []blockRef
	// spans are the address ranges of every segment the snapshot or its trace knows on this device, merged and
	// sorted; built at the first free of an address the trace never allocated (see phantomFree).
	spans [][2]uint64
}

func (r *replay) category(name string) int {
	if i, ok := r.catIdx[name]; ok {
		return i
	}
	r.catIdx[name] = len(r.catNames)
	r.catNames = append(r.catNames, name)
	return len(r.catNames) - 1
}

func (r *replay) classify(s *snapshot.Stack, traceCategory string) (cat, site int) {
	if traceCategory == "" {
		if cs, ok := r.byStack[s]; ok {
			return cs[0], cs[1]
		}
		defer func() { r.byStack[s] = [2]int{cat, site} }()
	}
	d := r.a.cat.Stack(s)
	if traceCategory != "" { // snapshots synthesised by profile_plot carry the profiler's category
		d.Category = traceCategory
	}
	cat = r.category(d.Category)
	return cat, r.siteIndex(siteName(d), cat)
}

// siteIndex returns the index of the site (name, category), adding it when new.
func (r *replay) siteIndex(name string, cat int) int {
	key := name + "\x00" + r.catNames[cat]
	if i, ok := r.siteIdx[key]; ok {
		return i
	}
	r.siteIdx[key] = len(r.siteName)
	r.siteName = append(r.siteName, name)
	r.siteCat = append(r.siteCat, cat)
	return len(r.siteName) - 1
}

// replayAll replays every non-empty device trace: timeline series, peaks, OOMs; then finds the iterations and
// phases, attributes every allocation by stack and lifetime, and runs the detectors of package findings.
func (a *analysis) replayAll() error {
	var best *Peak
	var devices []*findings.Device
	for dev, trace := range a.snap.DeviceTraces {
		for _, e := range trace {
			if a.part.TraceActions == nil {
				a.part.TraceActions = map[string]int{}
			}
			a.part.TraceActions[e.ActionName()]++
		}
		if len(trace) == 0 {
			continue
		}
		r := &replay{a: a, dev: dev, trace: trace, catIdx: map[string]int{}, siteIdx: map[string]int{}, byStack: map[*snapshot.Stack][2]int{}}
		if err := r.run(); err != nil {
			return err
		}
		r.classifyAll()
		d := r.judge()
		devices = append(devices, d)
		a.part.Iterations = append(a.part.Iterations, *d.Timeline)
		peak, peakCats := r.peak(d)
		if j, ok := d.IterationPeak(0); ok {
			_, ph := d.Timeline.At(j)
			peak.FirstIterationPhase = ph.String()
		}
		a.part.DevicePeaks = append(a.part.DevicePeaks, peak)
		if best == nil || peak.Bytes > best.Bytes {
			best = &a.part.DevicePeaks[len(a.part.DevicePeaks)-1]
		}
		a.part.Timeline = append(a.part.Timeline, r.series(peakCats))
		if !a.opts.NoTimelineDetail && (a.opts.MaxTimelineDetailEvents <= 0 || len(trace) <= a.opts.MaxTimelineDetailEvents) {
			a.part.Details = append(a.part.Details, r.detail(d))
		}
		for _, l := range findings.Leaks(d) {
			a.part.LeakSuspects = append(a.part.LeakSuspects, LeakSuspect{Device: dev, Site: l.Site, Category: l.Category,
				Markers: l.Iterations, MarkerKind: d.Timeline.Source + " iterations", FirstBytes: l.FirstBytes, LastBytes: l.LastBytes,
				GrowthBytes: l.LastBytes - l.FirstBytes, PerIterationBytes: l.PerIteration})
		}
		for i := range a.part.OOMs {
			if o := &a.part.OOMs[i]; o.Device == dev {
				x := findings.ExplainOOM(d, o.EventIndex)
				o.Explained = &x
			}
		}
	}
	if best != nil {
		p := *best
		a.rep.Peak = &p
	}
	// A trace of a handful of events ("state" recording keeps only the last one) holds no history to judge from.
	history := false
	for _, d := range devices {
		history = history || len(d.Trace) >= minHistoryEvents
	}
	fs, err := findings.Detect(a.ctx, &findings.Input{Snapshot: a.snap, Devices: devices, Model: a.allocModel()})
	if err != nil {
		return err
	}
	a.findings, a.judgedAtPeak = fs, history
	return nil
}

// minHistoryEvents is the trace length from which the detectors judge at the peak instead of at the dump: an
// allocation and its free at the least.
const minHistoryEvents = 2

// judge prepares the replayed device for the detectors and gives every element the category its attribution
// chose: where the stack is missing or names only generic machinery (autograd's engine, optimizer code), the
// lifetime decides. Categories the trace itself carries (profile_plot snapshots) are kept.
func (r *replay) judge() *findings.Device {
	fr := findings.Replay{Device: r.dev, Trace: r.trace, Lifetimes: r.lifetimes(),
		InitialAllocated: r.initial, InitialReserved: r.initialReserved, Allocated: r.alloc, Reserved: r.reserved}
	d := findings.Prepare(r.a.snap, fr, r.a.cat)
	n := int32(len(r.trace))
	// Blocks share their attribution and a site fixes its category, so (attribution, site) decides the new
	// category and site: looked up once per pair, not once per element (a name joined per element otherwise).
	type pair struct {
		attr *categorize.Attribution
		site int32
	}
	moved := map[pair][2]int32{}
	for i := range r.elems {
		el := &r.elems[i]
		if el.origin < 0 || r.trace[el.origin].Category() == "" {
			k := pair{d.Blocks[i].Attr, el.site}
			to, ok := moved[k]
			if !ok {
				to = [2]int32{el.cat, el.site}
				if c := k.attr.Category; c != r.catNames[el.cat] {
					to[0] = int32(r.category(c))
					to[1] = int32(r.siteIndex(r.siteName[el.site], int(to[0])))
				}
				moved[k] = to
			}
			el.cat, el.site = to[0], to[1]
		}
		if el.end == n {
			// Live at the end: the dump's views take this category for the block (analysis.blockCategory).
			if r.a.endCategory == nil {
				r.a.endCategory = map[deviceAddr]string{}
			}
			r.a.endCategory[deviceAddr{r.dev, d.Blocks[i].Addr}] = r.catNames[el.cat]
		}
	}
	return d
}

// run builds the elements and the allocated/reserved series with the memory viewer's semantics: an alloc adds its
// requested size; free_completed removes it (a free_requested removes it only when no free_completed follows);
// frees whose alloc precedes the trace, and live blocks with no alloc in the trace, count from the start.
func (r *replay) run() error {
	a, n := r.a, len(r.trace)
	if n > math.MaxInt32 {
		return fmt.Errorf("device %d: the trace has %d events, more than memscan can replay (%d)", r.dev, n, math.MaxInt32)
	}
	n32 := int32(n)
	open := map[uint64]int{} // address → element still allocated
	r.elems = make([]element, 0, n/2+16)
	resDelta := make([]int64, n)
	for jj := range r.trace {
		if err := a.checkCtx(); err != nil {
			return err
		}
		j, e := int32(jj), &r.trace[jj]
		switch e.Action {
		case snapshot.ActionAlloc:
			if i, ok := open[e.Addr]; ok {
				if el := &r.elems[i]; el.freeReq >= 0 {
					// Its free_completed was not recorded: the free_requested ended it.
					el.end = el.freeReq
				} else {
					a.warns.add("alloc-over-live", fmt.Sprintf("device %d trace event %d: alloc at 0x%x, which is still allocated since event %d", r.dev, j, e.Addr, el.start))
					el.end = j
				}
			}
			open[e.Addr] = len(r.elems)
			r.elems = append(r.elems, element{size: e.Size, start: j, end: n32, freeReq: -1, origin: j})
		case snapshot.ActionFreeRequested:
			if i, ok := open[e.Addr]; ok {
				if r.elems[i].freeReq < 0 {
					r.elems[i].freeReq = j
				}
				continue
			}
			if r.phantomFree(jj, e) {
				continue
			}
			// Allocated before the trace window: live from the start, stack taken from the free.
			open[e.Addr] = len(r.elems)
			r.elems = append(r.elems, element{size: e.Size, start: -1, end: n32, freeReq: j, origin: j})
		case snapshot.ActionFreeCompleted:
			if i, ok := open[e.Addr]; ok {
				r.elems[i].end = j
				r.elems[i].freeReq = -1
				delete(open, e.Addr)
				continue
			}
			if r.phantomFree(jj, e) {
				continue
			}
			r.elems = append(r.elems, element{size: e.Size, start: -1, end: j, freeReq: -1, origin: j})
		case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentMap:
			resDelta[j] += e.Size
		case snapshot.ActionSegmentFree, snapshot.ActionSegmentUnmap:
			resDelta[j] -= e.Size
		case snapshot.ActionOOM:
			r.oom(jj, e)
		}
	}
	// A free_requested never completed within the trace ends the allocation where it was requested.
	for addr, i := range open {
		if r.elems[i].freeReq >= 0 {
			r.elems[i].end = r.elems[i].freeReq
			delete(open, addr)
		}
	}
	// Live blocks of the final state whose alloc is not in the trace were live all along.
	liveAtEnd := make(map[uint64]bool, len(open))
	for addr := range open {
		liveAtEnd[addr] = true
	}
	var finalRes int64 // the device's segment bytes in the final state
	for i := range a.snap.Segments {
		seg := &a.snap.Segments[i]
		if seg.Device != r.dev {
			continue
		}
		finalRes += seg.TotalSize
		for j := range seg.Blocks {
			b := &seg.Blocks[j]
			if b.State != snapshot.BlockActiveAllocated || liveAtEnd[b.Address] {
				continue
			}
			r.elems = append(r.elems, element{size: b.RequestedSize, start: -1, end: n32, freeReq: -1, origin: int32(-1 - len(r.preBlocks))})
			r.preBlocks = append(r.preBlocks, blockRef{i, j})
		}
	}

	delta := make([]int64, n)
	for i := range r.elems {
		el := &r.elems[i]
		if el.start < 0 {
			r.initial += el.size
		} else {
			delta[el.start] += el.size
		}
		if el.end < n32 {
			delta[el.end] -= el.size
		}
	}
	// The running sums replace the deltas in place: two fewer arrays of one word per event, a tenth of the peak
	// memory of a single-device snapshot.
	r.alloc, r.reserved = delta, resDelta
	var net int64
	for _, d := range resDelta {
		net += d
	}
	// Reserved memory is rebuilt backwards from the final state, as the viewer's allocator-state view does.
	res := finalRes - net
	if res < 0 {
		a.warns.add("reserved-negative", fmt.Sprintf("device %d: segment events free %d bytes more than the snapshot holds plus the trace allocated; reserved timeline starts at 0", r.dev, -res))
		res = 0
	}
	r.initialReserved = res
	cur := r.initial
	for j := range n {
		cur += delta[j]
		res += resDelta[j]
		r.alloc[j], r.reserved[j] = cur, res
	}
	// OOM events get the memory state just before them (an oom event itself changes nothing).
	for i := range a.part.OOMs {
		o := &a.part.OOMs[i]
		if o.Device == r.dev && o.EventIndex < n {
			o.AllocatedBytes, o.ReservedBytes = r.alloc[o.EventIndex], r.reserved[o.EventIndex]
		}
	}
	return nil
}

// classifyAll sets every element's category and site, in the order the elements were seen.
func (r *replay) classifyAll() {
	for i := range r.elems {
		el := &r.elems[i]
		if el.origin >= 0 {
			e := &r.trace[el.origin]
			cat, site := r.classify(e.Stack, e.Category())
			el.cat, el.site = int32(cat), int32(site)
		} else {
			b, _ := r.block(int(el.origin))
			cat, site := r.classify(b.Stack, "")
			el.cat, el.site = int32(cat), int32(site)
		}
	}
}

// block returns the final-state block of an element with a negative origin, and its segment.
func (r *replay) block(origin int) (*snapshot.Block, *snapshot.Segment) {
	ref := r.preBlocks[-1-origin]
	seg := &r.a.snap.Segments[ref.seg]
	return &seg.Blocks[ref.blk], seg
}

func (r *replay) oom(j int, e *snapshot.TraceEntry) {
	d := r.a.cat.Stack(e.Stack)
	o := OOM{Device: r.dev, EventIndex: j, RequestedBytes: e.Size, DeviceFreeBytes: e.DeviceFree, Category: d.Category}
	if d.Site != "" {
		o.Site = d.Site
	}
	if e.HasTime {
		o.TimeUS = e.TimeUS
	}
	r.a.part.OOMs = append(r.a.part.OOMs, o)
}

// peakIndex returns the first event at the highest live allocated memory and that memory; the index is −1 only
// when memory before the first event was higher than ever after.
func (r *replay) peakIndex() (int, int64) {
	idx, bytes := -1, int64(-1)
	for j, v := range r.alloc {
		if v > bytes {
			idx, bytes = j, v
		}
	}
	if r.initial > bytes {
		return -1, r.initial
	}
	return idx, bytes
}

// peak finds the highest live allocated memory and the live set at that point, with its iteration and phase from
// the judged device d (whose Blocks are the elements, in order); it also returns the live bytes per category index
// there, which order the timeline's categories.
func (r *replay) peak(d *findings.Device) (Peak, []int64) {
	p := Peak{Device: r.dev}
	p.EventIndex, p.Bytes = r.peakIndex()
	if t := p.EventIndex; t >= 0 && r.trace[t].HasTime {
		p.TimeUS = r.trace[t].TimeUS
	} else if t < 0 && r.trace[0].HasTime {
		p.TimeUS = r.trace[0].TimeUS
	}
	p.ReservedBytes = r.initialReserved
	if p.EventIndex >= 0 {
		p.ReservedBytes = r.reserved[p.EventIndex]
	}
	it, ph := d.Timeline.At(p.EventIndex)
	p.Iteration, p.Phase = it+1, ph.String()
	// The live set at the peak, in one pass: bytes and counts per category and per site, and per component with
	// the bytes the lifetime categorized from each block's attribution.
	cats, sites := make([]int64, len(r.catNames)), make([]int64, len(r.siteName))
	counts, siteCounts := make([]int, len(r.catNames)), make([]int, len(r.siteName))
	comps := map[string]*CategoryStat{}
	for i, el := range r.elems {
		if int(el.start) <= p.EventIndex && p.EventIndex < int(el.end) {
			cats[el.cat] += el.size
			sites[el.site] += el.size
			counts[el.cat]++
			siteCounts[el.site]++
			attr := d.Blocks[i].Attr
			c := comps[string(attr.Component)]
			if c == nil {
				c = &CategoryStat{Name: string(attr.Component)}
				comps[c.Name] = c
			}
			c.Bytes += el.size
			c.Count++
			if attr.DecidedBy == categorize.DecidedByLifetime {
				p.LifetimeDecidedBytes += el.size
			}
		}
	}
	if len(comps) > 0 {
		p.Components = sortedCategories(comps)
	}
	catStats := map[string]*CategoryStat{}
	for i, b := range cats {
		if counts[i] > 0 {
			catStats[r.catNames[i]] = &CategoryStat{Name: r.catNames[i], Bytes: b, Count: counts[i]}
		}
	}
	p.Categories = sortedCategories(catStats)
	siteStats := map[int]*SiteStat{}
	for i, b := range sites {
		if siteCounts[i] > 0 {
			siteStats[i] = &SiteStat{Site: r.siteName[i], Category: r.catNames[r.siteCat[i]], Bytes: b, Count: siteCounts[i]}
		}
	}
	p.Sites = topSites(siteStats, r.a.opts.TopN)
	return p, cats
}

// sampleIndices downsamples n points to at most max, keeping the index of the largest value in each bucket
// (so the peak always survives) plus the peak index itself.
func sampleIndices(values []int64, maxPoints int) []int {
	n := len(values)
	if n <= maxPoints {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	bucket := (n + maxPoints - 1) / maxPoints
	out := make([]int, 0, maxPoints)
	for lo := 0; lo < n; lo += bucket {
		hi := min(n, lo+bucket)
		best := lo
		for j := lo + 1; j < hi; j++ {
			if values[j] > values[best] {
				best = j
			}
		}
		out = append(out, best)
	}
	return out
}

// series builds the downsampled timeline with per-category stacks; peakCats are the live bytes per category at
// the peak.
func (r *replay) series(peakCats []int64) TimelineSeries {
	idx := sampleIndices(r.alloc, r.a.opts.MaxTimelinePoints)
	ts := TimelineSeries{Device: r.dev, Index: idx, Allocated: make([]int64, len(idx)), Reserved: make([]int64, len(idx))}
	hasTime := r.trace[0].HasTime
	if hasTime {
		ts.TimeUS = make([]int64, len(idx))
	}
	for i, j := range idx {
		ts.Allocated[i] = r.alloc[j]
		ts.Reserved[i] = r.reserved[j]
		if hasTime {
			ts.TimeUS[i] = r.trace[j].TimeUS
		}
	}
	// Category order: by live bytes at the peak, then by name; categories never live at a sample are still listed.
	order := make([]int, len(r.catNames))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int {
		return cmp.Or(cmp.Compare(peakCats[y], peakCats[x]), cmp.Compare(r.catNames[x], r.catNames[y]))
	})
	pos := make([]int, len(order))
	for p, c := range order {
		pos[c] = p
		ts.Categories = append(ts.Categories, r.catNames[c])
	}
	ts.ByCategory = make([][]int64, len(order))
	for p := range ts.ByCategory {
		ts.ByCategory[p] = make([]int64, len(idx))
	}
	// Sweep the sample indices with the elements sorted by start and by end.
	byStart := make([]int, len(r.elems))
	byEnd := make([]int, len(r.elems))
	for i := range r.elems {
		byStart[i], byEnd[i] = i, i
	}
	sort.SliceStable(byStart, func(x, y int) bool { return r.elems[byStart[x]].start < r.elems[byStart[y]].start })
	sort.SliceStable(byEnd, func(x, y int) bool { return r.elems[byEnd[x]].end < r.elems[byEnd[y]].end })
	cur := make([]int64, len(order))
	si, ei := 0, 0
	for k, j := range idx {
		for si < len(byStart) && int(r.elems[byStart[si]].start) <= j {
			el := &r.elems[byStart[si]]
			cur[pos[el.cat]] += el.size
			si++
		}
		for ei < len(byEnd) && int(r.elems[byEnd[ei]].end) <= j {
			el := &r.elems[byEnd[ei]]
			cur[pos[el.cat]] -= el.size
			ei++
		}
		for p := range cur {
			ts.ByCategory[p][k] = cur[p]
		}
	}
	return ts
}
