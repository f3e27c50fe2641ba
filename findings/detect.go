package findings

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/memscan/memscan/categorize"
	"github.com/memscan/memscan/phases"
	"github.com/memscan/memscan/snapshot"
	"github.com/memscan/memscan/units"
)

// Finding is one conclusion, with the number behind it and where in the trace it was judged.
type Finding struct {
	ID       string `json:"id"`
	Severity string `json:"severity"`
	Title    string `json:"title"`
	Evidence string `json:"evidence"`
	Advice   string `json:"advice"`
	// Value is the measured number and Threshold the one it crossed, both in Unit.
	Value     float64 `json:"value"`
	Threshold float64 `json:"threshold"`
	Unit      string  `json:"unit,omitempty"`
	// Device, Event, Iteration (1-based, 0: none) and Phase say where the finding was judged.
	Device    int    `json:"device"`
	Event     int    `json:"event_index"`
	Iteration int    `json:"iteration"`
	Phase     string `json:"phase"`
	// Basis says how Value was obtained when it is a prediction: "allocator replay" or "estimate".
	Basis string `json:"basis,omitempty"`
}

// AllocatorModel replays a device's trace through a model of the caching allocator under other settings
// (PYTORCH_CUDA_ALLOC_CONF syntax) and returns the peak reserved bytes it predicts.
type AllocatorModel interface {
	PeakReserved(ctx context.Context, device int, settings string) (int64, error)
}

// Detect runs every detector over in, in a fixed order: OOM, leak, fragmentation, cache overhead, idle cache.
func Detect(ctx context.Context, in *Input) ([]Finding, error) {
	out := []Finding{}
	for _, d := range in.Devices {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		out = append(out, OOMs(in.Snapshot, d)...)
		if f, ok := Leak(d); ok {
			out = append(out, f)
		}
		frag, ok, err := Fragmentation(ctx, in.Snapshot, d, in.Model)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, frag)
		}
		if f, ok := CacheOverhead(d, ok); ok {
			out = append(out, f)
		}
		if f, ok := IdleCache(in.Snapshot, d); ok {
			out = append(out, f)
		}
	}
	return out, nil
}

// where names an event's iteration and phase, e.g. "iteration 2 backward".
func where(tl *phases.Timeline, j int) (string, int, string) {
	it, ph := tl.At(j)
	switch {
	case it >= 0:
		return fmt.Sprintf("iteration %d %s", it+1, ph), it + 1, ph.String()
	case ph != phases.None:
		return ph.String(), 0, ph.String()
	}
	return "outside any iteration", 0, ph.String()
}

// ExpandableOn reports whether the snapshot shows expandable segments already in use (allocator_settings or a
// segment's is_expandable): then they are never advised.
func ExpandableOn(s *snapshot.Snapshot) bool {
	if s.AllocatorSettings != nil && s.AllocatorSettings.ExpandableSegments {
		return true
	}
	for i := range s.Segments {
		if s.Segments[i].IsExpandable {
			return true
		}
	}
	return false
}

// excess compares the maximum reserved with the peak allocated; ok when it is beyond the thresholds.
func excess(d *Device) (peakIdx, resIdx int, peak, res int64, ok bool) {
	peakIdx, peak = d.PeakIndex()
	resIdx, res = d.MaxReservedIndex()
	ok = peak > 0 && float64(res) > CacheOverheadRatio*float64(peak) && res-peak >= CacheOverheadMinBytes
	return
}

// CacheOverhead compares the maximum reserved with the peak allocated. It says nothing at or below
// CacheOverheadRatio: what the cache holds then is what the peak needs. fragmentation tells whether the
// fragmentation finding already explains the excess (then this one only points at it).
func CacheOverhead(d *Device, fragmentation bool) (Finding, bool) {
	peakIdx, resIdx, peak, res, ok := excess(d)
	if !ok || len(d.Trace) == 0 {
		return Finding{}, false
	}
	pw, _, _ := where(d.Timeline, peakIdx)
	rw, it, ph := where(d.Timeline, resIdx)
	f := Finding{ID: "cache-overhead", Severity: SeverityInfo, Title: "Reserved memory exceeds the peak allocated",
		Value: float64(res) / float64(peak), Threshold: CacheOverheadRatio, Unit: UnitRatio,
		Device: d.Device, Event: resIdx, Iteration: it, Phase: ph,
		Evidence: fmt.Sprintf("maximum reserved %s (event %d, %s) is %.2fx the peak allocated %s (event %d, %s): %s reserved beyond what the peak needed",
			units.Bytes(res), resIdx, rw, float64(res)/float64(peak), units.Bytes(peak), peakIdx, pw, units.Bytes(res-peak)),
	}
	if fragmentation {
		f.Advice = "See the fragmentation finding: the excess is cached memory split into pieces the later requests could not use."
	} else {
		f.Advice = "The cache grew beyond the peak without fragmenting the peak itself; check the idle-cache finding, or cap the cache with PYTORCH_CUDA_ALLOC_CONF=garbage_collection_threshold:0.8 if other processes share the device."
	}
	return f, true
}

// Fragmentation judges what the cache reserved beyond the peak allocated: the cudaMalloc that raised reserved to
// its maximum, the cache at the allocated peak, the large-pool cudaMallocs made while the cache already held
// enough free bytes in pieces too small, and what expandable segments would save (from model when given, else an
// estimate), never more than reserved beyond the allocated peak. Silent when expandable segments are already on,
// or the excess is within CacheOverheadRatio.
func Fragmentation(ctx context.Context, s *snapshot.Snapshot, d *Device, model AllocatorModel) (Finding, bool, error) {
	peakIdx, resIdx, peak, res, ok := excess(d)
	if !ok || ExpandableOn(s) || len(d.Trace) == 0 {
		return Finding{}, false, nil
	}
	segs := d.segments(s)
	withExp, basis, notUsed, err := expandablePeak(ctx, d, segs, peakIdx, model)
	if err != nil {
		return Finding{}, false, err
	}
	// What a user can recover is bounded by what the cache held beyond the allocated peak: no setting reserves
	// less than the peak allocated.
	withExp = max(withExp, peak)
	saving := res - withExp
	if saving < FragmentationMinSavingBytes {
		return Finding{}, false, nil
	}
	rw, it, ph := where(d.Timeline, resIdx)
	pw, _, _ := where(d.Timeline, peakIdx)
	var why strings.Builder
	fmt.Fprintf(&why, "reserved reached its maximum of %s at event %d (%s)", units.Bytes(res), resIdx, rw)
	frag := d.fragmentingMallocs(segs, resIdx)
	if c, ok := d.cudaMallocAt(resIdx); ok {
		if n := len(frag); n > 0 && frag[n-1].event == resIdx {
			c = frag[n-1]
		} else {
			one := []cudaMalloc{c}
			d.categorise(one)
			c = one[0]
		}
		fmt.Fprintf(&why, ": %s", c.describe())
	}
	pk := d.cacheAt(segs, peakIdx)
	fmt.Fprintf(&why, ". The allocated peak was %s (event %d, %s), %s below it; then %s (%s reserved) held %s free, the largest free range %s",
		units.Bytes(peak), peakIdx, pw, units.Bytes(res-peak), units.Plural(pk.segments, "segment", "segments"), units.Bytes(pk.reserved),
		units.Bytes(pk.free), units.Bytes(pk.largestFree))
	if n := len(frag); n > 0 && frag[n-1].event != resIdx {
		fmt.Fprintf(&why, ". The last large-pool cudaMalloc made while the cache held enough free memory, but in no range large enough, was at event %d: %s",
			frag[n-1].event, frag[n-1].describe())
	}
	fmt.Fprintf(&why, ". With expandable segments reserved would peak at about %s (%s), saving %s of the %s", units.Bytes(withExp), basis, units.Bytes(saving), units.Bytes(res-peak))
	if notUsed != "" {
		fmt.Fprintf(&why, ". The allocator replay was not used: %s", notUsed)
	}
	return Finding{ID: "fragmentation", Severity: SeverityWarning, Title: "Fragmented cache: reserved grows beyond the peak",
		Value: float64(saving), Threshold: float64(FragmentationMinSavingBytes), Unit: UnitBytes, Basis: basis,
		Device: d.Device, Event: resIdx, Iteration: it, Phase: ph, Evidence: why.String(),
		Advice: fragmentationAdvice(frag, saving, basis),
	}, true, nil
}

// expandablePeak is the peak reserved under expandable segments and its basis: model's replay when it has one,
// else an estimate, with why the replay was not used.
func expandablePeak(ctx context.Context, d *Device, segs []segment, peakIdx int, model AllocatorModel) (int64, string, string, error) {
	var notUsed string
	if model != nil {
		v, err := model.PeakReserved(ctx, d.Device, "expandable_segments:True")
		switch {
		case ctx.Err() != nil:
			return 0, "", "", ctx.Err()
		case err == nil:
			return v, "allocator replay", "", nil
		default:
			// A replay the model could not follow falls back to the estimate, saying why.
			notUsed = err.Error()
		}
	}
	// Expandable segments map large blocks page by page into one growing range per stream, so at the peak they
	// reserve the live large blocks rounded to 2 MiB pages, and the small pool as before.
	pk := d.cacheAt(segs, peakIdx)
	withExp := (pk.largeLiveRounded+smallSegment-1)/smallSegment*smallSegment + pk.smallPoolBytes
	return withExp, "estimate", notUsed, nil
}

// cudaMalloc is one segment the trace created, the request it was made for and the cache just before it.
type cudaMalloc struct {
	event      int
	size       int64
	pool       string // "small" (2 MiB segments for requests up to 1 MiB) or "large"
	allocEvent int    // the alloc at the segment's base, −1 when the trace never shows it
	request    int64  // its bytes
	category   string // its category, once categorize has named it
	freeBefore int64  // reserved minus allocated before the cudaMalloc
	// largestBefore is the largest free range then; known only for the fragmenting ones.
	largestBefore int64
	knownLargest  bool
	// pinned is what the live blocks in segments holding free memory then were, by category: what kept the free
	// memory in pieces.
	pinned []Share
}

// cudaMallocAt returns the segment_alloc (or segment_map) at event j and the request it served.
func (d *Device) cudaMallocAt(j int) (cudaMalloc, bool) {
	if j < 0 || j >= len(d.Trace) {
		return cudaMalloc{}, false
	}
	e := &d.Trace[j]
	if e.Action != snapshot.ActionSegmentAlloc && e.Action != snapshot.ActionSegmentMap {
		return cudaMalloc{}, false
	}
	c := cudaMalloc{event: j, size: e.Size, pool: "large", allocEvent: -1, freeBefore: d.reservedAt(j-1) - d.allocatedAt(j-1)}
	if e.Size <= smallSegment {
		c.pool = "small"
	}
	// PyTorch records the request right after the cudaMalloc made for it; a few events of slack cover other
	// streams' records in between without reading the rest of a long trace.
	for k := j + 1; k < len(d.Trace) && k <= j+64; k++ {
		if a := &d.Trace[k]; a.Action == snapshot.ActionAlloc && a.Addr == e.Addr {
			c.allocEvent, c.request = k, a.Size
			break
		}
	}
	return c, true
}

// categorise names the category of each cudaMalloc's request, in one pass over the blocks.
func (d *Device) categorise(cs []cudaMalloc) {
	at := map[int]int{}
	for i := range cs {
		if cs[i].allocEvent >= 0 {
			at[cs[i].allocEvent] = i
		}
	}
	for i := range d.Blocks {
		if k, ok := at[d.Blocks[i].Event]; ok && d.Blocks[i].Attr != nil {
			cs[k].category = d.Blocks[i].Attr.Category
		}
	}
}

// describe says what the cudaMalloc was for, e.g. "a cudaMalloc of 1.0 GiB for the large pool, for a 1.0 GiB
// KV Cache request, while the cache held 1.7 GiB free".
func (c cudaMalloc) describe() string {
	s := fmt.Sprintf("a cudaMalloc of %s for the %s pool", units.Bytes(c.size), c.pool)
	if c.request > 0 {
		s += fmt.Sprintf(", for a %s", units.Bytes(c.request))
		if c.category != "" {
			s += " " + c.category
		}
		s += " request"
	}
	s += fmt.Sprintf(", made while the cache held %s free", units.Bytes(c.freeBefore))
	if c.knownLargest {
		s += fmt.Sprintf(", the largest free range %s", units.Bytes(c.largestBefore))
	}
	if len(c.pinned) > 0 {
		s += "; the segments holding that free memory also held " + shareList(c.pinned, 4)
	}
	return s
}

// fragmentMaxExamined bounds the cudaMallocs whose cache is rebuilt (each rebuild reads every block): the last ones
// before the maximum are those that set it.
const fragmentMaxExamined = 16

// fragmentingMallocs are the last large-pool cudaMallocs up to event last (at most fragmentMaxExamined, oldest
// first) made while the cache already held at least the request free, but in no range large enough: the segments
// fragmentation cost.
func (d *Device) fragmentingMallocs(segs []segment, last int) []cudaMalloc {
	var out []cudaMalloc
	for j := min(last, len(d.Trace)-1); j >= 0 && len(out) < fragmentMaxExamined; j-- {
		c, ok := d.cudaMallocAt(j)
		if !ok || c.pool != "large" || c.request <= 0 || c.freeBefore < c.request {
			continue
		}
		used := d.usedAt(segs, j-1)
		if before := cacheOf(segs, j-1, used); before.largestFree < c.request {
			c.largestBefore, c.knownLargest = before.largestFree, true
			c.pinned = pinnedBy(segs, used)
			out = append(out, c)
		}
	}
	slices.Reverse(out)
	d.categorise(out)
	return out
}

// fragmentationAdvice fits the fix to what split the cache: a KV cache that grows by concatenation leaves its
// blocks among the transients' free memory, and preallocating it (once, for the longest sequence) keeps them out;
// otherwise the pieces come from shapes that change, which fixed shapes avoid. saving is what expandable segments
// would save, and basis how that was obtained.
func fragmentationAdvice(frag []cudaMalloc, saving int64, basis string) string {
	by := "by estimate"
	if basis == "allocator replay" {
		by = "in the allocator replay"
	}
	exp := fmt.Sprintf("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, which saves %s %s: segments then grow in place, so blocks freed by one shape serve the next",
		units.Bytes(saving), by)
	kv := false
	for _, c := range frag {
		kv = kv || slices.ContainsFunc(c.pinned, func(s Share) bool { return s.Name == categorize.KVCache })
	}
	if kv {
		return "Preallocate the KV cache for the longest sequence (a static cache, e.g. generate(..., cache_implementation=\"static\") in transformers): a dynamic cache grows by torch.cat at every step, leaving its blocks among the free memory larger requests need. Or set " + exp + "."
	}
	return "Set " + exp + "; or keep shapes fixed (pad or bucket sequence lengths)."
}

// IdleCache finds segments still reserved at the end whose last use was in a one-off phase (the setup, or work
// outside the training iterations such as evaluation) and that at least IdleCacheMinIterations whole iterations
// after it never touched: memory that no later peak reuses, the only case where torch.cuda.empty_cache() helps.
// Memory last used inside a training iteration is presumed needed by the next iteration of that shape. Silent
// when reserved never exceeded the peak by CacheOverheadRatio.
func IdleCache(s *snapshot.Snapshot, d *Device) (Finding, bool) {
	if _, _, _, _, ok := excess(d); !ok {
		return Finding{}, false
	}
	segs := d.segments(s)
	lastUse := make([]int, len(segs))
	for i := range lastUse {
		lastUse[i] = segs[i].start
	}
	n := len(d.Trace)
	for i := range d.Blocks {
		b := &d.Blocks[i]
		if k := segmentOf(segs, b.Addr, max(b.Start, 0)); k >= 0 {
			lastUse[k] = max(lastUse[k], min(b.End, n))
		}
	}
	var idle int64
	var count, from int
	for k := range segs {
		if segs[k].end < n {
			continue
		}
		it, ph := d.Timeline.At(lastUse[k])
		if it >= 0 || ph == phases.Setup && lastUse[k] < 0 {
			continue
		}
		after := 0
		for _, x := range d.Timeline.Iterations {
			if x.Complete && x.Span.Start > lastUse[k] {
				after++
			}
		}
		if after >= IdleCacheMinIterations {
			idle += segs[k].size
			count++
			from = max(from, lastUse[k])
		}
	}
	if idle < IdleCacheMinBytes {
		return Finding{}, false
	}
	w, _, ph := where(d.Timeline, from)
	return Finding{ID: "idle-cache", Severity: SeverityInfo, Title: "Cached segments no later peak reuses",
		Value: float64(idle), Threshold: float64(IdleCacheMinBytes), Unit: UnitBytes, Device: d.Device, Event: from,
		Phase: ph,
		Evidence: fmt.Sprintf("%s (%s) last used in the %s, up to event %d, stayed reserved and unused through every training iteration after it",
			units.Plural(count, "segment", "segments"), units.Bytes(idle), w, from),
		Advice: "Call torch.cuda.empty_cache() once after that one-off phase (checkpoint loading, evaluation), not every step.",
	}, true
}

// LeakSite is one site whose live bytes grew at the end of every iteration after the first.
type LeakSite struct {
	Site     string `json:"site"`
	Category string `json:"category"`
	// Iterations is how many complete iterations were compared; FirstBytes the site's live bytes at the end of
	// iteration 1 (after warm-up), LastBytes at the end of the last one, PerIteration the mean growth.
	Iterations   int   `json:"iterations"`
	FirstBytes   int64 `json:"first_bytes"`
	LastBytes    int64 `json:"last_bytes"`
	PerIteration int64 `json:"per_iteration_bytes"`
}

// iterationEnds are the last events of the complete iterations.
func iterationEnds(tl *phases.Timeline) []int {
	var ends []int
	for _, it := range tl.Iterations {
		if it.Complete {
			ends = append(ends, it.Span.End-1)
		}
	}
	return ends
}

// Leaks returns the sites whose live bytes at the end of every iteration after the first exceed the previous
// iteration's by at least LeakMinGrowthBytes, fastest-growing first; nil with fewer than LeakMinIterations
// complete iterations.
func Leaks(d *Device) []LeakSite {
	if !d.leaksDone {
		d.leakSites, d.leaksDone = leaks(d), true
	}
	return d.leakSites
}

// leakMaxSamples bounds the iteration ends compared per site: a long run is sampled evenly, each interval then
// spanning several iterations (and needing proportionally more growth).
const leakMaxSamples = 64

func leaks(d *Device) []LeakSite {
	all := iterationEnds(d.Timeline)
	if len(all) < LeakMinIterations {
		return nil
	}
	// idx[k] is the iteration (0-based among the complete ones) whose end is sample k.
	idx := make([]int, 0, min(len(all), leakMaxSamples))
	for k := range min(len(all), leakMaxSamples) {
		idx = append(idx, k*(len(all)-1)/(max(min(len(all), leakMaxSamples)-1, 1)))
	}
	ends := make([]int, len(idx))
	for k, i := range idx {
		ends[k] = all[i]
	}
	// One sweep over the blocks sorted by start and by end gives every site's live bytes at each iteration end.
	// Blocks share a few thousand attributions: each is named (siteKey joins strings) once, not once per block.
	keys, byAttr := map[string]int{}, map[*categorize.Attribution]int{}
	var names, cats []string
	site := make([]int, len(d.Blocks))
	for i := range d.Blocks {
		j, ok := byAttr[d.Blocks[i].Attr]
		if !ok {
			k := siteKey(d.Blocks[i].Attr)
			if j, ok = keys[k]; !ok {
				j = len(names)
				keys[k] = j
				names = append(names, k)
				cats = append(cats, "")
			}
			byAttr[d.Blocks[i].Attr] = j
		}
		// The site's category is its latest block's: a leaking site's first block may predate the first
		// iteration, where its lifetime alone would call it a weight.
		cats[j] = d.Blocks[i].Attr.Category
		site[i] = j
	}
	byStart, byEnd := make([]int, len(d.Blocks)), make([]int, len(d.Blocks))
	for i := range byStart {
		byStart[i], byEnd[i] = i, i
	}
	slices.SortFunc(byStart, func(x, y int) int { return d.Blocks[x].Start - d.Blocks[y].Start })
	slices.SortFunc(byEnd, func(x, y int) int { return d.Blocks[x].End - d.Blocks[y].End })
	live := make([]int64, len(names))
	series := make([][]int64, len(names))
	for i := range series {
		series[i] = make([]int64, len(ends))
	}
	si, ei := 0, 0
	for k, e := range ends {
		for ; si < len(byStart) && d.Blocks[byStart[si]].Start <= e; si++ {
			live[site[byStart[si]]] += d.Blocks[byStart[si]].Size
		}
		for ; ei < len(byEnd) && d.Blocks[byEnd[ei]].End <= e; ei++ {
			live[site[byEnd[ei]]] -= d.Blocks[byEnd[ei]].Size
		}
		for j := range live {
			series[j][k] = live[j]
		}
	}
	var out []LeakSite
	for j, v := range series {
		grows := true
		for k := 1; k < len(v); k++ {
			if v[k]-v[k-1] < LeakMinGrowthBytes*int64(idx[k]-idx[k-1]) {
				grows = false
				break
			}
		}
		if grows {
			out = append(out, LeakSite{Site: names[j], Category: cats[j], Iterations: len(all), FirstBytes: v[0],
				LastBytes: v[len(v)-1], PerIteration: (v[len(v)-1] - v[0]) / int64(idx[len(idx)-1]-idx[0])})
		}
	}
	slices.SortFunc(out, func(a, b LeakSite) int {
		return cmp.Or(cmp.Compare(b.PerIteration, a.PerIteration), strings.Compare(a.Site, b.Site))
	})
	return out
}

// Leak separates warm-up from growth: iteration 1 creates what training keeps (optimizer state, lazy buffers,
// workspaces); a leak is a site whose live bytes at the end of every later iteration exceed the previous
// iteration's by at least LeakMinGrowthBytes. The finding names the fastest-growing site.
func Leak(d *Device) (Finding, bool) {
	sites := Leaks(d)
	if len(sites) == 0 {
		return Finding{}, false
	}
	l := sites[0]
	ends := iterationEnds(d.Timeline)
	// Warm-up: what iteration 1 created and every later iteration kept, the leaking sites aside.
	leaking := map[string]bool{}
	for _, s := range sites {
		leaking[s.Site] = true
	}
	var warm int64
	first := d.Timeline.Iterations[0].Span
	for i := range d.Blocks {
		b := &d.Blocks[i]
		if first.Contains(b.Start) && b.End > ends[len(ends)-1] && !leaking[siteKey(b.Attr)] {
			warm += b.Size
		}
	}
	// A site without a stack is named "(no stack: category, lifetime)" already; a second parenthesis would nest.
	name := l.Site + " (" + l.Category + ")"
	if strings.HasPrefix(l.Site, "(") {
		name = "memory allocated without a stack " + l.Site
	}
	ev := fmt.Sprintf("%s holds %s more at the end of each iteration: %s after iteration 1, %s after iteration %d. Iteration 1's warm-up is not growth: %s created then and kept, such as optimizer state",
		name, units.Bytes(l.PerIteration), units.Bytes(l.FirstBytes), units.Bytes(l.LastBytes), l.Iterations, units.Bytes(warm))
	if len(sites) > 1 {
		ev += fmt.Sprintf(". %d sites grow; this one fastest", len(sites))
	}
	return Finding{ID: "leak", Severity: SeverityWarning, Title: "Memory grows every iteration after warm-up",
		Value: float64(l.PerIteration), Threshold: float64(LeakMinGrowthBytes), Unit: UnitBytes, Device: d.Device,
		Event: ends[len(ends)-1], Iteration: len(ends), Phase: "-", Evidence: ev,
		Advice: "Something keeps a reference to tensors from this site across steps: a list they are appended to, an attribute, a metric accumulated without .item()/.detach(), or outputs kept with their graph.",
	}, true
}

// OOMs explains each out-of-memory event of the device: what was live at the failing request by phase and
// category, and how far beyond the device the step would have gone, extrapolated from the layers completed.
func OOMs(s *snapshot.Snapshot, d *Device) []Finding {
	var out []Finding
	for j := range d.Trace {
		e := &d.Trace[j]
		if e.Action != snapshot.ActionOOM {
			continue
		}
		x := ExplainOOM(d, j)
		w, it, ph := where(d.Timeline, j)
		var ev strings.Builder
		fmt.Fprintf(&ev, "a request of %s failed in %s (event %d) with %s allocated, %s reserved and %s free on the device. Live by phase: %s; by category: %s",
			units.PyTorchBytes(e.Size), w, j, units.Bytes(x.Live.Bytes), units.Bytes(x.ReservedBytes), units.PyTorchBytes(e.DeviceFree),
			shareList(x.Live.ByPhase, 4), shareList(x.Live.ByCategory, 4))
		if x.Layers > 0 && x.PerLayerBytes > 0 {
			fmt.Fprintf(&ev, ". %s", x.Projection())
		}
		advice := "Cut what grows with the layers: activation checkpointing, a smaller micro-batch or sequence length, or sharding (FSDP/ZeRO) for weights and optimizer state."
		if cached := x.ReservedBytes - x.Live.Bytes; cached >= e.Size {
			fmt.Fprintf(&ev, ". The cache held %s free, more than the request, but in pieces too small", units.Bytes(cached))
			if !ExpandableOn(s) {
				advice = "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True so the cached pieces can serve the request; " + advice
			}
		}
		out = append(out, Finding{ID: "oom", Severity: SeverityCritical, Title: "Out of memory",
			Value: float64(x.ProjectedBytes - x.CapacityBytes), Unit: UnitBytes, Device: d.Device, Event: j, Iteration: it,
			Phase: ph, Evidence: ev.String(), Advice: advice, Basis: "layer extrapolation"})
	}
	return out
}

func shareList(ss []Share, n int) string {
	var parts []string
	for i, s := range ss {
		if i == n {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s", s.Name, units.Bytes(s.Bytes)))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// OOMExplained is what was live at a failing request and where the step was heading.
type OOMExplained struct {
	Event          int     `json:"event_index"`
	RequestedBytes int64   `json:"requested_bytes"`
	ReservedBytes  int64   `json:"reserved_bytes"`
	DeviceFree     int64   `json:"device_free_bytes"`
	Live           LiveSet `json:"live"`
	// Layers is the model's repeated-layer count (from the setup's repeated allocation stacks), LayersDone how
	// many had passed the failing allocation's code point; 0 when the trace does not show it.
	Layers, LayersDone int
	PerLayerBytes      int64 `json:"per_layer_bytes"`
	// ProjectedBytes is the allocated memory the forward would have reached at the same point of the last layer;
	// CapacityBytes what PyTorch could have had (reserved plus the device's free memory).
	ProjectedBytes int64 `json:"projected_bytes"`
	CapacityBytes  int64 `json:"capacity_bytes"`
}

// Projection says where the step was heading: how many layers had passed the failing point, what each added, and
// the allocated memory the forward would hold at the same point of the last layer (the memory already live
// included), against what the device offered. Empty when the trace does not show the layers.
func (x OOMExplained) Projection() string {
	if x.Layers == 0 || x.PerLayerBytes == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d layers had passed the failing point, adding %s each: by the last layer the forward alone would hold about %s allocated, %s beyond the %s the device offered",
		x.LayersDone, x.Layers, units.Bytes(x.PerLayerBytes), units.Bytes(x.ProjectedBytes), units.Bytes(x.ProjectedBytes-x.CapacityBytes), units.Bytes(x.CapacityBytes))
}

// stackKey identifies a code path by its frames (two lists with the same frames are the same path).
func stackKey(st *snapshot.Stack) string {
	if st == nil {
		return ""
	}
	var b strings.Builder
	for _, f := range st.Frames {
		fmt.Fprintf(&b, "%s:%d:%s;", f.Filename, f.Line, f.Name)
	}
	return b.String()
}

// ExplainOOM breaks down the live memory at the oom event j and extrapolates the step: the model's layer count is
// the most frequent repetition count among the setup's allocation stacks (every layer allocates its parameters
// from the same lines); the failing request's stack occurred once per completed layer, and the growth of
// allocated memory between those occurrences is the per-layer cost.
func ExplainOOM(d *Device, j int) OOMExplained {
	e := &d.Trace[j]
	x := OOMExplained{Event: j, RequestedBytes: e.Size, DeviceFree: e.DeviceFree, ReservedBytes: d.reservedAt(j - 1)}
	x.Live = d.LiveAt(j-1, 10)
	x.CapacityBytes = x.ReservedBytes + e.DeviceFree
	x.ProjectedBytes = x.Live.Bytes + e.Size
	counts := map[string]int{}
	for i := 0; i < len(d.Trace) && i < j; i++ {
		if _, ph := d.Timeline.At(i); ph == phases.Setup && d.Trace[i].Action == snapshot.ActionAlloc {
			counts[stackKey(d.Trace[i].Stack)]++
		}
	}
	byCount := map[int]int{}
	for k, c := range counts {
		if k != "" && c >= 2 {
			byCount[c]++
		}
	}
	for c, n := range byCount {
		if n > byCount[x.Layers] || n == byCount[x.Layers] && c > x.Layers {
			x.Layers = c
		}
	}
	key := stackKey(e.Stack)
	if x.Layers == 0 || key == "" {
		return x
	}
	it, _ := d.Timeline.At(j)
	from := 0
	if it >= 0 {
		from = d.Timeline.Iterations[it].Span.Start
	}
	var seen []int
	for i := from; i < j; i++ {
		if d.Trace[i].Action == snapshot.ActionAlloc && stackKey(d.Trace[i].Stack) == key {
			seen = append(seen, i)
		}
	}
	x.LayersDone = len(seen)
	if len(seen) < OOMExtrapolateMinLayers || len(seen) >= x.Layers {
		return x
	}
	x.PerLayerBytes = (d.allocatedAt(seen[len(seen)-1]-1) - d.allocatedAt(seen[0]-1)) / int64(len(seen)-1)
	x.ProjectedBytes += int64(x.Layers-len(seen)-1) * x.PerLayerBytes
	return x
}
