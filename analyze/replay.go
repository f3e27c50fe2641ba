package analyze

import (
	"cmp"
	"slices"
	"sync/atomic"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/internal/detect"
	"github.com/memscan/memscan/internal/replay"
	"github.com/memscan/memscan/phases"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/snapshot"
)

// devTrace is one device trace replayed (package replay) and categorized: every element's category and site.
type devTrace struct {
	*replay.Trace
	a        *analysis
	cat      []int32 // per element: index into catNames
	site     []int32 // per element: index into siteName
	catNames []string
	catIdx   map[string]int
	siteName []string
	siteCat  []int
	siteIdx  map[string]int
}

func (r *devTrace) category(name string) int {
	if i, ok := r.catIdx[name]; ok {
		return i
	}
	r.catIdx[name] = len(r.catNames)
	r.catNames = append(r.catNames, name)
	return len(r.catNames) - 1
}

func (r *devTrace) classify(s *snapshot.Stack, traceCategory string) (cat, site int) {
	d := r.a.cat.Stack(s)
	if traceCategory != "" { // snapshots synthesised by profile_plot carry the profiler's category
		d.Category = traceCategory
	}
	cat = r.category(d.Category)
	return cat, r.siteIndex(d.SiteName(), cat)
}

// siteIndex returns the index of the site (name, category), adding it when new.
func (r *devTrace) siteIndex(name string, cat int) int {
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
	var best *report.Peak
	var devices []*detect.Device
	var detailed []struct {
		r *devTrace
		d *detect.Device
	}
	err := a.eachTrace(1, func(int) bool { return true }, func(dev int, t *replay.Trace) {
		a.countActions(t)
		r := &devTrace{Trace: t, a: a, catIdx: map[string]int{}, siteIdx: map[string]int{}}
		r.ooms()
		r.classifyAll()
		d := r.judge()
		devices = append(devices, d)
		a.part.Iterations = append(a.part.Iterations, *d.Timeline())
		peak, peakCats := r.peak(d)
		if j, ok := d.IterationPeak(0); ok {
			_, ph := d.Timeline().At(j)
			peak.FirstIterationPhase = ph.String()
		}
		a.part.DevicePeaks = append(a.part.DevicePeaks, peak)
		if best == nil || peak.Bytes > best.Bytes {
			best = &a.part.DevicePeaks[len(a.part.DevicePeaks)-1]
		}
		a.part.Timeline = append(a.part.Timeline, r.series(peakCats))
		if !a.opts.NoTimelineDetail && (a.opts.MaxTimelineDetailEvents <= 0 || len(t.Events) <= a.opts.MaxTimelineDetailEvents) {
			detailed = append(detailed, struct {
				r *devTrace
				d *detect.Device
			}{r, d})
		}
		for _, l := range detect.Leaks(d) {
			a.part.LeakSuspects = append(a.part.LeakSuspects, report.LeakSuspect{Device: dev, Site: l.Site, Category: l.Category,
				Markers: l.Iterations, MarkerKind: d.Timeline().Source + " iterations", FirstBytes: l.FirstBytes, LastBytes: l.LastBytes,
				GrowthBytes: l.LastBytes - l.FirstBytes, PerIterationBytes: l.PerIteration})
		}
		for i := range a.part.OOMs {
			if o := &a.part.OOMs[i]; o.Device == dev {
				x := detect.ExplainOOM(d, o.EventIndex)
				o.Explained = &x
			}
		}
	})
	if err != nil {
		return err
	}
	// The iteration tables read the allocator model's block bytes, which it was replaying meanwhile. When it is
	// done, they come first and the block series goes before the detectors' working sets (8 bytes an event);
	// while it still replays, the detectors come first, on the core it leaves idle, and ask it last.
	iterations := func() {
		for _, d := range devices {
			a.part.IterationTable = append(a.part.IterationTable, iterationTable(d, a.blockSeries(d.Device))...)
		}
		// The block series had no other reader. Only dropped once the replays are done: without a device trace
		// nothing above waited for them, and they still write it.
		if a.allocRun != nil && !a.replaysPending() {
			a.allocRun.blocks = nil
		}
	}
	detectFirst := a.replaysPending()
	if !detectFirst {
		iterations()
	}
	if best != nil {
		p := *best
		a.rep.Peak = &p
	}
	// A trace of a handful of events ("state" recording keeps only the last one) holds no history to judge from.
	history := false
	for _, d := range devices {
		history = history || len(d.Trace) >= findings.MinHistoryEvents
	}
	fs, err := detect.Detect(a.ctx, &detect.Input{Snapshot: a.snap, Devices: devices, Model: a.allocModel()})
	if err != nil {
		return err
	}
	if detectFirst {
		iterations()
	}
	// Without history the trace's cache detectors would judge a moment the dump's cache checks judge too: the
	// dump's stand then, so that no finding is stated twice. An OOM is a fact of the trace either way.
	if !history {
		fs = slices.DeleteFunc(fs, func(f findings.Finding) bool { return f.ID == findings.CacheOverhead || f.ID == findings.Fragmentation })
	}
	a.findings, a.judgedAtPeak = fs, history
	// The details wait for the detectors: built beside them, they set the analysis's peak memory. Each device's
	// replay is let go once its detail is built, so that the next device's detail is not built beside it.
	clear(devices)
	for i := range detailed {
		x := &detailed[i]
		a.part.Details = append(a.part.Details, x.r.detail(x.d))
		x.r, x.d = nil, nil
	}
	return nil
}

// dropAnnotations lets the snapshot's record_function marks go when the analysis owns it (Options.ownsInput) and
// every device's iterations and phases have been found from them: they have no other reader, and a long training
// run holds one per step and phase (9 MB for 39,000 steps).
func (a *analysis) dropAnnotations() {
	if a.opts.ownsInput {
		a.snap.ExternalAnnotations = nil
	}
}

// releaseTrace lets device dev's trace go when the analysis owns its snapshot (Options.ownsInput): from the snapshot,
// the device's replay t and its judged device d, its last readers. The report needs nothing more of it, and the
// trace is the largest thing an analysis holds (40 bytes an event).
func (a *analysis) releaseTrace(dev int, t *replay.Trace, d *detect.Device) {
	if !a.opts.ownsInput {
		return
	}
	a.snap.DeviceTraces[dev] = nil
	t.Events = nil
	d.Trace = nil
}

// eachTrace replays every non-empty device trace (package replay) and hands it to f with its device, in device
// order. Up to ahead devices are replayed at once, each beside the search for its iterations and phases where
// wantPhases names it (Trace.UseTimeline); the warnings of each replay reach the report just before f sees it,
// so that they come in the order of a replay of one device after the other.
func (a *analysis) eachTrace(ahead int, wantPhases func(dev int) bool, f func(dev int, t *replay.Trace)) error {
	var devs []int
	for dev, trace := range a.snap.DeviceTraces {
		if len(trace) > 0 {
			devs = append(devs, dev)
		}
	}
	jobs := make([]*devReplay, len(devs))
	started := 0
	// When every device's iterations and phases are searched for, the last search to finish lets the annotations
	// go (dropAnnotations); a device replayed without one may still ask for its phases later.
	every := true
	for _, dev := range devs {
		every = every && wantPhases(dev)
	}
	var left atomic.Int32
	left.Store(int32(len(devs)))
	searched := func() {
		if every && left.Add(-1) == 0 {
			a.dropAnnotations()
		}
	}
	defer func() {
		for _, j := range jobs[:started] {
			if j != nil {
				<-j.done // no goroutine outlives the call
			}
		}
	}()
	for i, dev := range devs {
		for ; started < min(len(devs), i+max(ahead, 1)); started++ {
			jobs[started] = a.startReplay(devs[started], wantPhases(devs[started]), searched)
		}
		j := jobs[i]
		<-j.done
		jobs[i] = nil
		for _, w := range j.warns {
			a.warns.add(w.kind, w.example)
		}
		if j.err != nil {
			return j.err
		}
		f(dev, j.t)
	}
	return nil
}

// devReplay is one device's replay on its own goroutine: t, err and warns (what it warned of, in order) are set
// when done is closed.
type devReplay struct {
	done  chan struct{}
	t     *replay.Trace
	err   error
	warns []warning
}

type warning struct{ kind, example string }

// startReplay replays device dev on another goroutine; with findPhases, the device's iterations and phases are found
// beside it, on a third (which then calls searched): that search reads only the events, and a rank summary runs
// nothing else meanwhile.
func (a *analysis) startReplay(dev int, findPhases bool, searched func()) *devReplay {
	j := &devReplay{done: make(chan struct{})}
	go func() {
		defer close(j.done)
		var found chan *phases.Timeline
		if findPhases {
			found = make(chan *phases.Timeline, 1)
			go func() {
				tl := replay.Phases(a.snap, dev)
				searched()
				found <- tl
			}()
		}
		j.t, j.err = replay.Run(a.ctx, a.snap, dev, func(kind, example string) { j.warns = append(j.warns, warning{kind, example}) })
		if found != nil {
			tl := <-found
			if j.err == nil {
				j.t.UseTimeline(tl)
			}
		}
	}()
	return j
}

// countActions adds the action counts of a replayed trace to the report's (the replay counts them as it sizes
// itself, a pass over the trace this would otherwise make again).
func (a *analysis) countActions(t *replay.Trace) {
	if len(t.Events) == 0 {
		return
	}
	if a.part.TraceActions == nil {
		a.part.TraceActions = map[string]int{}
	}
	for code, n := range t.Actions {
		if n > 0 && snapshot.Action(code) != snapshot.ActionOther { // counted by name below
			a.part.TraceActions[snapshot.Action(code).String()] += n
		}
	}
	for name, n := range t.OtherActions {
		a.part.TraceActions[name] += n
	}
}

// judge prepares the replayed device for the detectors and gives every element the category its attribution
// chose: where the stack is missing or names only generic machinery (autograd's engine, optimizer code), the
// lifetime decides. Categories the trace itself carries (profile_plot snapshots) are kept.
func (r *devTrace) judge() *detect.Device {
	d := detect.Prepare(r.Trace.DeviceTrace(), r.a.cat)
	n := int32(len(r.Events))
	// Blocks share their attribution and a site fixes its category, so (attribution, site) decides the new
	// category and site: looked up once per pair, not once per element (a name joined per element otherwise).
	moved := map[uint64][2]int32{}
	for i := range r.Elements {
		el := &r.Elements[i]
		if r.TraceCategory(i) == "" {
			k := uint64(d.AttrIndex(i))<<32 | uint64(uint32(r.site[i]))
			to, ok := moved[k]
			if !ok {
				to = [2]int32{r.cat[i], r.site[i]}
				if c := d.Attr(i).Category; c != r.catNames[r.cat[i]] {
					to[0] = int32(r.category(c))
					to[1] = int32(r.siteIndex(r.siteName[r.site[i]], int(to[0])))
				}
				moved[k] = to
			}
			r.cat[i], r.site[i] = to[0], to[1]
		}
		if el.End == n {
			// Live at the end: the dump's views take this category for the block (analysis.blockCategory).
			if r.a.endCategory == nil {
				r.a.endCategory = map[deviceAddr]string{}
			}
			r.a.endCategory[deviceAddr{r.Device, r.Addr(i)}] = r.catNames[r.cat[i]]
		}
	}
	return d
}

// classifyAll sets every element's category and site, in the order the elements were seen. Elements without a
// category of the trace's own are classified once per stack.
func (r *devTrace) classifyAll() {
	r.cat, r.site = make([]int32, len(r.Elements)), make([]int32, len(r.Elements))
	byStack := make([][2]int32, len(r.Stacks)) // category and site + 1 per stack; 0: not classified yet
	for i := range r.Elements {
		k := r.Elements[i].Stack
		if tc := r.TraceCategory(i); tc != "" {
			cat, site := r.classify(r.Stacks[k], tc)
			r.cat[i], r.site[i] = int32(cat), int32(site)
			continue
		}
		if byStack[k][1] == 0 {
			cat, site := r.classify(r.Stacks[k], "")
			byStack[k] = [2]int32{int32(cat), int32(site) + 1}
		}
		r.cat[i], r.site[i] = byStack[k][0], byStack[k][1]-1
	}
}

// ooms adds the trace's out-of-memory events to the report, each with the memory state just before it (an oom
// event itself changes nothing) and the category of the failing request.
func (r *devTrace) ooms() {
	for _, j := range r.OOMs {
		e := &r.Events[j]
		d := r.a.cat.Stack(r.a.snap.EntryStack(e))
		o := report.OOM{Device: r.Device, EventIndex: j, RequestedBytes: e.Size, DeviceFreeBytes: r.a.snap.EntryExtra(e).DeviceFree, Category: d.Category,
			AllocatedBytes: r.Allocated[j], ReservedBytes: r.Reserved.At(j)}
		if d.Site != "" {
			o.Site = d.Site
		}
		if e.HasTime {
			o.TimeUS = e.TimeUS
		}
		r.a.part.OOMs = append(r.a.part.OOMs, o)
	}
}

// peak finds the highest live allocated memory and the live set at that point, with its iteration and phase from
// the judged device d (whose attributions are indexed by element); it also returns the live bytes per category index
// there, which order the timeline's categories.
func (r *devTrace) peak(d *detect.Device) (report.Peak, []int64) {
	p := report.Peak{Device: r.Device}
	p.EventIndex, p.Bytes = d.PeakIndex()
	if t := p.EventIndex; t >= 0 && r.Events[t].HasTime {
		p.TimeUS = r.Events[t].TimeUS
	} else if t < 0 && r.Events[0].HasTime {
		p.TimeUS = r.Events[0].TimeUS
	}
	it, ph := d.Timeline().At(p.EventIndex)
	p.Iteration, p.Phase = it+1, ph.String()
	p.RequestedBytes, p.ReservedBytes = p.Bytes, r.Reserved.At(p.EventIndex)
	if p.ReservedBytes > 0 {
		p.EfficiencyPct = float64(p.Bytes) / float64(p.ReservedBytes) * 100
	}
	// The live set at the peak, in one pass: bytes and counts per category and per site, and per component with
	// the bytes the lifetime categorized from each block's attribution.
	cats, sites := make([]int64, len(r.catNames)), make([]int64, len(r.siteName))
	counts, siteCounts := make([]int, len(r.catNames)), make([]int, len(r.siteName))
	attrs := d.Attrs()
	attrBytes, attrCounts := make([]int64, len(attrs)), make([]int, len(attrs))
	for i, el := range r.Elements {
		if int(el.Start) <= p.EventIndex && p.EventIndex < int(el.End) {
			cat, site := r.cat[i], r.site[i]
			cats[cat] += el.Size
			sites[site] += el.Size
			counts[cat]++
			siteCounts[site]++
			k := d.AttrIndex(i)
			attrBytes[k] += el.Size
			attrCounts[k]++
		}
	}
	comps := map[string]*report.CategoryStat{}
	for k := range attrs {
		if attrCounts[k] == 0 {
			continue
		}
		attr := &attrs[k]
		c := comps[string(attr.Component)]
		if c == nil {
			c = &report.CategoryStat{Name: string(attr.Component)}
			comps[c.Name] = c
		}
		c.Bytes += attrBytes[k]
		c.Count += attrCounts[k]
		if attr.DecidedBy == categorize.DecidedByLifetime {
			p.LifetimeDecidedBytes += attrBytes[k]
		}
	}
	if len(comps) > 0 {
		p.Components = sortedCategories(comps)
	}
	catStats := map[string]*report.CategoryStat{}
	for i, b := range cats {
		if counts[i] > 0 {
			catStats[r.catNames[i]] = &report.CategoryStat{Name: r.catNames[i], Bytes: b, Count: counts[i]}
		}
	}
	p.Categories = sortedCategories(catStats)
	siteStats := map[int]*report.SiteStat{}
	for i, b := range sites {
		if siteCounts[i] > 0 {
			siteStats[i] = &report.SiteStat{Site: r.siteName[i], Category: r.catNames[r.siteCat[i]], Bytes: b, Count: siteCounts[i]}
		}
	}
	p.Sites = topSites(siteStats, r.a.opts.TopN)
	return p, cats
}

// sampleIndices downsamples n points to at most maxPoints, keeping the index of the largest value in each bucket
// of consecutive points (so the peak always survives). Bucket k holds points [k·bucket, (k+1)·bucket).
func sampleIndices(values []int64, maxPoints int) (idx []int, bucket int) {
	n := len(values)
	if n <= maxPoints {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out, 1
	}
	bucket = (n + maxPoints - 1) / maxPoints
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
	return out, bucket
}

// firstSample returns the first k with idx[k] ≥ j (len(idx) when none), for idx from sampleIndices with bucket:
// idx[k] lies in bucket k, so the answer is j's bucket or the next one.
func firstSample(idx []int, bucket, j int) int {
	if j <= 0 {
		return 0
	}
	k := min(j/bucket, len(idx))
	if k < len(idx) && idx[k] < j {
		k++
	}
	return k
}

// series builds the downsampled timeline with per-category stacks; peakCats are the live bytes per category at
// the peak.
func (r *devTrace) series(peakCats []int64) report.TimelineSeries {
	idx, bucket := sampleIndices(r.Allocated, r.a.opts.MaxTimelinePoints)
	ts := report.TimelineSeries{Device: r.Device, Index: idx, Allocated: make([]int64, len(idx)), Reserved: make([]int64, len(idx))}
	hasTime := r.Events[0].HasTime
	if hasTime {
		ts.TimeUS = make([]int64, len(idx))
	}
	for i, j := range idx {
		ts.Allocated[i] = r.Allocated[j]
		ts.Reserved[i] = r.Reserved.At(j)
		if hasTime {
			ts.TimeUS[i] = r.Events[j].TimeUS
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
	// An element is live at sample k when Start ≤ idx[k] < End: it adds its size from the first sample at or after
	// its start to the first at or after its end. Each category's row holds those changes, then their running sum.
	for i := range r.Elements {
		el := &r.Elements[i]
		from, to := firstSample(idx, bucket, int(el.Start)), firstSample(idx, bucket, int(el.End))
		if from >= to {
			continue
		}
		row := ts.ByCategory[pos[r.cat[i]]]
		row[from] += el.Size
		if to < len(row) {
			row[to] -= el.Size
		}
	}
	for _, row := range ts.ByCategory {
		for k := 1; k < len(row); k++ {
			row[k] += row[k-1]
		}
	}
	return ts
}
