package allocator

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/memscan/memscan/snapshot"
)

// TestPeakAllocatedBlockBytes checks the replay's peak in torch.cuda.max_memory_allocated's unit against
// CUDACachingAllocator.cpp's rules worked by hand: a request is rounded up to 512 bytes (kMinBlockSize), and a
// large-pool block is split only when more than 1 MiB (kSmallSize) would remain, else the request holds the whole
// block; small-pool blocks split whenever 512 bytes remain.
func TestPeakAllocatedBlockBytes(t *testing.T) {
	sa := snapshot.ActionSegmentAlloc
	cases := []struct {
		name  string
		trace []snapshot.TraceEntry
		want  int64
	}{
		// 1000 B rounds to 1024 B in a 2 MiB small segment, which splits.
		{"small request rounded", trace(tSeg(sa, segA, 2*MiB), tAlloc(segA, 1000)), 1024},
		// 19 MiB + 1 B: rounded to 19 MiB + 512 B; a request of 10 MiB or more gets a segment rounded to 2 MiB,
		// 20 MiB; the 1 MiB − 512 B left is not more than 1 MiB, so the block stays whole: 20 MiB allocated.
		{"large remainder too small to split", trace(tSeg(sa, segA, 20*MiB), tAlloc(segA, 19*MiB+1)), 20 * MiB},
		// 5 MiB in a 20 MiB segment leaves 15 MiB: split, 5 MiB allocated; freed, then 3 MiB: the peak stays 5 MiB.
		{"split, and the peak kept after a free", trace(tSeg(sa, segA, 20*MiB), tAlloc(segA, 5*MiB), tFree(segA, 5*MiB),
			tAlloc(segA, 3*MiB)), 5 * MiB},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec := Record(tc.trace, RecordOptions{})
			res, err := Replay(context.Background(), rec, Config{}, ReplayOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if res.PeakAllocated != tc.want {
				t.Errorf("peak allocated %d, want %d", res.PeakAllocated, tc.want)
			}
		})
	}
}

// TestAllocatedSeries: with AllocatedSeries the replay keeps the block bytes after every event, whose maximum is
// PeakAllocated: 5 MiB, 5 MiB (free requested), 0 after the free, then a 3 MiB block split from the cached 20 MiB.
func TestAllocatedSeries(t *testing.T) {
	sa := snapshot.ActionSegmentAlloc
	rec := Record(trace(tSeg(sa, segA, 20*MiB), tAlloc(segA, 5*MiB), tFree(segA, 5*MiB), tAlloc(segA, 3*MiB)), RecordOptions{})
	res, err := Replay(context.Background(), rec, Config{}, ReplayOptions{AllocatedSeries: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{0, 5 * MiB, 5 * MiB, 0, 3 * MiB}
	if got := res.Allocated.Values(); !slices.Equal(got, want) {
		t.Fatalf("series %v, want %v", got, want)
	}
	if res2, _ := Replay(context.Background(), rec, Config{}, ReplayOptions{}); res2.Allocated != nil || res2.PeakAllocated != 5*MiB {
		t.Errorf("without the option: series %v, peak %d", res2.Allocated, res2.PeakAllocated)
	}
}

// TestStartBlockOutsideSegments: a free whose alloc predates the trace, at an address no segment covers, cannot be
// placed in the start state; its free is skipped (one record issue), not reported again as never allocated, and
// a later alloc at the address is replayed as usual.
func TestStartBlockOutsideSegments(t *testing.T) {
	rec := Record(trace(tFree(segA, 4*MiB), tAlloc(segA, 4*MiB)), RecordOptions{})
	res, err := Replay(context.Background(), rec, Config{}, ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	outside, never := 0, 0
	for _, is := range res.Issues {
		if strings.Contains(is.Reason, "outside every segment") {
			outside++
		}
		if strings.Contains(is.Reason, "which was never allocated") {
			never++
		}
	}
	if outside != 1 || never != 0 || res.FinalAllocated != 4*MiB {
		t.Errorf("issues %+v, final allocated %d; want the free skipped once and 4 MiB allocated", res.Issues, res.FinalAllocated)
	}
}
