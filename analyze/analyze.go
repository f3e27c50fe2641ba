package analyze

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"sync/atomic"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/internal/input"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/snapshot"
)

// DefaultMaxTimelinePoints is the default Options.MaxTimelinePoints (DefaultTopN is in defaults.go).
const DefaultMaxTimelinePoints = 4000

// MostlyFreeShare is the free share from which a segment counts as mostly free in the fragmentation figures (the
// large free blocks among them are those of findings.LargeFreeBlockBytes).
const MostlyFreeShare = 0.5

// ErrUnsupported is returned by Analyze for inputs it has no analysis for.
var ErrUnsupported = errors.New("no analysis for this kind of input")

// Options control Analyze.
type Options struct {
	// Rules categorize allocations; nil means categorize.Default().
	Rules *categorize.Rules
	// TopN is the number of largest live allocations (and sites) to report; 0 means DefaultTopN.
	TopN int
	// MaxTimelinePoints bounds each downsampled TimelineSeries; 0 means DefaultMaxTimelinePoints.
	MaxTimelinePoints int
	// Allocator sets up the caching-allocator replay of each device trace (what-if settings, capacity); the
	// zero value replays the recorded settings with the capacity the trace implies.
	Allocator AllocatorOptions
	// MaxInputSize bounds the bytes AnalyzeFile decodes from one file after decompression; 0 means
	// load.DefaultMaxInputSize.
	MaxInputSize int64
	// SummaryOnly computes, for a snapshot, only what a rank summary reads (see summarySteps): the totals, the
	// devices, each trace's peak, its out-of-memory events and the categories of the live blocks. The report's
	// other parts stay empty, so it is for summaries only (memscan analyze --summary-only).
	SummaryOnly bool
	// NoTimelineDetail leaves SnapshotReport.Details empty, for callers that draw no timeline (rank summaries for
	// memscan merge): it costs about 20 bytes per allocation and 8 per trace event.
	NoTimelineDetail bool
	// MaxTimelineDetailEvents keeps the detail only of traces of at most this many events (0: no bound), so that a
	// run of many inputs holds a bounded amount of it (DetailEventsPerInput).
	MaxTimelineDetailEvents int
	// Read, when set, counts the bytes AnalyzeFile reads from its file (load.Options.Read), and Stage, when set,
	// is told each Stage as it starts (a few times per input, on the goroutine that analyzes): what a progress
	// display shows of one large input.
	Read  *atomic.Int64
	Stage func(Stage)

	// ownsInput is set by AnalyzeFile, which decoded the snapshot and shows it to no one else: the analysis may
	// then let each device trace go once it has read it (releaseTrace).
	ownsInput bool
}

// TimelineDetailEvents is the trace events a run keeps at full resolution over all its inputs (about 15 bytes
// each with their allocations): a page embeds far fewer, and memscan view analyzes an input alone.
const TimelineDetailEvents = 24_000_000

// DetailEventsPerInput shares TimelineDetailEvents among n inputs, for Options.MaxTimelineDetailEvents: the same
// inputs keep their detail whatever order they are analyzed in.
func DetailEventsPerInput(n int) int { return TimelineDetailEvents / max(1, n) }

func (o Options) withDefaults() Options {
	if o.Rules == nil {
		o.Rules = categorize.Default()
	}
	if o.TopN <= 0 {
		o.TopN = report.DefaultTopN
	}
	if o.MaxTimelinePoints <= 0 {
		o.MaxTimelinePoints = DefaultMaxTimelinePoints
	}
	return o
}

// Analyze computes the report of one decoded input: allocator snapshots here, tracer JSON, profiler timelines and
// training logs by their own analyzers. An input of no known kind returns an error wrapping ErrUnsupported.
func Analyze(ctx context.Context, in *load.Input, opts Options) (*report.Report, error) {
	if in == nil {
		return nil, fmt.Errorf("analyze: nil input")
	}
	// Each kind of input has its own analyzer; callers need not know which one.
	ropts := RuntimeOptions{Top: opts.TopN, Rules: opts.Rules}
	if in.Snapshot == nil {
		opts.stage(StageRuntime)
	}
	switch {
	case in.Snapshot != nil:
	case in.Tracer != nil:
		return AnalyzeTracer(ctx, in, ropts)
	case in.Timeline != nil:
		return AnalyzeTimeline(ctx, in, ropts)
	case in.Log != nil:
		return AnalyzeLog(ctx, in, ropts)
	default:
		return nil, fmt.Errorf("analyze %s (%s): %w", in.Path, in.Format, ErrUnsupported)
	}
	rep, err := AnalyzeSnapshot(ctx, in.Snapshot, opts)
	if err != nil {
		return nil, fmt.Errorf("analyze %s: %w", in.Path, err)
	}
	rep.File = in.Path
	rep.Format = in.Format
	info := input.ParsePath(in.Path)
	rep.Rank, rep.Iteration = info.Rank, info.Iteration
	return rep, nil
}

// AnalyzeFile decodes one file (any supported kind, sniffed from its content) and analyzes it.
func AnalyzeFile(ctx context.Context, path string, opts Options) (*report.Report, error) {
	opts.stage(StageDecode)
	in, err := load.DecodeFileWith(ctx, path, load.Options{MaxInputSize: opts.MaxInputSize, Read: opts.Read})
	if err != nil {
		return nil, err
	}
	opts.ownsInput = true
	return Analyze(ctx, in, opts)
}

// analysis is the per-call working state; one per Analyze call, so calls can run concurrently.
type analysis struct {
	ctx   context.Context
	opts  Options
	snap  *snapshot.Snapshot
	cat   *categorize.Categorizer
	rep   *report.Report
	part  *report.SnapshotReport // rep.Part
	warns *warnings
	tick  int
	// findings are the trace detectors' conclusions (package findings), nil without a trace; judgedAtPeak says
	// the trace held enough history for them to replace the dump-time cache checks.
	findings     []findings.Finding
	judgedAtPeak bool
	// allocRun is the caching-allocator replays of every device trace, running alongside the rest (nil when
	// skipped); allocatorReplays and blockSeries wait for them.
	allocRun *pendingReplays
	// traceEvents is the events of every device trace, counted before any is let go (releaseTrace).
	traceEvents int
	// endCategory is the category the trace replay gave each allocation still live at the end, by device and
	// address, so that the views at the dump agree with those at the peak where a lifetime decided (the
	// weights a module's __init__ allocated are Parameters/Weights in both, not Unknown at the dump).
	endCategory map[deviceAddr]string
}

// deviceAddr identifies a block of the final state.
type deviceAddr struct {
	dev  int
	addr uint64
}

// blockCategory is the decision for a final-state block: its stack's, with the category the trace replay gave
// it where it has one.
func (a *analysis) blockCategory(dev int, b *snapshot.Block) categorize.Decision {
	d := a.cat.Stack(b.Stack)
	if c, ok := a.endCategory[deviceAddr{dev, b.Address}]; ok {
		d.Category = c
	}
	return d
}

// checkCtx polls the context every few thousand iterations so long loops stay cancellable at negligible cost.
func (a *analysis) checkCtx() error {
	a.tick++
	if a.tick&4095 == 0 {
		return a.ctx.Err()
	}
	return nil
}

// AnalyzeSnapshot analyzes one allocator snapshot. File, Format, Rank and Iteration are left for the caller.
func AnalyzeSnapshot(ctx context.Context, s *snapshot.Snapshot, opts Options) (*report.Report, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	part := &report.SnapshotReport{OOMs: []report.OOM{}}
	a := &analysis{
		ctx:   ctx,
		opts:  opts,
		snap:  s,
		cat:   categorize.NewCategorizer(opts.Rules),
		warns: newWarnings(),
		rep: &report.Report{
			Header: report.Header{TorchFormat: s.TorchFormat, Rank: -1, Iteration: -1,
				Categories: []report.CategoryStat{}, Top: []report.Allocation{},
				Recommendations: []findings.Finding{}, Warnings: []string{}},
			Part: part,
		},
		part: part,
	}
	for _, tr := range s.DeviceTraces {
		a.traceEvents += len(tr)
	}
	// liveBlocks follows replayAll, whose lifetimes decide the categories of stackless blocks.
	steps := []analysisStep{
		{StageTotals, a.checkSizes}, {StageTotals, a.totals}, {StageTotals, a.histograms}, {StageTotals, a.fragmentation},
		{StageAllocator, a.replayAllocatorModel}, {StageTrace, a.replayAll}, {StageCategories, a.liveBlocks}, {StageAllocator, a.allocatorReplay},
	}
	if opts.SummaryOnly {
		steps = a.summarySteps()
	}
	var last Stage
	for _, step := range steps {
		if step.stage != last {
			opts.stage(step.stage)
			last = step.stage
		}
		if err := step.run(); err != nil {
			// The allocator replays run alongside the later steps: none outlives the call, and their error
			// comes first, as when they ran before the trace replay.
			if _, rerr := a.allocatorReplays(); rerr != nil {
				return nil, rerr
			}
			return nil, err
		}
	}
	a.rep.Recommendations = recommend(a.part, s, a.traceEvents, a.findings, !a.judgedAtPeak)
	a.rep.Warnings = a.warns.lines()
	return a.rep, nil
}

// analysisStep is one step of AnalyzeSnapshot and the stage it belongs to.
type analysisStep struct {
	stage Stage
	run   func() error
}

// addBlock adds block b to t. Totals follow PyTorch's _memory_viz stats exactly: an active_allocated block
// counts requested bytes as allocated and size − requested as internal free; every other block (inactive and
// active_pending_free) counts its full size as external free.
func addBlock(t *report.Totals, b *snapshot.Block) {
	t.Blocks++
	switch b.State {
	case snapshot.BlockActiveAllocated:
		t.AllocatedBytes += b.Size
		t.RequestedBytes += b.RequestedSize
		t.InternalFreeBytes += b.Size - b.RequestedSize
		t.ActiveBytes += b.Size
	case snapshot.BlockActivePendingFree:
		t.ActiveBytes += b.Size
		t.ExternalFreeBytes += b.Size
	default:
		t.InactiveBytes += b.Size
		t.ExternalFreeBytes += b.Size
		t.LargestFreeBlockBytes = max(t.LargestFreeBlockBytes, b.Size)
	}
}

func finishTotals(t *report.Totals) {
	if t.ReservedBytes > 0 {
		t.EfficiencyPct = float64(t.RequestedBytes) / float64(t.ReservedBytes) * 100
	}
}

// groupAcc accumulates GroupTotals by key, remembering a sort key.
type groupAcc struct {
	order map[string]int64
	m     map[string]*report.Totals
}

func newGroupAcc() *groupAcc {
	return &groupAcc{order: map[string]int64{}, m: map[string]*report.Totals{}}
}

func (g *groupAcc) get(key string, order int64) *report.Totals {
	t, ok := g.m[key]
	if !ok {
		t = &report.Totals{}
		g.m[key] = t
		g.order[key] = order
	}
	return t
}

func (g *groupAcc) list() []report.GroupTotals {
	out := make([]report.GroupTotals, 0, len(g.m))
	for k, t := range g.m {
		finishTotals(t)
		out = append(out, report.GroupTotals{Key: k, Totals: *t})
	}
	slices.SortFunc(out, func(x, y report.GroupTotals) int {
		return cmp.Or(cmp.Compare(g.order[x.Key], g.order[y.Key]), cmp.Compare(x.Key, y.Key))
	})
	return out
}

// StreamKey, PoolKey format group keys for streams and pools.
func StreamKey(s uint64) string { return "stream 0x" + strconv.FormatUint(s, 16) }

// PoolKey formats a pool id as PyTorch prints it, e.g. "(0, 1)".
func PoolKey(p snapshot.PoolID) string { return fmt.Sprintf("(%d, %d)", p[0], p[1]) }

// totals computes the snapshot totals and the per-device/stream/pool/segment-type groups, and checks each
// segment against its blocks.
func (a *analysis) totals() error {
	t := &a.part.Totals
	devs, streams, pools, types := newGroupAcc(), newGroupAcc(), newGroupAcc(), newGroupAcc()
	devSet := map[int]bool{}
	for i := range a.snap.Segments {
		if err := a.checkCtx(); err != nil {
			return err
		}
		seg := &a.snap.Segments[i]
		devSet[seg.Device] = true
		groups := []*report.Totals{
			t,
			devs.get(strconv.Itoa(seg.Device), int64(seg.Device)),
			streams.get(StreamKey(seg.Stream), int64(seg.Stream>>1)), // >>1 keeps the order non-negative
			pools.get(PoolKey(seg.Pool), seg.Pool[0]<<32|seg.Pool[1]),
			types.get(string(seg.Type), map[snapshot.SegmentType]int64{snapshot.SegmentLarge: 0, snapshot.SegmentSmall: 1}[seg.Type]),
		}
		var st report.Totals
		st.ReservedBytes = seg.TotalSize
		st.Segments = 1
		var sum int64
		prevInactive := false
		for j := range seg.Blocks {
			b := &seg.Blocks[j]
			addBlock(&st, b)
			sum += b.Size
			if b.State == snapshot.BlockActiveAllocated && b.RequestedSize > b.Size {
				a.warns.add("requested-gt-size", fmt.Sprintf("segment %d (0x%x) block %d: requested %d > size %d", i, seg.Address, j, b.RequestedSize, b.Size))
			}
			if b.Size < 0 || b.RequestedSize < 0 {
				a.warns.add("negative-size", fmt.Sprintf("segment %d (0x%x) block %d: negative size", i, seg.Address, j))
			}
			inactive := b.State == snapshot.BlockInactive
			if inactive && prevInactive {
				a.warns.add("adjacent-inactive", fmt.Sprintf("segment %d (0x%x) blocks %d and %d are both inactive (the allocator merges neighbours)", i, seg.Address, j-1, j))
			}
			prevInactive = inactive
		}
		if sum != seg.TotalSize && len(seg.Blocks) > 0 {
			a.warns.add("blocks-sum", fmt.Sprintf("segment %d (0x%x): blocks sum to %d but total_size is %d", i, seg.Address, sum, seg.TotalSize))
		}
		if st.AllocatedBytes != seg.AllocatedSize {
			a.warns.add("allocated-size", fmt.Sprintf("segment %d (0x%x): allocated_size %d but active_allocated blocks sum to %d", i, seg.Address, seg.AllocatedSize, st.AllocatedBytes))
		}
		if st.ActiveBytes != seg.ActiveSize {
			a.warns.add("active-size", fmt.Sprintf("segment %d (0x%x): active_size %d but active blocks sum to %d", i, seg.Address, seg.ActiveSize, st.ActiveBytes))
		}
		for _, g := range groups {
			addTotals(g, &st)
		}
	}
	finishTotals(t)
	for d := range a.snap.DeviceTraces {
		if len(a.snap.DeviceTraces[d]) > 0 {
			devSet[d] = true
		}
	}
	a.rep.Devices = make([]int, 0, len(devSet))
	for d := range devSet {
		a.rep.Devices = append(a.rep.Devices, d)
	}
	slices.Sort(a.rep.Devices)
	a.part.PerDevice, a.part.PerStream, a.part.PerPool, a.part.PerSegmentType = devs.list(), streams.list(), pools.list(), types.list()
	return nil
}

// addTotals accumulates o into t (largest free block is a maximum, not a sum).
func addTotals(t, o *report.Totals) {
	t.ReservedBytes += o.ReservedBytes
	t.AllocatedBytes += o.AllocatedBytes
	t.RequestedBytes += o.RequestedBytes
	t.ActiveBytes += o.ActiveBytes
	t.InactiveBytes += o.InactiveBytes
	t.InternalFreeBytes += o.InternalFreeBytes
	t.ExternalFreeBytes += o.ExternalFreeBytes
	t.LargestFreeBlockBytes = max(t.LargestFreeBlockBytes, o.LargestFreeBlockBytes)
	t.Segments += o.Segments
	t.Blocks += o.Blocks
}

// liveBlocks categorizes every active_allocated block: categories, sites and the top N.
// Category and site bytes are block sizes (what the allocator holds for the tensor, rounding included), so the
// categories sum to allocated_bytes.
func (a *analysis) liveBlocks() error {
	cats := map[string]*report.CategoryStat{}
	type siteKey struct{ site, cat string }
	sites := map[siteKey]*report.SiteStat{}
	// Only the top N become Allocations; the rest are kept as compact references for sorting.
	type liveRef struct {
		size     int64
		addr     uint64
		dev      int
		seg, blk int32
	}
	var live []liveRef
	for i := range a.snap.Segments {
		seg := &a.snap.Segments[i]
		for j := range seg.Blocks {
			if err := a.checkCtx(); err != nil {
				return err
			}
			b := &seg.Blocks[j]
			if b.State != snapshot.BlockActiveAllocated {
				continue
			}
			d := a.blockCategory(seg.Device, b)
			c := cats[d.Category]
			if c == nil {
				c = &report.CategoryStat{Name: d.Category}
				cats[d.Category] = c
			}
			c.Bytes += b.Size
			c.Count++
			site := d.SiteName()
			k := siteKey{site, d.Category}
			s := sites[k]
			if s == nil {
				s = &report.SiteStat{Site: site, Category: d.Category}
				sites[k] = s
			}
			s.Bytes += b.Size
			s.Count++
			live = append(live, liveRef{size: b.Size, addr: b.Address, dev: seg.Device, seg: int32(i), blk: int32(j)})
		}
	}
	a.rep.Categories = sortedCategories(cats)
	a.rep.Sites = topSites(sites, a.opts.TopN)
	slices.SortFunc(live, func(x, y liveRef) int {
		return cmp.Or(cmp.Compare(y.size, x.size), cmp.Compare(x.dev, y.dev), cmp.Compare(x.addr, y.addr))
	})
	a.rep.Top = make([]report.Allocation, 0, min(len(live), a.opts.TopN))
	for _, l := range live[:min(len(live), a.opts.TopN)] {
		seg := &a.snap.Segments[l.seg]
		b := &seg.Blocks[l.blk]
		d := a.blockCategory(seg.Device, b)
		a.rep.Top = append(a.rep.Top, report.Allocation{
			Size: b.Size, RequestedSize: b.RequestedSize, Address: b.Address, Device: seg.Device,
			Stream: seg.Stream, State: b.State.String(), Category: d.Category, Site: d.SiteName(), Rule: d.Rule,
			Frame: decidingFrame(d),
		})
	}
	return nil
}

func sortedCategories[K comparable](m map[K]*report.CategoryStat) []report.CategoryStat {
	out := make([]report.CategoryStat, 0, len(m))
	for _, c := range m {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(x, y report.CategoryStat) int {
		return cmp.Or(cmp.Compare(y.Bytes, x.Bytes), cmp.Compare(x.Name, y.Name))
	})
	return out
}

func topSites[K comparable](m map[K]*report.SiteStat, n int) []report.SiteStat {
	out := make([]report.SiteStat, 0, len(m))
	for _, s := range m {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(x, y report.SiteStat) int {
		return cmp.Or(cmp.Compare(y.Bytes, x.Bytes), cmp.Compare(x.Site, y.Site), cmp.Compare(x.Category, y.Category))
	})
	return out[:min(len(out), n)]
}

// bucketOf returns the power-of-two bucket [lo, hi) holding n: [0,1) for 0, else [2^k, 2^(k+1)).
func bucketOf(n int64) int {
	if n <= 0 {
		return 0
	}
	return bits.Len64(uint64(n)) // 1 → 1 ([1,2)), 2..3 → 2 ([2,4)), ...
}

func bucketBounds(k int) (lo, hi int64) {
	if k == 0 {
		return 0, 1
	}
	if k >= 63 {
		return 1 << 62, 1<<63 - 1
	}
	return 1 << (k - 1), 1 << k
}

// histogram builds contiguous power-of-two buckets from the smallest to the largest non-empty one.
func histogram(sizes []int64) []report.SizeBucket {
	if len(sizes) == 0 {
		return nil
	}
	var counts [65]int
	var bytes [65]int64
	lo, hi := 64, 0
	for _, s := range sizes {
		k := bucketOf(s)
		counts[k]++
		bytes[k] += s
		lo, hi = min(lo, k), max(hi, k)
	}
	out := make([]report.SizeBucket, 0, hi-lo+1)
	for k := lo; k <= hi; k++ {
		l, h := bucketBounds(k)
		out = append(out, report.SizeBucket{Lo: l, Hi: h, Count: counts[k], Bytes: bytes[k]})
	}
	return out
}

// histograms: active_allocated block sizes and cached free (inactive) block sizes.
func (a *analysis) histograms() error {
	var active, free []int64
	for i := range a.snap.Segments {
		if err := a.checkCtx(); err != nil {
			return err
		}
		for _, b := range a.snap.Segments[i].Blocks {
			switch b.State {
			case snapshot.BlockActiveAllocated:
				active = append(active, b.Size)
			case snapshot.BlockInactive:
				free = append(free, b.Size)
			}
		}
	}
	a.part.ActiveSizes, a.part.FreeSizes = histogram(active), histogram(free)
	return nil
}

// fragmentation: rounding waste, cached free memory, mostly-free segments and large unused blocks.
func (a *analysis) fragmentation() error {
	f := &a.part.Fragmentation
	f.InternalWasteBytes = a.part.InternalFreeBytes
	f.CachedFreeBytes = a.part.InactiveBytes
	f.MostlyFreeThreshold = MostlyFreeShare
	for i := range a.snap.Segments {
		if err := a.checkCtx(); err != nil {
			return err
		}
		seg := &a.snap.Segments[i]
		var free int64
		for _, b := range seg.Blocks {
			if b.State == snapshot.BlockInactive {
				free += b.Size
				if b.Size >= findings.LargeFreeBlockBytes {
					f.LargeFreeBlocks++
					f.LargeFreeBlocksBytes += b.Size
				}
			}
		}
		if seg.TotalSize > 0 && float64(free) >= MostlyFreeShare*float64(seg.TotalSize) {
			f.MostlyFreeSegments++
			f.MostlyFreeSegmentsBytes += seg.TotalSize
		}
	}
	if f.CachedFreeBytes > 0 {
		f.FragmentationPct = float64(f.CachedFreeBytes-a.part.LargestFreeBlockBytes) / float64(f.CachedFreeBytes) * 100
	}
	return nil
}

// warnings collects inconsistencies by kind, keeping a count and the first example of each so a damaged snapshot
// yields a handful of lines, not thousands.
type warnings struct {
	order []string
	count map[string]int
	first map[string]string
}

func newWarnings() *warnings {
	return &warnings{count: map[string]int{}, first: map[string]string{}}
}

func (w *warnings) add(kind, example string) {
	if w.count[kind] == 0 {
		w.order = append(w.order, kind)
		w.first[kind] = example
	}
	w.count[kind]++
}

func (w *warnings) lines() []string {
	out := make([]string, 0, len(w.order))
	for _, k := range w.order {
		if n := w.count[k]; n > 1 {
			out = append(out, fmt.Sprintf("%s (and %d more like it)", w.first[k], n-1))
		} else {
			out = append(out, w.first[k])
		}
	}
	return out
}

// decidingFrame is the frame that decided the category, recorded only when it is not already the site.
func decidingFrame(d categorize.Decision) string {
	if d.Frame == d.Site {
		return ""
	}
	return d.Frame
}
