package allocator_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/memscan/memscan/allocator"
)

const mib = allocator.MiB

// step is one call of the event API: a malloc of size bytes on stream (size > 0), or a free (size 0).
type step struct {
	id     uint64
	size   int64
	stream uint64
}

func malloc(id uint64, size int64, stream uint64) step {
	return step{id: id, size: size, stream: stream}
}
func free(id uint64) step { return step{id: id} }

// segmentEvents renders the model's segment events as A<MiB>M (cudaMalloc) and F<MiB>M (cudaFree).
func segmentEvents(evs []allocator.SegmentEvent) string {
	var out []string
	for _, e := range evs {
		k := map[allocator.EventKind]string{allocator.SegmentAlloc: "A", allocator.SegmentFree: "F"}[e.Kind]
		out = append(out, fmt.Sprintf("%s%dM", k, e.Size/mib))
	}
	return strings.Join(out, " ")
}

// TestBoundaries pins the allocator's boundaries where PyTorch's comparisons are inclusive, each derived from
// c10/cuda/CUDACachingAllocator.cpp rather than from the model:
//
//   - get_free_block refuses a cached block for a request below max_split_size when
//     block->size >= max_split_size: a block exactly max_split_size is refused too;
//   - it refuses a block for a request at or above max_split_size when block->size >= request + kLargeBuffer
//     (20 MiB): a block exactly 20 MiB larger is refused, 18 MiB larger is taken whole;
//   - garbage_collect_cached_blocks frees every unsplit cached large-pool block with
//     gc_count() >= total_age / freeable_block_count: a block whose age equals the mean goes, and all such
//     blocks go in one pass even past the target ("Don't stop upon reaching the target_size").
//
// gc_count() is the pool's get_free_block call count (counted only while GC is active) minus the count when the
// block entered the free set.
func TestBoundaries(t *testing.T) {
	maxSplit := allocator.Config{MaxSplitSize: 200 * mib}
	// Fraction 0.5 of 1000 MiB: a 500 MiB limit; garbage collection starts above 0.5 · 500 = 250 MiB.
	gc := allocator.Config{PerProcessMemoryFraction: 0.5, GarbageCollectionThreshold: 0.5}
	gcOpt := allocator.Options{TotalMemory: 1000 * mib}
	tests := []struct {
		name          string
		cfg           allocator.Config
		opt           allocator.Options
		steps         []step
		events        string
		reserved      int64
		allocated     int64
		segmentsAfter int
	}{
		{
			name: "cached block exactly max_split_size is not split for a smaller request",
			cfg:  maxSplit, steps: []step{malloc(1, 200*mib, 0), free(1), malloc(2, 100*mib, 0)},
			events: "A200M A100M", reserved: 300 * mib, allocated: 100 * mib, segmentsAfter: 2,
		},
		{
			// The control: 2 MiB under max_split_size the cached block is an ordinary one, split for the request.
			name: "cached block just under max_split_size is split",
			cfg:  maxSplit, steps: []step{malloc(1, 198*mib, 0), free(1), malloc(2, 100*mib, 0)},
			events: "A198M", reserved: 198 * mib, allocated: 100 * mib, segmentsAfter: 1,
		},
		{
			name: "oversize block exactly request + 20 MiB is not reused",
			cfg:  maxSplit, steps: []step{malloc(1, 220*mib, 0), free(1), malloc(2, 200*mib, 0)},
			events: "A220M A200M", reserved: 420 * mib, allocated: 200 * mib, segmentsAfter: 2,
		},
		{
			// Within the window the block is handed out whole: requests at or above max_split_size never split.
			name: "oversize block request + 18 MiB is reused whole",
			cfg:  maxSplit, steps: []step{malloc(1, 218*mib, 0), free(1), malloc(2, 200*mib, 0)},
			events: "A218M", reserved: 218 * mib, allocated: 218 * mib, segmentsAfter: 1,
		},
		{
			name: "request exactly max_split_size reuses a block exactly max_split_size",
			cfg:  maxSplit, steps: []step{malloc(1, 200*mib, 0), free(1), malloc(2, 200*mib, 0)},
			events: "A200M", reserved: 200 * mib, allocated: 200 * mib, segmentsAfter: 1,
		},
		{
			// Lookups: 1 (first malloc), 2 (the malloc on stream 1, which cannot use stream 0's block). The cached
			// 260 MiB block entered the free set at count 1: age 1, the mean of one block is 1, and 1 ≥ 1, so it
			// is released to bring 260 MiB reserved under the 250 MiB threshold.
			name: "garbage collection frees a block whose age equals the mean",
			cfg:  gc, opt: gcOpt, steps: []step{malloc(1, 260*mib, 0), free(1), malloc(2, 100*mib, 1)},
			events: "A260M F260M A100M", reserved: 100 * mib, allocated: 100 * mib, segmentsAfter: 1,
		},
		{
			// Both blocks enter the free set at count 2 and are 1 lookup old at the third malloc: both equal the
			// mean and both go in the same pass, although freeing the first (130 MiB) already covers the 20 MiB
			// excess.
			name: "garbage collection frees every block at the mean age in one pass",
			cfg:  gc, opt: gcOpt, steps: []step{malloc(1, 130*mib, 0), malloc(2, 140*mib, 0), free(1), free(2), malloc(3, 100*mib, 1)},
			events: "A130M A140M F130M F140M A100M", reserved: 100 * mib, allocated: 100 * mib, segmentsAfter: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := allocator.New(tc.cfg, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tc.steps {
				if s.size > 0 {
					err = a.Malloc(s.id, s.size, s.stream)
				} else {
					err = a.Free(s.id)
				}
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
			}
			if got := segmentEvents(a.Events()); got != tc.events {
				t.Errorf("segment events %q, want %q", got, tc.events)
			}
			if a.Reserved() != tc.reserved || a.Allocated() != tc.allocated || a.Segments() != tc.segmentsAfter {
				t.Errorf("reserved %d MiB, allocated %d MiB, %d segments; want %d MiB, %d MiB, %d",
					a.Reserved()/mib, a.Allocated()/mib, a.Segments(), tc.reserved/mib, tc.allocated/mib, tc.segmentsAfter)
			}
		})
	}
}
