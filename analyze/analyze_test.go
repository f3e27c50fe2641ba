package analyze

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/internal/snapbuild"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/snapshot"
)

const (
	KiB int64 = 1 << 10
	MiB int64 = 1 << 20
	sp        = "/opt/venv/lib/python3.11/site-packages/"
)

// Realistic stacks, innermost first, with torch's call plumbing between user frames.
var (
	stAttn = snapbuild.Stack(sp+"torch/nn/functional.py:5500:scaled_dot_product_attention", "/home/dev/proj/layers/attention.py:40:forward",
		sp+"torch/nn/modules/module.py:1747:_call_impl", "/home/dev/proj/train.py:90:main")
	stOpt  = snapbuild.Stack(sp+"torch/optim/adamw.py:95:_init_group", sp+"torch/optim/adamw.py:210:step", "/home/dev/proj/train.py:99:main")
	stRelu = snapbuild.Stack(sp+"torch/nn/functional.py:1704:relu", "/home/dev/proj/model.py:20:block", "/home/dev/proj/train.py:90:main")
	stGrad = snapbuild.Stack(sp+"torch/autograd/__init__.py:347:backward", sp+"torch/_tensor.py:581:backward", "/home/dev/proj/train.py:95:main")
	stLoss = snapbuild.Stack(sp+"torch/nn/functional.py:3494:cross_entropy", "/home/dev/proj/train.py:93:main")
)

func analyzeBuilt(t *testing.T, b *snapbuild.SnapBuilder) *report.Report {
	t.Helper()
	r, err := Analyze(context.Background(), testutil.Input(b, "outputs/memory_snapshot/iteration_3/rank5_memory_snapshot.pickle"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// totalsSnapshot is three segments whose totals are worked out by hand in TestTotalsHandComputed.
func totalsSnapshot() *snapbuild.SnapBuilder {
	b := snapbuild.NewSnap(2)
	b.Segment(snapbuild.SegOpts{Device: 0}, snapbuild.Live(4*MiB, 3*MiB+100, stAttn), snapbuild.Free(2*MiB), snapbuild.Live(1*MiB, 1*MiB, stOpt))
	b.Segment(snapbuild.SegOpts{Device: 0, Stream: 0x10, Type: snapshot.SegmentSmall}, snapbuild.Live(512, 500, nil), snapbuild.Pending(1024, 1000, nil), snapbuild.Free(2*MiB-1536))
	b.Segment(snapbuild.SegOpts{Device: 1, Pool: snapshot.PoolID{0, 1}}, snapbuild.Free(20*MiB))
	return b
}

func TestTotalsHandComputed(t *testing.T) {
	r := analyzeBuilt(t, totalsSnapshot())
	sp := partOf[*report.SnapshotReport](t, r)
	// reserved  = 7 MiB + 2 MiB + 20 MiB                               = 30408704
	// allocated = 4 MiB + 1 MiB + 512 (active_allocated sizes)          = 5243392
	// requested = (3 MiB + 100) + 1 MiB + 500                           = 4194904
	// internal  = (4 MiB − 3 MiB − 100) + 0 + (512 − 500)               = 1048488
	// external  = 2 MiB + 1024 (pending) + (2 MiB − 1536) + 20 MiB      = 25165312
	// active    = allocated + 1024 pending                              = 5244416
	// inactive  = 2 MiB + (2 MiB − 1536) + 20 MiB                       = 25164288
	want := report.Totals{
		ReservedBytes: 30408704, AllocatedBytes: 5243392, RequestedBytes: 4194904, ActiveBytes: 5244416,
		InactiveBytes: 25164288, InternalFreeBytes: 1048488, ExternalFreeBytes: 25165312,
		EfficiencyPct: 4194904.0 / 30408704 * 100, LargestFreeBlockBytes: 20 * MiB, Segments: 3, Blocks: 7,
	}
	if sp.Totals != want {
		t.Errorf("totals\n got %+v\nwant %+v", sp.Totals, want)
	}
	if sp.RequestedBytes+sp.InternalFreeBytes+sp.ExternalFreeBytes != sp.ReservedBytes {
		t.Error("requested + internal + external != reserved")
	}
	if r.Rank != 5 || r.Iteration != 3 || !slices.Equal(r.Devices, []int{0, 1}) {
		t.Errorf("rank %d iteration %d devices %v", r.Rank, r.Iteration, r.Devices)
	}
	groups := []struct {
		name string
		got  []report.GroupTotals
		want map[string]int64 // key → reserved
	}{
		{"device", sp.PerDevice, map[string]int64{"0": 9 * MiB, "1": 20 * MiB}},
		{"stream", sp.PerStream, map[string]int64{"stream 0x0": 27 * MiB, "stream 0x10": 2 * MiB}},
		{"pool", sp.PerPool, map[string]int64{"(0, 0)": 9 * MiB, "(0, 1)": 20 * MiB}},
		{"segment type", sp.PerSegmentType, map[string]int64{"large": 27 * MiB, "small": 2 * MiB}},
	}
	for _, g := range groups {
		got := map[string]int64{}
		var sum report.Totals
		for _, x := range g.got {
			got[x.Key] = x.ReservedBytes
			addTotals(&sum, &x.Totals)
		}
		if fmt.Sprint(got) != fmt.Sprint(g.want) {
			t.Errorf("per %s: %v, want %v", g.name, got, g.want)
		}
		if sum.RequestedBytes != want.RequestedBytes || sum.ExternalFreeBytes != want.ExternalFreeBytes {
			t.Errorf("per %s groups do not add up to the totals", g.name)
		}
	}
	// Categories are block sizes of active_allocated blocks: they add up to allocated.
	wantCats := []report.CategoryStat{{Name: categorize.Attention, Bytes: 4 * MiB, Count: 1}, {Name: categorize.OptimizerState, Bytes: 1 * MiB, Count: 1}, {Name: categorize.Unknown, Bytes: 512, Count: 1}}
	if !slices.Equal(r.Categories, wantCats) {
		t.Errorf("categories %+v, want %+v", r.Categories, wantCats)
	}
	if len(r.Top) != 3 || r.Top[0].Size != 4*MiB || r.Top[0].Category != categorize.Attention ||
		r.Top[0].Site != "/home/dev/proj/layers/attention.py:40:forward" || r.Top[0].Rule != "attention-files" ||
		r.Top[2].Site != categorize.NoStackSite {
		t.Errorf("top %+v", r.Top)
	}
	if len(r.Warnings) != 0 {
		t.Errorf("unexpected warnings %v", r.Warnings)
	}
	// Fragmentation: cached free 25164288, largest 20 MiB → (25164288 − 20971520) / 25164288.
	f := sp.Fragmentation
	wantFrag := float64(25164288-20*MiB) / 25164288 * 100
	if f.CachedFreeBytes != 25164288 || f.InternalWasteBytes != 1048488 || math.Abs(f.FragmentationPct-wantFrag) > 1e-9 ||
		f.MostlyFreeSegments != 2 || f.MostlyFreeSegmentsBytes != 22*MiB || f.LargeFreeBlocks != 0 {
		t.Errorf("fragmentation %+v (want pct %.4f)", f, wantFrag)
	}
}

func TestHistograms(t *testing.T) {
	r := analyzeBuilt(t, totalsSnapshot())
	sp := partOf[*report.SnapshotReport](t, r)
	// Active sizes 512, 1 MiB, 4 MiB → buckets [2^9,2^10) .. [2^22,2^23), contiguous: 14 buckets.
	a := sp.ActiveSizes
	if len(a) != 14 || a[0].Lo != 512 || a[0].Hi != 1024 || a[0].Count != 1 || a[13].Lo != 4*MiB || a[13].Count != 1 || a[11].Lo != 1*MiB || a[11].Count != 1 {
		t.Fatalf("active histogram %+v", a)
	}
	var n int
	var bytes int64
	for _, bk := range a {
		n += bk.Count
		bytes += bk.Bytes
	}
	if n != 3 || bytes != sp.AllocatedBytes {
		t.Errorf("active histogram holds %d blocks / %d bytes", n, bytes)
	}
	// Free sizes 2 MiB − 1536 ([1,2) MiB), 2 MiB ([2,4) MiB), 20 MiB ([16,32) MiB).
	fr := sp.FreeSizes
	if len(fr) != 5 || fr[0].Lo != 1*MiB || fr[0].Count != 1 || fr[1].Lo != 2*MiB || fr[1].Count != 1 || fr[4].Lo != 16*MiB || fr[4].Bytes != 20*MiB {
		t.Fatalf("free histogram %+v", fr)
	}
	for _, tc := range []struct {
		n      int64
		lo, hi int64
	}{{0, 0, 1}, {1, 1, 2}, {3, 2, 4}, {512, 512, 1024}, {1023, 512, 1024}} {
		lo, hi := bucketBounds(bucketOf(tc.n))
		if lo != tc.lo || hi != tc.hi {
			t.Errorf("bucket of %d = [%d,%d), want [%d,%d)", tc.n, lo, hi, tc.lo, tc.hi)
		}
	}
}

// replaySnapshot is a hand-made trace on device 0; the expected series is worked out in TestTimelineReplay.
func replaySnapshot() (*snapbuild.SnapBuilder, uint64) {
	return snapbuild.ReplayRules(stAttn, stOpt, stRelu, stGrad, stLoss)
}

func TestTimelineReplay(t *testing.T) {
	b, _ := replaySnapshot()
	r := analyzeBuilt(t, b)
	sp := partOf[*report.SnapshotReport](t, r)
	if len(sp.Timeline) != 1 {
		t.Fatalf("%d series", len(sp.Timeline))
	}
	ts := sp.Timeline[0]
	// Live from the start: X0 (1000, a live block with no alloc in the trace) + Z (700, freed at 5) = 1700.
	// 0 segment_alloc 1700 | 1 +2000 3700 | 2 +3000 6700 | 3 free_requested (completed later) 6700 |
	// 4 −3000 3700 | 5 −700 3000 | 6 +400 3400 | 7 free_requested never completed −400 3000 | 8 oom 3000
	wantAlloc := []int64{1700, 3700, 6700, 6700, 3700, 3000, 3400, 3000, 3000}
	// Reserved is rebuilt from the final 8192 bytes backwards: 0 before the segment_alloc.
	wantRes := []int64{8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192, 8192}
	if !slices.Equal(ts.Allocated, wantAlloc) || !slices.Equal(ts.Reserved, wantRes) || !slices.Equal(ts.Index, []int{0, 1, 2, 3, 4, 5, 6, 7, 8}) {
		t.Errorf("allocated %v reserved %v index %v", ts.Allocated, ts.Reserved, ts.Index)
	}
	if len(ts.TimeUS) != 9 || ts.TimeUS[2] != 1002 {
		t.Errorf("times %v", ts.TimeUS)
	}
	p := r.Peak
	if p == nil || p.Bytes != 6700 || p.EventIndex != 2 || p.TimeUS != 1002 || p.Device != 0 {
		t.Fatalf("peak %+v", p)
	}
	// Live at event 2: Y relu 3000, X1 adamw 2000, X0 attention 1000, Z backward 700.
	wantCats := []report.CategoryStat{{Name: categorize.Activation, Bytes: 3000, Count: 1}, {Name: categorize.OptimizerState, Bytes: 2000, Count: 1}, {Name: categorize.Attention, Bytes: 1000, Count: 1}, {Name: categorize.Gradient, Bytes: 700, Count: 1}}
	if !slices.Equal(p.Categories, wantCats) {
		t.Errorf("peak categories %+v", p.Categories)
	}
	if len(p.Sites) != 4 || p.Sites[0].Site != "/home/dev/proj/model.py:20:block" || p.Sites[0].Bytes != 3000 {
		t.Errorf("peak sites %+v", p.Sites)
	}
	// Per-category stacks add up to the allocated line at every point, in peak order.
	if !slices.Equal(ts.Categories[:4], []string{categorize.Activation, categorize.OptimizerState, categorize.Attention, categorize.Gradient}) {
		t.Errorf("series categories %v", ts.Categories)
	}
	for k := range ts.Index {
		var sum int64
		for c := range ts.Categories {
			sum += ts.ByCategory[c][k]
		}
		if sum != ts.Allocated[k] {
			t.Errorf("point %d: categories %d, allocated %d", k, sum, ts.Allocated[k])
		}
	}
	if sp.TraceActions["alloc"] != 3 || sp.TraceActions["free_completed"] != 2 || sp.TraceActions["oom"] != 1 {
		t.Errorf("trace actions %v", sp.TraceActions)
	}
	// OOM: requested vs device free, the state at the event, and the site from its frames.
	want := report.OOM{Device: 0, EventIndex: 8, TimeUS: 1008, RequestedBytes: 100000, DeviceFreeBytes: 50,
		Site: "/home/dev/proj/model.py:20:block", Category: categorize.Activation, AllocatedBytes: 3000, ReservedBytes: 8192}
	if len(sp.OOMs) != 1 || sp.OOMs[0].Explained == nil {
		t.Fatalf("ooms %+v, want one explained", sp.OOMs)
	}
	// The explanation's live set is the replayed allocated memory at the event.
	if x := sp.OOMs[0].Explained; x.Live.Bytes != 3000 || x.ReservedBytes != 8192 || x.RequestedBytes != 100000 {
		t.Errorf("explained %+v", x)
	}
	got := sp.OOMs[0]
	got.Explained = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ooms %+v, want %+v", got, want)
	}
	if len(r.Warnings) != 0 {
		t.Errorf("warnings %v", r.Warnings)
	}
}

func TestReservedReplayWithMapUnmap(t *testing.T) {
	b := snapbuild.NewSnap(1)
	seg := b.Segment(snapbuild.SegOpts{Expandable: true}, snapbuild.Live(4*MiB, 4*MiB, stRelu))
	b.Event(0,
		snapbuild.Ev(snapshot.ActionSegmentMap, seg, 2*MiB, nil),
		snapbuild.Ev(snapshot.ActionSegmentMap, seg+uint64(2*MiB), 4*MiB, nil),
		snapbuild.Ev(snapshot.ActionAlloc, seg, 4*MiB, stRelu),
		snapbuild.Ev(snapshot.ActionSegmentUnmap, seg+uint64(4*MiB), 2*MiB, nil),
	)
	r := analyzeBuilt(t, b)
	sp := partOf[*report.SnapshotReport](t, r)
	// Final reserved 4 MiB; net +4 MiB over the trace → starts at 0: 2, 6, 6, 4 MiB.
	if got := sp.Timeline[0].Reserved; !slices.Equal(got, []int64{2 * MiB, 6 * MiB, 6 * MiB, 4 * MiB}) {
		t.Errorf("reserved %v", got)
	}
	if got := sp.Timeline[0].Allocated; !slices.Equal(got, []int64{0, 0, 4 * MiB, 4 * MiB}) {
		t.Errorf("allocated %v", got)
	}
}

func TestSampleIndicesKeepsBucketMax(t *testing.T) {
	v := []int64{1, 9, 2, 3, 4, 5, 8, 6, 7, 0}
	// 10 points into at most 3: buckets of 4 → [0,4) max at 1, [4,8) max at 6, [8,10) max at 8.
	if got, bucket := sampleIndices(v, 3); !slices.Equal(got, []int{1, 6, 8}) || bucket != 4 {
		t.Errorf("got %v, buckets of %d", got, bucket)
	}
	if got, _ := sampleIndices(v, 10); len(got) != 10 {
		t.Errorf("no downsampling expected: %v", got)
	}
	big := make([]int64, 100001)
	big[77777] = 5
	idx, _ := sampleIndices(big, DefaultMaxTimelinePoints)
	if len(idx) > DefaultMaxTimelinePoints || !slices.Contains(idx, 77777) {
		t.Errorf("%d points, peak kept: %v", len(idx), slices.Contains(idx, 77777))
	}
}

// TestFirstSample: firstSample finds the first sample at or after an event as a search of the samples does, for
// every event of traces of many lengths and any bucket contents.
func TestFirstSample(t *testing.T) {
	for n := 1; n <= 60; n++ {
		v := make([]int64, n)
		for j := range v {
			v[j] = int64((j * 7919) % 13)
		}
		for _, points := range []int{1, 2, 3, 7, 10, 60} {
			idx, bucket := sampleIndices(v, points)
			for j := -1; j <= n; j++ {
				want, _ := slices.BinarySearch(idx, j)
				if got := firstSample(idx, bucket, j); got != want {
					t.Fatalf("n %d, %d points (%v, buckets of %d): first sample at or after %d is %d, want %d", n, points, idx, bucket, j, got, want)
				}
			}
		}
	}
}

// leakSnapshot allocates per step `leak` bytes from one site that are never freed and 4 MiB from another that are,
// with a marker after each step: snapshot actions, or ProfilerStep annotations when useAnnotations is set.
func leakSnapshot(steps int, leak int64, useAnnotations bool) *snapbuild.SnapBuilder {
	b := snapbuild.NewSnap(1)
	stLeak := snapbuild.Stack("/home/dev/proj/metrics.py:12:record", "/home/dev/proj/train.py:90:main")
	addr := uint64(0x7e0000000000)
	for range steps {
		if useAnnotations {
			// The START mark shares its time with the step's first event (Event numbers times 1000, 1001, ...).
			b.S.ExternalAnnotations = append(b.S.ExternalAnnotations, snapshot.Annotation{Stage: "START", Name: "ProfilerStep", Device: 0, TimeUS: int64(1000 + len(b.S.DeviceTraces[0]))})
		}
		tmp := addr + 1<<30
		b.Event(0,
			snapbuild.Ev(snapshot.ActionAlloc, tmp, 4*MiB, stRelu),
			snapbuild.Ev(snapshot.ActionAlloc, addr, leak, stLeak),
			snapbuild.Ev(snapshot.ActionFreeRequested, tmp, 4*MiB, stRelu),
			snapbuild.Ev(snapshot.ActionFreeCompleted, tmp, 4*MiB, stRelu),
		)
		if !useAnnotations {
			b.Event(0, snapbuild.Ev(snapshot.ActionSnapshot, 0, 0, nil))
		}
		addr += uint64(leak)
	}
	return b
}

// TestLeakDetection: the markers split the trace into iterations (the first step is the setup before the first
// marker); a leak must grow by at least 1 MiB at the end of every complete iteration after the first.
func TestLeakDetection(t *testing.T) {
	tests := []struct {
		name        string
		steps       int
		leak        int64
		annotations bool
		fire        bool
	}{
		// 5 markers: 3 complete iterations, each ending 1 MiB higher than the one before.
		{"growth at the threshold", 5, 1 * MiB, false, true},
		{"growth under the threshold", 5, 1*MiB - 512, false, false},
		// 3 markers: 2 complete iterations, warm-up and one more, too few to call growth.
		{"too few iterations", 3, 8 * MiB, false, false},
		{"annotation markers", 5, 2 * MiB, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := analyzeBuilt(t, leakSnapshot(tc.steps, tc.leak, tc.annotations))
			sp := partOf[*report.SnapshotReport](t, r)
			rec := hasRec(r, "leak")
			if (rec != nil) != tc.fire {
				t.Fatalf("leak fired=%v, want %v (suspects %+v)", rec != nil, tc.fire, sp.LeakSuspects)
			}
			if !tc.fire {
				return
			}
			l := sp.LeakSuspects[0]
			if l.Site != "/home/dev/proj/metrics.py:12:record" || l.PerIterationBytes != tc.leak || rec.Value != float64(tc.leak) || len(sp.LeakSuspects) != 1 {
				t.Errorf("suspects %+v, finding %+v", sp.LeakSuspects, rec)
			}
		})
	}
}

// TestOOMCachedAdvice: when the cache held at least the request in free pieces, the OOM finding advises
// expandable segments; one byte less free than asked, it does not.
func TestOOMCachedAdvice(t *testing.T) {
	for _, tc := range []struct {
		request int64
		advise  bool
	}{{1 * MiB, true}, {1*MiB + 1, false}} {
		b := snapbuild.NewSnap(1)
		b.Segment(snapbuild.SegOpts{}, snapbuild.Live(1*MiB, 1*MiB, stRelu), snapbuild.Free(1*MiB))
		b.Event(0, snapbuild.Entry{TraceEntry: snapshot.TraceEntry{Action: snapshot.ActionOOM, Size: tc.request}})
		rec := hasRec(analyzeBuilt(t, b), "oom")
		if rec == nil || strings.Contains(rec.Advice, "expandable_segments:True") != tc.advise {
			t.Errorf("request %d: oom %+v, want expandable advice %v", tc.request, rec, tc.advise)
		}
	}
}

func hasRec(r *report.Report, id findings.ID) *findings.Finding {
	for i := range r.Recommendations {
		if r.Recommendations[i].ID == id {
			return &r.Recommendations[i]
		}
	}
	return nil
}

func TestRecommendationThresholds(t *testing.T) {
	small := func(n int) func(b *snapbuild.SnapBuilder) {
		return func(b *snapbuild.SnapBuilder) {
			for range n {
				b.Segment(snapbuild.SegOpts{Type: snapshot.SegmentSmall}, snapbuild.Live(2*MiB, 2*MiB, stRelu))
			}
		}
	}
	tests := []struct {
		name  string
		id    string
		build func(b *snapbuild.SnapBuilder)
		fire  bool
		value float64
	}{
		// overhead = (reserved − requested) / reserved: 10 MiB / 100 MiB = 10 % exactly does not exceed 10.
		{"cache overhead at 10%", "cache-overhead", func(b *snapbuild.SnapBuilder) {
			b.Segment(snapbuild.SegOpts{}, snapbuild.Live(90*MiB, 90*MiB, stRelu), snapbuild.Free(10*MiB))
		}, false, 0},
		{"cache overhead above 10%", "cache-overhead", func(b *snapbuild.SnapBuilder) {
			b.Segment(snapbuild.SegOpts{}, snapbuild.Live(90*MiB, 90*MiB-512, stRelu), snapbuild.Free(10*MiB))
		}, true, float64(10*MiB+512) / float64(100*MiB) * 100},
		{"unused block of 100 MiB", "large-unused-blocks", func(b *snapbuild.SnapBuilder) {
			b.Segment(snapbuild.SegOpts{}, snapbuild.Live(900*MiB, 900*MiB, stRelu), snapbuild.Free(100*MiB))
		}, true, float64(100 * MiB)},
		{"unused block just under 100 MiB", "large-unused-blocks", func(b *snapbuild.SnapBuilder) {
			b.Segment(snapbuild.SegOpts{}, snapbuild.Live(900*MiB+512, 900*MiB+512, stRelu), snapbuild.Free(100*MiB-512))
		}, false, 0},
		// cached 20 MiB in two 10 MiB blocks: 50 % outside the largest → not above 50.
		{"fragmentation at 50%", "fragmentation", func(b *snapbuild.SnapBuilder) {
			b.Segment(snapbuild.SegOpts{}, snapbuild.Live(40*MiB, 40*MiB, stRelu), snapbuild.Free(10*MiB))
			b.Segment(snapbuild.SegOpts{}, snapbuild.Live(40*MiB, 40*MiB, stRelu), snapbuild.Free(10*MiB))
		}, false, 0},
		// cached 21 MiB, largest 10 MiB → 11/21 = 52.4 %.
		{"fragmentation above 50%", "fragmentation", func(b *snapbuild.SnapBuilder) {
			b.Segment(snapbuild.SegOpts{}, snapbuild.Live(40*MiB, 40*MiB, stRelu), snapbuild.Free(10*MiB))
			b.Segment(snapbuild.SegOpts{}, snapbuild.Live(40*MiB, 40*MiB, stRelu), snapbuild.Free(10*MiB))
			b.Segment(snapbuild.SegOpts{}, snapbuild.Live(1*MiB, 1*MiB, stRelu), snapbuild.Free(1*MiB))
		}, true, 11.0 / 21 * 100},
		{"fragmentation with expandable segments already on", "fragmentation", func(b *snapbuild.SnapBuilder) {
			b.Segment(snapbuild.SegOpts{Expandable: true}, snapbuild.Live(40*MiB, 40*MiB, stRelu), snapbuild.Free(10*MiB))
			b.Segment(snapbuild.SegOpts{Expandable: true}, snapbuild.Live(40*MiB, 40*MiB, stRelu), snapbuild.Free(10*MiB))
			b.Segment(snapbuild.SegOpts{Expandable: true}, snapbuild.Live(1*MiB, 1*MiB, stRelu), snapbuild.Free(1*MiB))
		}, false, 0},
		// 1 MiB pending of 100 MiB reserved = 1 % → fires at the threshold.
		{"pending free at 1%", "pending-free", func(b *snapbuild.SnapBuilder) {
			b.Segment(snapbuild.SegOpts{}, snapbuild.Live(99*MiB, 99*MiB, stRelu), snapbuild.Pending(1*MiB, 1*MiB, stRelu))
		}, true, 1},
		{"pending free under 1%", "pending-free", func(b *snapbuild.SnapBuilder) {
			b.Segment(snapbuild.SegOpts{}, snapbuild.Live(99*MiB+512, 99*MiB+512, stRelu), snapbuild.Pending(1*MiB-512, 1*MiB-512, stRelu))
		}, false, 0},
		{"100 small segments", "small-pool-segments", small(100), false, 0},
		{"101 small segments", "small-pool-segments", small(101), true, 101},
		// rounding 5 MiB of 100 MiB = 5 % → not above 5.
		{"rounding at 5%", "rounding-waste", func(b *snapbuild.SnapBuilder) {
			b.Segment(snapbuild.SegOpts{}, snapbuild.Live(100*MiB, 95*MiB, stRelu))
		}, false, 0},
		{"rounding above 5%", "rounding-waste", func(b *snapbuild.SnapBuilder) {
			b.Segment(snapbuild.SegOpts{}, snapbuild.Live(100*MiB, 95*MiB-512, stRelu))
		}, true, float64(5*MiB+512) / float64(100*MiB) * 100},
		{"private pool at 10%", "private-pools", func(b *snapbuild.SnapBuilder) {
			b.Segment(snapbuild.SegOpts{}, snapbuild.Live(90*MiB, 90*MiB, stRelu))
			b.Segment(snapbuild.SegOpts{Pool: snapshot.PoolID{0, 1}}, snapbuild.Live(10*MiB, 10*MiB, stRelu))
		}, false, 0},
		{"private pool above 10%", "private-pools", func(b *snapbuild.SnapBuilder) {
			b.Segment(snapbuild.SegOpts{}, snapbuild.Live(89*MiB, 89*MiB, stRelu))
			b.Segment(snapbuild.SegOpts{Pool: snapshot.PoolID{0, 1}}, snapbuild.Live(11*MiB, 11*MiB, stRelu))
		}, true, 11},
		// No trace at all, or one event (torch 2.0's default trace_alloc_max_entries=1): no history, and the
		// report says how to record it; an allocation and its free are history.
		{"no trace", "no-allocation-history", func(b *snapbuild.SnapBuilder) {
			b.Segment(snapbuild.SegOpts{}, snapbuild.Live(1*MiB, 1*MiB, stRelu))
		}, true, 0},
		{"a trace of one event", "no-allocation-history", func(b *snapbuild.SnapBuilder) {
			b.Segment(snapbuild.SegOpts{}, snapbuild.Live(1*MiB, 1*MiB, stRelu))
			b.Event(0, snapbuild.Ev(snapshot.ActionAlloc, 1, 100, stRelu))
		}, true, 1},
		{"a trace of two events", "no-allocation-history", func(b *snapbuild.SnapBuilder) {
			b.Segment(snapbuild.SegOpts{}, snapbuild.Live(1*MiB, 1*MiB, stRelu))
			b.Event(0, snapbuild.Ev(snapshot.ActionAlloc, 1, 100, stRelu), snapbuild.Ev(snapshot.ActionFreeCompleted, 1, 100, stRelu))
		}, false, 0},
		{"no oom", "oom", func(b *snapbuild.SnapBuilder) {
			b.Segment(snapbuild.SegOpts{}, snapbuild.Live(1*MiB, 1*MiB, stRelu))
			b.Event(0, snapbuild.Ev(snapshot.ActionAlloc, 1, 100, stRelu))
		}, false, 0},
		// At the oom 1 MiB (live before the trace) is allocated and 8 MiB requested; the device offered the 1 MiB
		// segment plus 1 MiB free, so the step needed 9 − 2 = 7 MiB more than it had.
		{"oom", "oom", func(b *snapbuild.SnapBuilder) {
			b.Segment(snapbuild.SegOpts{}, snapbuild.Live(1*MiB, 1*MiB, stRelu))
			b.Event(0, snapbuild.Entry{TraceEntry: snapshot.TraceEntry{Action: snapshot.ActionOOM, Size: 8 * MiB}, Extra: snapshot.TraceExtra{DeviceFree: 1 * MiB}})
		}, true, float64(7 * MiB)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := snapbuild.NewSnap(1)
			tc.build(b)
			r := analyzeBuilt(t, b)
			rec := hasRec(r, findings.ID(tc.id))
			if (rec != nil) != tc.fire {
				t.Fatalf("%s fired=%v, want %v; recommendations %+v", tc.id, rec != nil, tc.fire, r.Recommendations)
			}
			if rec == nil {
				return
			}
			if math.Abs(rec.Value-tc.value) > 1e-9 || rec.Evidence == "" || rec.Advice == "" || rec.Severity == "" {
				t.Errorf("%s: value %v (want %v), evidence %q", tc.id, rec.Value, tc.value, rec.Evidence)
			}
			if tc.id == "fragmentation" && !strings.Contains(rec.Advice, "expandable_segments:True") {
				t.Errorf("fragmentation advice %q", rec.Advice)
			}
		})
	}
}

func TestInconsistentSnapshotWarns(t *testing.T) {
	b := snapbuild.NewSnap(1)
	b.Segment(snapbuild.SegOpts{}, snapbuild.Live(4*MiB, 4*MiB, stRelu), snapbuild.Free(1*MiB), snapbuild.Free(1*MiB))
	b.S.Segments[0].TotalSize = 8 * MiB // blocks sum to 6 MiB
	b.S.Segments[0].AllocatedSize = 1
	b.Segment(snapbuild.SegOpts{}, snapbuild.Live(1*MiB, 2*MiB, stRelu))
	r := analyzeBuilt(t, b)
	for _, want := range []string{"blocks sum to 6291456 but total_size is 8388608", "allocated_size 1", "both inactive", "requested 2097152 > size 1048576"} {
		if !slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, want) }) {
			t.Errorf("no warning containing %q in %q", want, r.Warnings)
		}
	}
}

func TestAnalyzeErrors(t *testing.T) {
	if _, err := Analyze(context.Background(), &load.Input{Path: "x.log", Format: "megatron-log"}, Options{}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("non-snapshot input: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b, _ := replaySnapshot()
	if _, err := Analyze(ctx, testutil.Input(b, "a.pickle"), Options{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
	// An empty snapshot is valid: zero totals, no peak, empty (not nil) lists for JSON.
	r, err := Analyze(context.Background(), testutil.Input(snapbuild.NewSnap(1), "empty.pickle"), Options{})
	if err != nil {
		t.Fatalf("empty snapshot: %v", err)
	}
	if sp := partOf[*report.SnapshotReport](t, r); sp.ReservedBytes != 0 || r.Peak != nil || r.Categories == nil || r.Top == nil || r.Recommendations == nil {
		t.Errorf("empty snapshot: %+v, %v", r, err)
	}
}

func TestTopNOption(t *testing.T) {
	b := snapbuild.NewSnap(1)
	for i := range 10 {
		b.Segment(snapbuild.SegOpts{}, snapbuild.Live(int64(i+1)*MiB, int64(i+1)*MiB, stRelu))
	}
	r, err := Analyze(context.Background(), testutil.Input(b, "a.pickle"), Options{TopN: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Top) != 3 || r.Top[0].Size != 10*MiB || r.Top[2].Size != 8*MiB {
		t.Errorf("top %+v", r.Top)
	}
}

func TestUserRulesReachReport(t *testing.T) {
	rules, err := categorize.Parse("r.yaml", []byte("new_categories: [MyAttention]\nrules:\n  - name: my-attn\n    category: MyAttention\n    priority: 99\n    file: [layers/attention.py]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Analyze(context.Background(), testutil.Input(totalsSnapshot(), "a.pickle"), Options{Rules: rules})
	if err != nil {
		t.Fatal(err)
	}
	if r.Categories[0].Name != "MyAttention" || r.Top[0].Rule != "my-attn" {
		t.Errorf("categories %+v top %+v", r.Categories, r.Top[0])
	}
}

// BenchmarkAnalyzeLarge analyzes a built snapshot of 200k blocks and a 400k-event trace from 500 distinct stacks.
func BenchmarkAnalyzeLarge(b *testing.B) {
	sb := snapbuild.NewSnap(1)
	stacks := make([]*snapshot.Stack, 500)
	for i := range stacks {
		stacks[i] = snapbuild.Stack(sp+"torch/nn/functional.py:1704:relu", fmt.Sprintf("/home/dev/proj/model%d.py:%d:forward", i%40, i),
			sp+"torch/nn/modules/module.py:1747:_call_impl", "/home/dev/proj/train.py:90:main")
	}
	for s := range 20000 {
		var blocks []snapbuild.BlockSpec
		for k := range 10 {
			if k%2 == 1 {
				blocks = append(blocks, snapbuild.Free(512*KiB))
			} else {
				blocks = append(blocks, snapbuild.Live(2*MiB, 2*MiB-100, stacks[(s*10+k)%len(stacks)]))
			}
		}
		sb.Segment(snapbuild.SegOpts{}, blocks...)
	}
	for e := range 100000 {
		addr := uint64(0x100000000 + e*4096)
		st := stacks[e%len(stacks)]
		sb.Event(0, snapbuild.Ev(snapshot.ActionAlloc, addr, 1*MiB, st), snapbuild.Ev(snapshot.ActionAlloc, addr+1, 1*MiB, st),
			snapbuild.Ev(snapshot.ActionFreeRequested, addr, 1*MiB, st), snapbuild.Ev(snapshot.ActionFreeCompleted, addr, 1*MiB, st))
	}
	in := testutil.Input(sb, "big.pickle")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Analyze(context.Background(), in, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestReplayMissingFreeCompleted(t *testing.T) {
	// Traces recorded with skip_actions=["free_completed"]: each free_requested ends its allocation, also when the
	// address is reused; an alloc over a block that was never freed is reported.
	b := snapbuild.NewSnap(1)
	b.Event(0,
		snapbuild.Ev(snapshot.ActionAlloc, 0x1000, 100, stRelu),
		snapbuild.Ev(snapshot.ActionFreeRequested, 0x1000, 100, stRelu),
		snapbuild.Ev(snapshot.ActionAlloc, 0x1000, 300, stRelu),
		snapbuild.Ev(snapshot.ActionAlloc, 0x1000, 50, stRelu),
	)
	r := analyzeBuilt(t, b)
	sp := partOf[*report.SnapshotReport](t, r)
	// 100 | 0 (ended by its free_requested) | 300 | 50 (the 300 ends where the 50 replaces it)
	if got := sp.Timeline[0].Allocated; !slices.Equal(got, []int64{100, 0, 300, 50}) {
		t.Errorf("allocated %v", got)
	}
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "alloc at 0x1000, which is still allocated since event 2") {
		t.Errorf("warnings %q", r.Warnings)
	}
}

// TestNoHistorySaysHowToRecord: a snapshot dumped without history gets one finding that names the bytes left
// without a stack (Unknown) and the call that records the history.
func TestNoHistorySaysHowToRecord(t *testing.T) {
	b := snapbuild.NewSnap(1)
	b.Segment(snapbuild.SegOpts{}, snapbuild.Live(4*MiB, 4*MiB, stRelu), snapbuild.Live(12*MiB, 12*MiB, nil))
	r := analyzeBuilt(t, b)
	rec := hasRec(r, findings.NoHistory)
	if rec == nil {
		t.Fatalf("no %s finding in %+v", findings.NoHistory, r.Recommendations)
	}
	// 12 MiB of the 16 MiB allocated have no stack: 75 %.
	want := "the snapshot holds 0 trace events, so it has no timeline, peak, leak check or OOM explanation, and 12.0 MiB of the 16.0 MiB allocated (75.00 %) has no stack to tell what it is (Unknown)"
	if rec.Evidence != want {
		t.Errorf("evidence\n%s\nwant\n%s", rec.Evidence, want)
	}
	if !strings.Contains(rec.Advice, "torch.cuda.memory._record_memory_history(max_entries=100000)") || !strings.Contains(rec.Advice, "_dump_snapshot") {
		t.Errorf("advice %q does not say how to record the history", rec.Advice)
	}
}

// TestTraceActionsCounted: the report counts every trace event by action, summed over the devices, with an action
// memscan does not know counted under the name the file gave it.
func TestTraceActionsCounted(t *testing.T) {
	b, _ := replaySnapshot()
	s := b.S
	tr := s.DeviceTraces[0]
	// A second device with a copy of the trace, one of whose events is an action of a later PyTorch.
	second := append([]snapshot.TraceEntry(nil), tr...)
	second[0] = snapshot.TraceEntry{Action: snapshot.ActionOther, Extra: snapshot.NewTraceTables(s).Extra(snapshot.TraceExtra{OtherAction: "future_action"})}
	s.DeviceTraces = append(s.DeviceTraces, second)
	want := map[string]int{"future_action": 1}
	for i, dev := range [][]snapshot.TraceEntry{tr, second} {
		for j := range dev {
			if i == 1 && j == 0 {
				continue
			}
			want[dev[j].Action.String()]++
		}
	}
	r, err := AnalyzeSnapshot(context.Background(), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := partOf[*report.SnapshotReport](t, r).TraceActions; !maps.Equal(got, want) {
		t.Errorf("trace actions %v, want %v", got, want)
	}
}
