package analyze

import (
	"bytes"
	"cmp"
	"context"
	"slices"
	"testing"

	"github.com/memscan/memscan/allocator"
	"github.com/memscan/memscan/internal/gen"
	"github.com/memscan/memscan/internal/replay"
	"github.com/memscan/memscan/internal/traingen"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/snapshot"
)

// TestTimelineDetailRebuildsTheReplay: the detail's blocks and reserved changes rebuild, after every event, the
// allocated and reserved memory that ReplayDevice computes, and their maximum is the report's peak.
func TestTimelineDetailRebuildsTheReplay(t *testing.T) {
	var buf bytes.Buffer
	if _, err := gen.Write(&buf, gen.Config{Seed: 3, Entries: 6000, Stacks: gen.StacksPython, ShareStack: true}); err != nil {
		t.Fatal(err)
	}
	generated, err := snapshot.DecodePickle(context.Background(), "generated", bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*snapshot.Snapshot{
		"generated": generated,
		"training":  traingen.TrainingLoop{Iterations: 3, Layers: 4, WeightBytes: 8 << 20, ActivationBytes: 32 << 20, LogitsBytes: 64 << 20}.Build(),
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			rep, err := AnalyzeSnapshot(ctx, s, Options{})
			if err != nil {
				t.Fatal(err)
			}
			part := rep.Part.(*report.SnapshotReport)
			if len(part.Details) != 1 {
				t.Fatalf("%d details, want 1", len(part.Details))
			}
			d := &part.Details[0]
			want, err := replay.ReplayDevice(ctx, s, d.Device)
			if err != nil {
				t.Fatal(err)
			}
			alloc := d.Allocated()
			res := d.InitialReserved
			k := 0
			var peak int64 = d.InitialAllocated
			for j := range d.Events {
				for k < len(d.ReservedEvent) && int(d.ReservedEvent[k]) == j {
					res += d.ReservedDelta[k]
					k++
				}
				if alloc[j] != want.Allocated[j] || res != want.Reserved.At(j) {
					t.Fatalf("event %d: detail gives allocated %d reserved %d, the replay %d and %d", j, alloc[j], res, want.Allocated[j], want.Reserved.At(j))
				}
				peak = max(peak, alloc[j])
			}
			if peak != rep.Peak.Bytes {
				t.Errorf("detail peak %d, report peak %d", peak, rep.Peak.Bytes)
			}
			if len(d.TimeUS) != d.Events || d.TimeUS[len(d.TimeUS)-1] != s.DeviceTraces[d.Device][d.Events-1].TimeUS {
				t.Errorf("event times not kept")
			}
			// Every index points into its table, and every stack of the generator is Python frames.
			stacked := 0
			for i := range d.Start {
				if int(d.Site[i]) >= len(d.Sites) || int(d.Reason[i]) >= len(d.Reasons) || int(d.Stack[i]) >= len(d.StackStart)-1 {
					t.Fatalf("block %d indexes out of its tables", i)
				}
				if st := d.Stack[i]; st >= 0 {
					stacked++
					for _, f := range d.StackFrames[d.StackStart[st]:d.StackStart[st+1]] {
						if !bytes.Contains([]byte(d.Frames[f]), []byte(".py:")) {
							t.Fatalf("frame %q is not file:line:function", d.Frames[f])
						}
					}
				}
			}
			if stacked == 0 {
				t.Error("no block has a stack")
			}
			checkEnvelope(t, d, want, rep.Peak.Bytes)
			checkIndex(t, d, want)
		})
	}
}

// checkEnvelope: every bucket's extremes are those of the replay's series over its events, its category stack
// adds up to its maximum, and the highest bucket is the peak; for the whole trace and for a zoomed range.
func checkEnvelope(t *testing.T, d *report.TimelineDetail, want *replay.DeviceTrace, peak int64) {
	t.Helper()
	for _, r := range [][3]int{{0, d.Events, 97}, {d.Events / 3, d.Events / 2, 50}, {10, 30, 100}} {
		e := d.Envelope(r[0], r[1], r[2])
		if len(e.Start) != min(r[2], r[1]-r[0]) {
			t.Fatalf("range %v: %d buckets", r, len(e.Start))
		}
		var top int64
		for k := range e.Start {
			end := e.To
			if k+1 < len(e.Start) {
				end = e.Start[k+1]
			}
			lo, hi, rmax := want.Allocated[e.Start[k]], want.Allocated[e.Start[k]], want.Reserved.At(int(e.Start[k]))
			for j := e.Start[k]; j < end; j++ {
				lo, hi, rmax = min(lo, want.Allocated[j]), max(hi, want.Allocated[j]), max(rmax, want.Reserved.At(j))
			}
			if e.AllocMin[k] != lo || e.AllocMax[k] != hi || e.ReservedMax[k] != rmax || e.ReservedEnd[k] != want.Reserved.At(end-1) {
				t.Fatalf("range %v bucket %d: min %d max %d reserved %d/%d, the replay %d %d %d/%d", r, k, e.AllocMin[k], e.AllocMax[k], e.ReservedMax[k], e.ReservedEnd[k], lo, hi, rmax, want.Reserved.At(end-1))
			}
			if want.Allocated[e.Peak[k]] != hi {
				t.Fatalf("range %v bucket %d: its peak event %d is not at its maximum", r, k, e.Peak[k])
			}
			var stack int64
			for c := range e.ByCategory {
				stack += e.ByCategory[c][k]
			}
			if stack != hi {
				t.Fatalf("range %v bucket %d: the categories add up to %d, the maximum is %d", r, k, stack, hi)
			}
			top = max(top, hi)
		}
		if r[0] == 0 && r[1] == d.Events && top != peak {
			t.Errorf("the envelope's highest bucket is %d, the peak %d", top, peak)
		}
	}
}

// checkIndex: at a spread of moments the index's memory, live bytes per category and largest live blocks are what
// a scan of every block finds.
func checkIndex(t *testing.T, d *report.TimelineDetail, want *replay.DeviceTrace) {
	t.Helper()
	x := d.Index()
	for _, j := range []int{0, 1, d.Events / 7, d.Events / 2, d.Events - 2, d.Events - 1, 1023, 1024} { // either side of the index's first stored category vector (every 1024 events)
		if j < 0 || j >= d.Events {
			continue
		}
		if x.Allocated(j) != want.Allocated[j] || x.Reserved(j) != want.Reserved.At(j) {
			t.Fatalf("event %d: index says %d/%d, the replay %d/%d", j, x.Allocated(j), x.Reserved(j), want.Allocated[j], want.Reserved.At(j))
		}
		cats := make([]int64, len(d.Categories))
		var sizes []int64
		for i := range d.Start {
			if int(d.Start[i]) <= j && j < int(d.End[i]) {
				cats[d.SiteCategory[d.Site[i]]] += d.Size[i]
				sizes = append(sizes, d.Size[i])
			}
		}
		for c, v := range x.CategoriesAt(j) {
			if v != cats[c] {
				t.Fatalf("event %d: category %s holds %d by the index, %d by a scan", j, d.Categories[c], v, cats[c])
			}
		}
		slices.SortFunc(sizes, func(a, b int64) int { return cmp.Compare(b, a) })
		top := x.LiveAt(j, 5)
		if len(top) != min(5, len(sizes)) {
			t.Fatalf("event %d: %d largest blocks, %d live", j, len(top), len(sizes))
		}
		for k, b := range top {
			if d.Size[b] != sizes[k] || int(d.Start[b]) > j || j >= int(d.End[b]) {
				t.Fatalf("event %d: block %d of the largest is %d bytes (live %d–%d), want %d", j, k, d.Size[b], d.Start[b], d.End[b], sizes[k])
			}
		}
	}
}

// TestTimelineDetailWhatIf: with --alloc-conf the detail carries the what-if's reserved memory at every change,
// and the index reads it after any event as the replay's own timeline does.
func TestTimelineDetailWhatIf(t *testing.T) {
	s := traingen.TrainingLoop{Iterations: 3, Layers: 4, WeightBytes: 8 << 20, ActivationBytes: 32 << 20, LogitsBytes: 64 << 20}.Build()
	conf, err := allocator.ParseConf("expandable_segments:True")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := AnalyzeSnapshot(context.Background(), s, Options{Allocator: AllocatorOptions{WhatIf: &conf}})
	if err != nil {
		t.Fatal(err)
	}
	p := rep.Part.(*report.SnapshotReport)
	d := &p.Details[0]
	if len(d.WhatIfEvent) == 0 || len(d.WhatIfEvent) != len(p.AllocatorReplay.WhatIfTimeline) {
		t.Fatalf("%d what-if changes in the detail, %d in the replay", len(d.WhatIfEvent), len(p.AllocatorReplay.WhatIfTimeline))
	}
	x := d.Index()
	idx := []int{0, d.Events / 3, d.Events / 2, d.Events - 1}
	want := p.AllocatorReplay.WhatIfTimeline.ReservedAt(idx)
	for k, j := range idx {
		if got, _ := x.WhatIf(j); got != want[k] {
			t.Errorf("event %d: what-if reserved %d, the replay's timeline says %d", j, got, want[k])
		}
	}
	e := x.Envelope(0, d.Events, 10)
	if last, _ := x.WhatIf(d.Events - 1); e.WhatIfEnd[len(e.WhatIfEnd)-1] != last {
		t.Errorf("the last bucket's what-if is %d, the trace ends at %d", e.WhatIfEnd[len(e.WhatIfEnd)-1], last)
	}
}

func TestNoTimelineDetail(t *testing.T) {
	s := traingen.TrainingLoop{Iterations: 2, Layers: 2, WeightBytes: 8 << 20, ActivationBytes: 32 << 20, LogitsBytes: 64 << 20}.Build()
	rep, err := AnalyzeSnapshot(context.Background(), s, Options{NoTimelineDetail: true})
	if err != nil {
		t.Fatal(err)
	}
	if p := rep.Part.(*report.SnapshotReport); len(p.Details) != 0 || len(p.Timeline) == 0 {
		t.Errorf("%d details and %d timelines, want none and the downsampled one", len(p.Details), len(p.Timeline))
	}
}

func TestMaxTimelineDetailEvents(t *testing.T) {
	s := traingen.TrainingLoop{Iterations: 2, Layers: 2, WeightBytes: 8 << 20, ActivationBytes: 32 << 20, LogitsBytes: 64 << 20}.Build()
	n := len(s.DeviceTraces[0])
	for _, tc := range []struct {
		max  int
		want int
	}{{n, 1}, {n - 1, 0}, {0, 1}} {
		rep, err := AnalyzeSnapshot(context.Background(), s, Options{MaxTimelineDetailEvents: tc.max})
		if err != nil {
			t.Fatal(err)
		}
		if got := len(rep.Part.(*report.SnapshotReport).Details); got != tc.want {
			t.Errorf("a trace of %d events with a bound of %d: %d details, want %d", n, tc.max, got, tc.want)
		}
	}
	if DetailEventsPerInput(0) != TimelineDetailEvents || DetailEventsPerInput(4) != TimelineDetailEvents/4 {
		t.Error("DetailEventsPerInput does not share the budget")
	}
}

// TestInternStack: a detail numbers its frames by site. A frame met again keeps its number, frames of different
// files that share a site (one module under two site-packages) share one, a Python stack drops its native frames,
// and a stack keeps at most maxDetailFrames.
func TestInternStack(t *testing.T) {
	var d report.TimelineDetail
	d.StackStart = []int32{0}
	frames := frameSites{byName: map[string]int32{}, byFrame: map[snapshot.Frame]int32{}}
	fr := func(file string, line int, name string) snapshot.Frame {
		return snapshot.Frame{Filename: file, Line: line, Name: name}
	}
	linear := fr("/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py", 125, "forward")
	linear2 := fr("/opt/conda/lib/python3.11/dist-packages/torch/nn/modules/linear.py", 125, "forward")
	model := fr("/home/user/model.py", 40, "forward")
	native := fr("??", 0, "at::native::empty_cuda")
	stacks := []*snapshot.Stack{
		{Frames: []snapshot.Frame{linear, native, model}},
		{Frames: []snapshot.Frame{linear2, model}},
		{Frames: []snapshot.Frame{native}},
		nil,
	}
	var long snapshot.Stack
	for i := range maxDetailFrames + 5 {
		long.Frames = append(long.Frames, fr("/home/user/deep.py", i, "f"))
	}
	stacks = append(stacks, &long)
	var got []int32
	for _, s := range stacks {
		got = append(got, internStack(&d, s, frames))
	}
	if want := []int32{0, 1, 2, -1, 3}; !slices.Equal(got, want) {
		t.Fatalf("stack indices %v, want %v", got, want)
	}
	wantFrames := []string{"torch/nn/modules/linear.py:125:forward", "/home/user/model.py:40:forward", "??:0:at::native::empty_cuda"}
	if !slices.Equal(d.Frames[:3], wantFrames) {
		t.Errorf("frames %q, want %q first", d.Frames[:3], wantFrames)
	}
	frameLists := [][]int32{}
	for k := 0; k+1 < len(d.StackStart); k++ {
		frameLists = append(frameLists, d.StackFrames[d.StackStart[k]:d.StackStart[k+1]])
	}
	if !slices.Equal(frameLists[0], []int32{0, 1}) || !slices.Equal(frameLists[1], []int32{0, 1}) || !slices.Equal(frameLists[2], []int32{2}) ||
		len(frameLists[3]) != maxDetailFrames {
		t.Errorf("stack frames %v", frameLists)
	}
}
