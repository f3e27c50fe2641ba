package detect

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/phases"
	"github.com/memscan/memscan/snapshot"
)

// AllocatorModel replays a device's trace through a model of the caching allocator under other settings
// (PYTORCH_CUDA_ALLOC_CONF syntax) and returns the peak reserved bytes it predicts, beside those of the recorded
// settings: a saving is the difference of the two replays, the figure the report's replay section shows.
type AllocatorModel interface {
	PeakReserved(ctx context.Context, device int, settings string) (Replayed, error)
}

// PendingModel is an AllocatorModel that replays in the background: Pending reports whether an answer would wait
// for it. The detectors then do what does not need the answer first, on a core the replay leaves idle.
type PendingModel interface {
	AllocatorModel
	Pending() bool
}

// pending reports whether asking model would wait.
func pending(model AllocatorModel) bool {
	p, ok := model.(PendingModel)
	return ok && p.Pending()
}

// Replayed is one what-if of an AllocatorModel: the peak reserved bytes under the recorded settings (Baseline)
// and under the asked ones (Peak); Partial says why the replay could not follow the whole trace, "" when it did.
type Replayed struct {
	Baseline, Peak int64
	Partial        string
}

// Detect runs every detector over in, in a fixed order: OOM, leak, fragmentation, cache overhead, idle cache, loss
// and logits. With more than one device, each finding names its device in its evidence.
func Detect(ctx context.Context, in *Input) ([]findings.Finding, error) {
	// Each device's detectors read the snapshot and that device alone: the devices are judged at once, as many
	// as there are cores, and their findings kept in device order.
	per := make([][]findings.Finding, len(in.Devices))
	errs := make([]error, len(in.Devices)) // the first in device order is returned, whichever failed first
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, d := range in.Devices {
		g.Go(func() error {
			per[i], errs[i] = detectDevice(ctx, in, d)
			return nil
		})
	}
	g.Wait()
	out := []findings.Finding{}
	for i := range in.Devices {
		if errs[i] != nil {
			return nil, errs[i]
		}
		for _, f := range per[i] {
			if len(in.Devices) > 1 {
				f = findings.OnDevice(f)
			}
			out = append(out, f)
		}
	}
	return out, nil
}

// detectDevice runs every detector over device d of in.
func detectDevice(ctx context.Context, in *Input, d *Device) ([]findings.Finding, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []findings.Finding
	out = append(out, OOMs(in.Snapshot, d)...)
	if f, ok := Leak(d); ok {
		out = append(out, f)
	}
	// Fragmentation asks the allocator model, which may still be replaying: the detectors that do not depend on
	// it are judged first, their findings kept in the fixed order.
	idle, idleOK := IdleCache(in.Snapshot, d)
	loss, lossOK := LossLogits(d)
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
	if idleOK {
		out = append(out, idle)
	}
	if lossOK {
		out = append(out, loss)
	}
	// The detectors above are the block places' only readers: 12 bytes an element, not kept resident beside
	// the next device's detectors and the caller's later work.
	d.addrs, d.seg = nil, nil
	return out, nil
}

// at says where event j of device d lies: its iteration and phase, worded e.g. "iteration 2 backward".
func at(d *Device, j int) findings.At {
	it, ph := d.Timeline().At(j)
	w := findings.At{Device: d.Device, Event: j, Phase: ph.String()}
	switch {
	case it >= 0:
		w.Text, w.Iteration = fmt.Sprintf("iteration %d %s", it+1, ph), it+1
	case ph != phases.None:
		w.Text = ph.String()
	default:
		w.Text = "outside any iteration"
	}
	return w
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
	ok = peak > 0 && float64(res) > findings.CacheOverheadRatio*float64(peak) && res-peak >= findings.CacheOverheadMinBytes
	return
}

// CacheOverhead compares the maximum reserved with the peak allocated. It says nothing at or below
// CacheOverheadRatio: what the cache holds then is what the peak needs. fragmentation tells whether the
// fragmentation finding already explains the excess (then this one only points at it).
func CacheOverhead(d *Device, fragmentation bool) (findings.Finding, bool) {
	peakIdx, resIdx, peak, res, ok := excess(d)
	if !ok || len(d.Trace) == 0 {
		return findings.Finding{}, false
	}
	return findings.NewCacheOverhead(at(d, resIdx), res, at(d, peakIdx), peak, fragmentation), true
}

// Fragmentation judges what the cache reserved beyond the peak allocated: the cudaMalloc that raised reserved to
// its maximum, the cache at the allocated peak, the large-pool cudaMallocs made while the cache already held
// enough free bytes in pieces too small, and what expandable segments would save (from model when given, else an
// estimate), never more than reserved beyond the allocated peak. Silent when expandable segments are already on,
// or the excess is within CacheOverheadRatio.
func Fragmentation(ctx context.Context, s *snapshot.Snapshot, d *Device, model AllocatorModel) (findings.Finding, bool, error) {
	peakIdx, resIdx, peak, res, ok := excess(d)
	if !ok || ExpandableOn(s) || len(d.Trace) == 0 {
		return findings.Finding{}, false, nil
	}
	segs := d.segments(s)
	f := findings.FragmentationFacts{MaxReserved: at(d, resIdx), Reserved: res, Peak: at(d, peakIdx), Allocated: peak}
	// The fragmenting cudaMallocs do not depend on the model's answer: found while it is still replaying, they
	// take a core it leaves idle; found after it, only when the saving makes a finding.
	var frag []cudaMalloc
	early := model != nil && pending(model)
	if early {
		frag = d.fragmentingMallocs(segs, resIdx)
	}
	if err := expandablePeak(ctx, d, segs, peakIdx, model, &f); err != nil {
		return findings.Finding{}, false, err
	}
	if f.Saving() < findings.FragmentationMinSavingBytes {
		return findings.Finding{}, false, nil
	}
	if !early {
		frag = d.fragmentingMallocs(segs, resIdx)
	}
	if c, ok := d.cudaMallocAt(resIdx); ok {
		if n := len(frag); n > 0 && frag[n-1].Event == resIdx {
			c = frag[n-1]
		} else {
			one := []cudaMalloc{c}
			d.categorise(one)
			c = one[0]
		}
		f.RaisedBy = &c.Malloc
	}
	pk := d.cacheAt(segs, peakIdx)
	f.AtPeak = findings.CacheState{Segments: pk.segments, Reserved: pk.reserved, Free: pk.free, LargestFree: pk.largestFree}
	if n := len(frag); n > 0 && frag[n-1].Event != resIdx {
		f.LastFragmenting = &frag[n-1].Malloc
	}
	for _, c := range frag {
		f.KVCache = f.KVCache || slices.ContainsFunc(c.Pinned, func(s findings.Share) bool { return s.Name == categorize.KVCache })
	}
	return findings.NewFragmentation(f), true, nil
}

// expandablePeak fills in what expandable segments would reserve: model's replay whenever it has one (partial or
// not: the report's replay section shows the same figure), else an estimate, with why the replay was not used.
func expandablePeak(ctx context.Context, d *Device, segs []segment, peakIdx int, model AllocatorModel, f *findings.FragmentationFacts) error {
	if model != nil {
		v, err := model.PeakReserved(ctx, d.Device, "expandable_segments:True")
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err == nil:
			f.WithExpandable, f.Replayed, f.Basis, f.Partial = v.Peak, v.Baseline, findings.BasisReplay, v.Partial
			return nil
		default:
			// A replay the model could not run falls back to the estimate, saying why.
			f.NotUsed = err.Error()
		}
	}
	// Expandable segments map large blocks page by page into one growing range per stream, so at the peak they
	// reserve the live large blocks rounded to 2 MiB pages, and the small pool as before. What a user can recover
	// is bounded by what the cache held beyond the allocated peak: no setting reserves less than that.
	pk := d.cacheAt(segs, peakIdx)
	withExp := (pk.largeLiveRounded+smallSegment-1)/smallSegment*smallSegment + pk.smallPoolBytes
	f.WithExpandable, f.Basis = max(withExp, f.Allocated), findings.BasisEstimate
	return nil
}

// cudaMalloc is one segment the trace created, with the alloc at its base (−1 when the trace never shows it).
type cudaMalloc struct {
	findings.Malloc
	allocEvent int
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
	c := cudaMalloc{Malloc: findings.Malloc{Event: j, Size: e.Size, Pool: "large", FreeBefore: d.reservedAt(j-1) - d.allocatedAt(j-1)}, allocEvent: -1}
	if e.Size <= smallSegment {
		c.Pool = "small"
	}
	// PyTorch records the request right after the cudaMalloc made for it; a few events of slack cover other
	// streams' records in between without reading the rest of a long trace.
	for k := j + 1; k < len(d.Trace) && k <= j+64; k++ {
		if a := &d.Trace[k]; a.Action == snapshot.ActionAlloc && a.Addr == e.Addr {
			c.allocEvent, c.Request = k, a.Size
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
	for i := range d.Elements {
		if o := d.Elements[i].Origin; o >= 0 {
			if k, ok := at[int(o)]; ok {
				cs[k].Category = d.Attr(i).Category
			}
		}
	}
}

// fragmentMaxExamined bounds the fragmenting cudaMallocs found: the last ones before the maximum are those that set
// it. fragmentMaxRebuilt bounds the cudaMallocs whose cache is rebuilt to find them (each rebuild reads every
// block): a trace whose cache keeps large free ranges while it grows (a leak) has thousands of cudaMallocs that
// fragmentation did not cause, and reading every block for each of them made the detector quadratic. The real
// traces at hand rebuild at most 17.
const (
	fragmentMaxExamined = 16
	fragmentMaxRebuilt  = 4 * fragmentMaxExamined
)

// fragmentingMallocs are the last large-pool cudaMallocs up to event last (at most fragmentMaxExamined, oldest
// first, among the last fragmentMaxRebuilt that found the cache holding the request) made while the cache already
// held at least the request free, but in no range large enough: the segments fragmentation cost. segs are the
// device's segments (Device.segments), whose starts are its cudaMallocs: only those events are read, latest first,
// not every event before last.
func (d *Device) fragmentingMallocs(segs []segment, last int) []cudaMalloc {
	last = min(last, len(d.Trace)-1)
	var made []int
	for i := range segs {
		if j := segs[i].start; j >= 0 && j <= last {
			made = append(made, j)
		}
	}
	slices.Sort(made)
	var out []cudaMalloc
	var sweep *cacheSweep
	rebuilt := 0
	for k := len(made) - 1; k >= 0 && len(out) < fragmentMaxExamined && rebuilt < fragmentMaxRebuilt; k-- {
		j := made[k]
		c, ok := d.cudaMallocAt(j)
		if !ok || c.Pool != "large" || c.Request <= 0 || c.FreeBefore < c.Request {
			continue
		}
		rebuilt++
		if sweep == nil {
			sweep = newCacheSweep(d, segs)
		}
		if largest := sweep.largestFreeAfter(j - 1); largest < c.Request {
			c.LargestBefore, c.KnownLargest = largest, true
			c.Pinned = d.pinnedBy(segs, sweep.used())
			out = append(out, c)
		}
	}
	slices.Reverse(out)
	d.categorise(out)
	return out
}

// IdleCache finds segments still reserved at the end whose last use was in a one-off phase (the setup, or work
// outside the training iterations such as evaluation) and that at least IdleCacheMinIterations whole iterations
// after it never touched: memory that no later peak reuses, the only case where torch.cuda.empty_cache() helps.
// Memory last used inside a training iteration is presumed needed by the next iteration of that shape. Silent
// when reserved never exceeded the peak by CacheOverheadRatio.
func IdleCache(s *snapshot.Snapshot, d *Device) (findings.Finding, bool) {
	if _, _, _, _, ok := excess(d); !ok {
		return findings.Finding{}, false
	}
	segs := d.segments(s)
	lastUse := make([]int, len(segs))
	for i := range lastUse {
		lastUse[i] = segs[i].start
	}
	n := len(d.Trace)
	_, seg := d.blockPlaces(segs)
	for i := range d.Elements {
		if k := seg[i]; k >= 0 {
			lastUse[k] = max(lastUse[k], min(int(d.Elements[i].End), n))
		}
	}
	var idle int64
	var count, from int
	for k := range segs {
		if segs[k].end < n {
			continue
		}
		it, ph := d.Timeline().At(lastUse[k])
		if it >= 0 || ph == phases.Setup && lastUse[k] < 0 {
			continue
		}
		after := 0
		for _, x := range d.Timeline().Iterations {
			if x.Complete && x.Span.Start > lastUse[k] {
				after++
			}
		}
		if after >= findings.IdleCacheMinIterations {
			idle += segs[k].size
			count++
			from = max(from, lastUse[k])
		}
	}
	if idle < findings.IdleCacheMinBytes {
		return findings.Finding{}, false
	}
	return findings.NewIdleCache(at(d, from), count, idle), true
}

// firstSampleAt returns the first of the ascending samples at or after event j (len(samples) when none), trying
// near and the one after it before searching.
func firstSampleAt(samples []int, j, near int) int {
	for k := near; k <= near+1 && k <= len(samples); k++ {
		if (k == len(samples) || j <= samples[k]) && (k == 0 || samples[k-1] < j) {
			return k
		}
	}
	k, _ := slices.BinarySearch(samples, j)
	return k
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
func Leaks(d *Device) []findings.LeakSite {
	if !d.leaksDone {
		d.leakSites, d.leaksDone = leaks(d), true
	}
	return d.leakSites
}

// leakMaxSamples bounds the iteration ends compared per site: a long run is sampled evenly, each interval then
// spanning several iterations (and needing proportionally more growth).
const leakMaxSamples = 64

func leaks(d *Device) []findings.LeakSite {
	all := iterationEnds(d.Timeline())
	if len(all) < findings.LeakMinIterations {
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
	// Every site's live bytes at each iteration end, from one pass over the blocks: a block adds its size to the
	// samples from the first end at or after its start to the last before its end (a difference array per site).
	// Blocks share a few thousand attributions: each is named (siteKey joins strings) once, not once per block.
	keys := map[string]int{}
	attrs := d.Attrs()
	siteOf := make([]int, len(attrs))
	var names, cats []string
	for a := range attrs {
		k := siteKey(&attrs[a])
		j, ok := keys[k]
		if !ok {
			j = len(names)
			keys[k] = j
			names = append(names, k)
			cats = append(cats, "")
		}
		siteOf[a] = j
	}
	diff := make([][]int64, len(names))
	from := 0
	for i := range d.Elements {
		el := &d.Elements[i]
		j := siteOf[d.attrOf[i]]
		// The site's category is its latest block's: a leaking site's first block may predate the first
		// iteration, where its lifetime alone would call it a weight.
		cats[j] = attrs[d.attrOf[i]].Category
		// The elements come in trace order, so a start mostly lies by the previous one's sample, and most ends
		// by their start's: the searches begin there.
		from = firstSampleAt(ends, int(el.Start), from)
		to := firstSampleAt(ends, int(el.End), from)
		if from >= to {
			continue
		}
		if diff[j] == nil {
			diff[j] = make([]int64, len(ends)+1)
		}
		diff[j][from] += el.Size
		diff[j][to] -= el.Size
	}
	series := make([][]int64, len(names))
	for j := range series {
		series[j] = make([]int64, len(ends))
		var live int64
		for k := range ends {
			if diff[j] != nil {
				live += diff[j][k]
			}
			series[j][k] = live
		}
	}
	var out []findings.LeakSite
	for j, v := range series {
		grows := true
		for k := 1; k < len(v); k++ {
			if v[k]-v[k-1] < findings.LeakMinGrowthBytes*int64(idx[k]-idx[k-1]) {
				grows = false
				break
			}
		}
		if grows {
			out = append(out, findings.LeakSite{Site: names[j], Category: cats[j], Iterations: len(all), FirstBytes: v[0],
				LastBytes: v[len(v)-1], PerIteration: (v[len(v)-1] - v[0]) / int64(idx[len(idx)-1]-idx[0])})
		}
	}
	slices.SortFunc(out, func(a, b findings.LeakSite) int {
		return cmp.Or(cmp.Compare(b.PerIteration, a.PerIteration), strings.Compare(a.Site, b.Site))
	})
	return out
}

// Leak separates warm-up from growth: iteration 1 creates what training keeps (optimizer state, lazy buffers,
// workspaces); a leak is a site whose live bytes at the end of every later iteration exceed the previous
// iteration's by at least LeakMinGrowthBytes. The finding names the fastest-growing site.
func Leak(d *Device) (findings.Finding, bool) {
	sites := Leaks(d)
	if len(sites) == 0 {
		return findings.Finding{}, false
	}
	l := sites[0]
	ends := iterationEnds(d.Timeline())
	// Warm-up: what iteration 1 created and every later iteration kept, the leaking sites aside. Whether a site
	// grows is decided per attribution, not per element: a long trace has millions of elements and few attributions.
	leaking := map[string]bool{}
	for _, s := range sites {
		leaking[s.Site] = true
	}
	attrs := d.Attrs()
	growsAt := make([]bool, len(attrs))
	for a := range attrs {
		growsAt[a] = leaking[siteKey(&attrs[a])]
	}
	var warm, atPeak int64
	first := d.Timeline().Iterations[0].Span
	peakIdx, _ := d.PeakIndex()
	for i := range d.Elements {
		el := &d.Elements[i]
		grows := growsAt[d.attrOf[i]]
		if first.Contains(int(el.Start)) && int(el.End) > ends[len(ends)-1] && !grows {
			warm += el.Size
		}
		if grows && int(el.Start) <= peakIdx && peakIdx < int(el.End) {
			atPeak += el.Size
		}
	}
	// What the growing sites held after iteration 1 is what the program keeps anyway; the rest is the leak.
	for _, s := range sites {
		atPeak -= s.FirstBytes
	}
	last := ends[len(ends)-1]
	return findings.NewLeak(findings.At{Device: d.Device, Event: last, Iteration: len(ends), Phase: "-"}, l, warm, len(sites), max(atPeak, 0)), true
}

// OOMs explains each out-of-memory event of the device: what was live at the failing request by phase and
// category, and how far beyond the device the step would have gone, extrapolated from the layers completed.
func OOMs(s *snapshot.Snapshot, d *Device) []findings.Finding {
	var out []findings.Finding
	for _, j := range d.OOMEvents() {
		out = append(out, findings.NewOOM(at(d, j), d.Trace[j].Size, d.EventExtra(j).DeviceFree, ExplainOOM(d, j), ExpandableOn(s)))
	}
	return out
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

// ExplainOOM breaks down the live memory at the oom event j and extrapolates the step: the model's layer count
// comes from its structure (ModelLayers); the failing request's stack occurred once per completed layer, and the
// growth of allocated memory between those occurrences is the per-layer cost.
func ExplainOOM(d *Device, j int) findings.OOMExplained {
	e := &d.Trace[j]
	free := d.EventExtra(j).DeviceFree
	x := findings.OOMExplained{Event: j, RequestedBytes: e.Size, DeviceFree: free, ReservedBytes: d.reservedAt(j - 1)}
	x.Live = d.LiveAt(j-1, 10)
	x.CapacityBytes = x.ReservedBytes + free
	x.ProjectedBytes = x.Live.Bytes + e.Size
	x.Layers, x.LayersEvidence = ModelLayers(d, j)
	key := stackKey(d.EventStack(j))
	if x.Layers == 0 || key == "" {
		return x
	}
	it, _ := d.Timeline().At(j)
	from := 0
	if it >= 0 {
		from = d.Timeline().Iterations[it].Span.Start
	}
	var seen []int
	for i := from; i < j; i++ {
		if d.Trace[i].Action == snapshot.ActionAlloc && stackKey(d.EventStack(i)) == key {
			seen = append(seen, i)
		}
	}
	x.LayersDone = len(seen)
	if len(seen) < findings.OOMExtrapolateMinLayers || len(seen) >= x.Layers {
		return x
	}
	x.PerLayerBytes = (d.allocatedAt(seen[len(seen)-1]-1) - d.allocatedAt(seen[0]-1)) / int64(len(seen)-1)
	x.ProjectedBytes += int64(x.Layers-len(seen)-1) * x.PerLayerBytes
	return x
}
