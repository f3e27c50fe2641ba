package allocator

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/memscan/memscan/snapshot"
)

// Result is one replay of a trace under one configuration.
type Result struct {
	// Settings is the configuration replayed, in PYTORCH_CUDA_ALLOC_CONF syntax ("" for the default).
	Settings string
	// Capacity is the usable device memory the replay assumed (0: unlimited); CapacitySource says where it came
	// from: "oom event", "input" or "none (unlimited)".
	Capacity       int64
	CapacitySource string
	// PeakReserved is the highest reserved memory; PeakIndex the first event after which it was reached (−1:
	// before the first event), PeakTimeUS that event's time (0 when unknown).
	PeakReserved int64
	PeakIndex    int
	PeakTimeUS   int64
	// PeakAllocated is the highest block bytes allocated (each request rounded and, where the remainder was too
	// small to split, its whole block): torch.cuda.max_memory_allocated's unit, over the replayed window.
	PeakAllocated int64
	// Allocated is the block bytes allocated after each event, when ReplayOptions.AllocatedSeries asked for it
	// (torch.cuda.memory_allocated at every moment): per-iteration peaks and phase boundaries in torch's unit.
	Allocated *BlockSeries
	// PeakFragmentation is what reserved memory consisted of right after the request that reached the peak.
	PeakFragmentation Fragmentation
	FinalReserved     int64
	FinalAllocated    int64
	// Timeline holds reserved memory after every event that changed it, starting with the state before the
	// first event (Index −1).
	Timeline Timeline
	// Created are the segments (segment_alloc) and mappings (segment_map) the model made, in order.
	Created []SegmentEvent
	// EmptyCacheCalls is how many empty_cache calls of the trace were replayed; Retries how many requests found
	// the device full and released every cached segment to try again (PyTorch's num_alloc_retries).
	EmptyCacheCalls, Retries int
	// Failed are the allocations the model could not satisfy (a what-if that runs out of memory); they are
	// skipped and their frees ignored.
	Failed []Failure
	// OOMs are the trace's oom events and whether the model failed there too.
	OOMs []OOMCheck
	// AddressMismatches counts allocations placed at another address than the trace's while the model still
	// used the trace's segment addresses; FirstAddressMismatch is the first such event (−1: none).
	AddressMismatches    int
	FirstAddressMismatch int
	// FirstDivergence is the first alloc, free or oom event after which the model's reserved memory differs
	// from what the trace's segment events add up to, else the recorded peak the model misses, else the last
	// event when the final reserved memory differs (−1: never). Under the recorded settings a faithful replay
	// never diverges; under other settings it says where the what-if departs from the recording.
	FirstDivergence int
	// Partial is true when the trace did not start at the process's first allocation or the replay met events
	// it could not explain; Issues say which and where.
	Partial bool
	Issues  []Issue
}

// Sample is reserved memory after trace event Index.
type Sample struct {
	Index    int   `json:"index" msgpack:"index"`
	TimeUS   int64 `json:"time_us,omitempty" msgpack:"time_us,omitempty"`
	Reserved int64 `json:"reserved_bytes" msgpack:"reserved_bytes"`
}

// Failure is an allocation the model could not satisfy.
type Failure struct {
	Index    int   `json:"index" msgpack:"index"`
	Size     int64 `json:"size" msgpack:"size"`
	Reserved int64 `json:"reserved_bytes" msgpack:"reserved_bytes"`
}

// OOMCheck is one oom event of the trace.
type OOMCheck struct {
	Index      int   `json:"index" msgpack:"index"`
	Size       int64 `json:"size" msgpack:"size"`
	Reproduced bool  `json:"reproduced" msgpack:"reproduced"`
}

// PartialReason is the issues in one line, "" when the replay is complete.
func (r *Result) PartialReason() string {
	if !r.Partial {
		return ""
	}
	s := ""
	for i, is := range r.Issues {
		if i > 0 {
			s += "; "
		}
		s += is.String()
	}
	return s
}

// ReplayOptions are what a replay needs besides the recording and settings.
type ReplayOptions struct {
	// Capacity is the usable device memory; 0 takes the recording's oom capacity, else unlimited.
	Capacity int64
	// TotalMemory is the device's total memory (for memory fractions and expandable ranges); 0: the capacity.
	TotalMemory int64
	// AllocatedSeries keeps the block bytes allocated after every event (Result.Allocated): 8 bytes an event.
	// ReplaySnapshot keeps it for the baseline only.
	AllocatedSeries bool
}

// Replay drives a fresh model under cfg with the recorded trace: allocs (re-rounded) and frees as the trace's
// free_completed events return blocks, empty_cache where the trace called it, and each oom as a request that
// must fail. It fails only for a configuration the model cannot run or a cancelled context; what the trace
// cannot explain makes the result partial.
func Replay(ctx context.Context, rec *Recording, cfg Config, opt ReplayOptions) (*Result, error) {
	res, _, err := replayModel(ctx, rec, cfg, opt, false)
	return res, err
}

// replay is Replay, also returning the model in its final state (for tests of its structure), its live blocks in
// the live map under their addresses.
func replay(ctx context.Context, rec *Recording, cfg Config, opt ReplayOptions) (*Result, *Allocator, error) {
	return replayModel(ctx, rec, cfg, opt, true)
}

// replayModel is Replay; keep puts the model's live blocks in its live map at the end.
func replayModel(ctx context.Context, rec *Recording, cfg Config, opt ReplayOptions, keep bool) (*Result, *Allocator, error) {
	res := &Result{Settings: cfg.String(), PeakIndex: -1, FirstAddressMismatch: -1, FirstDivergence: -1, CapacitySource: "none (unlimited)"}
	switch {
	case rec.Capacity > 0 && opt.Capacity <= 0:
		res.Capacity, res.CapacitySource = rec.Capacity, "oom event"
	case opt.Capacity > 0:
		res.Capacity, res.CapacitySource = opt.Capacity, "input"
	}
	var a *Allocator
	diverged := false
	hint := func(kind EventKind, size int64) (uint64, bool) {
		k := a.created
		if diverged || k >= len(rec.Created) || rec.Created[k].Kind != kind || rec.Created[k].Size != size {
			diverged = true
			return 0, false
		}
		return rec.Created[k].Addr, true
	}
	a, err := New(cfg, Options{Capacity: res.Capacity, TotalMemory: opt.TotalMemory, Address: hint})
	if err != nil {
		return nil, nil, err
	}
	res.Issues = append(res.Issues, rec.Issues...)
	// The live blocks by address slot (Recording.slot), and per slot whether its next free is to be skipped: its
	// alloc failed (a what-if out of memory) or it was live at the start where the model could not place it.
	live := make([]*block, len(rec.addrs))
	// One flag for both reasons: they are only ever read together, and one array is one cache miss per event
	// where two were two (the slots are met in no order).
	skip := make([]bool, len(rec.addrs))
	for _, k := range rec.ignoreSlots {
		skip[k] = true
	}
	place := func(lb seedBlock, b *block) {
		if lb.slot >= 0 {
			live[lb.slot] = b
		} else {
			a.live[lb.id] = b // never freed by the trace
		}
	}
	for _, s := range rec.initial {
		for _, b := range a.seed(s, place) {
			if b.slot >= 0 {
				skip[b.slot] = true
			}
			res.Issues = addIssue(res.Issues, -1, "allocation at 0x%x live at the start overlaps another; its free is skipped", b.addr)
		}
	}
	startFrag := a.Fragmentation()
	res.Timeline = append(res.Timeline, Sample{Index: -1, Reserved: a.reserved})
	res.PeakReserved, res.PeakAllocated = a.reserved, a.allocated
	nextEmpty := 0
	trace := rec.Trace
	recorded := rec.InitialReserved
	if opt.AllocatedSeries {
		res.Allocated = newBlockSeries(len(trace))
	}
	for i := range trace {
		// The previous event's allocated bytes, written here so that every path through the loop (continue
		// included) records it.
		if res.Allocated != nil && i > 0 {
			res.Allocated.set(i-1, a.allocated)
		}
		if i&0xfff == 0 {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
		}
		e := &trace[i]
		before := a.reserved
		switch e.Action {
		case snapshot.ActionAlloc:
			if e.Size <= 0 {
				res.Issues = addIssue(res.Issues, i, "alloc of %d bytes", e.Size)
				continue
			}
			k := rec.slot[i]
			if old := live[k]; old != nil {
				res.Issues = addIssue(res.Issues, i, "alloc at 0x%x, which is still allocated (its free is missing); the old block is freed first", e.Addr)
				live[k] = nil
				a.release(old)
			}
			skip[k] = false
			switch b, err := a.malloc(e.Size, rec.stream(e), rec.pool(e)); {
			case isOOM(err):
				skip[k] = true
				res.Failed = append(res.Failed, Failure{Index: i, Size: e.Size, Reserved: a.reserved})
			case err != nil:
				return nil, nil, fmt.Errorf("event %d: %w", i, err)
			default:
				live[k] = b
				if !diverged && b.addr != e.Addr {
					if res.AddressMismatches == 0 {
						res.FirstAddressMismatch = i
					}
					res.AddressMismatches++
				}
			}
		case rec.freeAction:
			k := rec.slot[i]
			if skip[k] {
				skip[k] = false
				continue
			}
			if b := live[k]; b != nil {
				live[k] = nil
				a.release(b)
			} else {
				res.Issues = addIssue(res.Issues, i, "%s of 0x%x, which was never allocated", e.Action, e.Addr)
			}
		case snapshot.ActionSegmentFree, snapshot.ActionSegmentUnmap:
			if nextEmpty < len(rec.EmptyCaches) && rec.EmptyCaches[nextEmpty] == i {
				nextEmpty++
				res.EmptyCacheCalls++
				a.EmptyCache()
			}
		case snapshot.ActionOOM:
			b, err := a.malloc(max(e.Size, 1), rec.stream(e), rec.pool(e))
			res.OOMs = append(res.OOMs, OOMCheck{Index: i, Size: e.Size, Reproduced: err != nil})
			if err == nil {
				a.release(b) // the real request failed: nothing stays allocated
			}
		}
		recorded += segDelta(e)
		if res.FirstDivergence < 0 && a.reserved != recorded && (e.Action == snapshot.ActionAlloc || e.Action == rec.freeAction || e.Action == snapshot.ActionOOM) {
			res.FirstDivergence = i
		}
		if a.reserved != before {
			res.Timeline = append(res.Timeline, Sample{Index: i, TimeUS: e.TimeUS, Reserved: a.reserved})
		}
		if a.reserved > res.PeakReserved {
			res.PeakReserved, res.PeakIndex, res.PeakTimeUS = a.reserved, i, e.TimeUS
		}
		res.PeakAllocated = max(res.PeakAllocated, a.allocated)
	}
	if n := res.Allocated.Len(); n > 0 {
		res.Allocated.set(n-1, a.allocated)
	}
	// Segment events the model never matched at an alloc or free (say a segment made and freed in between)
	// still show in the peak or the final state.
	if res.FirstDivergence < 0 {
		switch {
		case res.PeakReserved < rec.PeakReserved:
			res.FirstDivergence = rec.PeakIndex
		case res.PeakReserved > rec.PeakReserved:
			res.FirstDivergence = res.PeakIndex
		case a.reserved != recorded:
			res.FirstDivergence = len(trace) - 1
		}
	}
	res.PeakFragmentation = a.PeakFragmentation()
	if res.PeakIndex < 0 {
		res.PeakFragmentation = startFrag
	}
	res.FinalReserved, res.FinalAllocated, res.Retries = a.reserved, a.allocated, a.retries
	for _, ev := range a.events {
		if ev.Kind.Creates() {
			res.Created = append(res.Created, ev)
		}
	}
	res.Partial = rec.Partial || len(res.Issues) > 0
	if keep {
		for k, b := range live {
			if b != nil {
				a.live[rec.addrs[k]] = b
			}
		}
	}
	return res, a, nil
}

// FirstSizeMismatch is the first position where two segment-creation sequences differ in kind or size, or where
// one ends before the other (−1: they are the same): how a replay's Created is checked against a recording's.
func FirstSizeMismatch(a, b []SegmentEvent) int {
	for i := range max(len(a), len(b)) {
		if i >= len(a) || i >= len(b) || a[i].Size != b[i].Size || a[i].Kind != b[i].Kind {
			return i
		}
	}
	return -1
}

// isOOM reports an *OOMError (without making a nil error escape, which would cost one allocation per alloc).
func isOOM(err error) bool {
	if err == nil {
		return false
	}
	var oom *OOMError
	return errors.As(err, &oom)
}

// Timeline is reserved memory at each change, in event order.
type Timeline []Sample

// ReservedAt returns reserved memory after each of the trace events idx (ascending; −1 is the state before the
// first event), read off the timeline as a step function: for overlaying on another series of the same trace.
func (tl Timeline) ReservedAt(idx []int) []int64 {
	out := make([]int64, len(idx))
	j := 0
	var cur int64
	for i, x := range idx {
		for j < len(tl) && tl[j].Index <= x {
			cur = tl[j].Reserved
			j++
		}
		out[i] = cur
	}
	return out
}

// replayAll replays one recording under several configurations, each with its own options, at once (each replay
// has its own model and only reads the recording); results are in the order of cfgs. A model is small beside the
// decoded snapshot (about 0.4 MB allocated for two replays of a 2.4 M-event trace), so running them side by side
// costs no memory worth counting.
func replayAll(ctx context.Context, rec *Recording, cfgs []Config, opts []ReplayOptions) ([]*Result, error) {
	out := make([]*Result, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i, cfg := range cfgs {
		wg.Go(func() { out[i], errs[i] = Replay(ctx, rec, cfg, opts[i]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}
