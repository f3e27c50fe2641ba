package detect

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestRoundBlock: the caching allocator's round_size, from c10/cuda/CUDACachingAllocator.cpp: a request under
// kMinBlockSize (512 B) takes 512 B, any other rounds up to a multiple of 512 B.
func TestRoundBlock(t *testing.T) {
	for _, tc := range []struct{ n, want int64 }{
		{1, 512}, {511, 512}, {512, 512}, {513, 1024}, {700, 1024}, {1024, 1024}, {1025, 1536}, {10_000_000, 10_000_384},
	} {
		if got := roundBlock(tc.n); got != tc.want {
			t.Errorf("roundBlock(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
}

// TestCacheOfRounding rebuilds by hand a cache of two segments: a 2 MiB small-pool segment holding two 700-byte
// requests at offsets 0 and 1024 (each a 1024-byte block), and a 20 MiB large-pool segment holding two
// 10,000,000-byte requests back to back (each a 10,000,384-byte block). Every figure is counted in blocks, as the
// allocator holds them, never in requested bytes.
func TestCacheOfRounding(t *testing.T) {
	const (
		small = uint64(0x7f0000000000)
		large = uint64(0x7f0000200000)
		mib   = 1 << 20
	)
	segs := []segment{{addr: small, size: 2 * mib, start: -1, end: 10}, {addr: large, size: 20 * mib, start: -1, end: 10}}
	block := func(addr uint64, size int64) liveBlock { return liveBlock{addr: addr, size: size} }
	used := map[int][]liveBlock{
		0: {block(small+1024, 700), block(small, 700)}, // out of address order on purpose
		1: {block(large, 10_000_000), block(large+10_000_384, 10_000_000)},
	}
	got := cacheOf(segs, 5, used)
	want := cacheState{
		segments:         2,
		reserved:         22 * mib,
		live:             2*1024 + 2*10_000_384,
		free:             (2*mib - 2048) + (20*mib - 20_000_768),
		largestFree:      2*mib - 2048, // the small segment's tail; the large one keeps 20 MiB − 20,000,768 = 971,008 B
		smallPoolBytes:   2 * mib,
		largeLiveRounded: 20_000_768,
		freeInPartlyUsed: (2*mib - 2048) + (20*mib - 20_000_768),
		mostlyFree:       1, // the small segment; the large one is 95 % used
	}
	if got != want {
		t.Errorf("cacheOf = %+v\nwant      %+v", got, want)
	}
}

// TestSegmentOf: the segment holding an address at an event is the one a scan of every segment finds, going down
// from the highest address: over random sets of segments sorted as buildSegments sorts them, reused address
// ranges (the same base at different times, ranges inside others) and addresses below, between, at the ends of
// and above them.
func TestSegmentOf(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 300 {
		n := rng.IntN(40)
		segs := make([]segment, n)
		for i := range segs {
			start := rng.IntN(100) - 1
			segs[i] = segment{addr: uint64(rng.IntN(64)) << 20, size: int64(1+rng.IntN(8)) << 20, start: start, end: start + 1 + rng.IntN(100)}
		}
		slices.SortFunc(segs, func(a, b segment) int { return cmp.Or(cmp.Compare(a.addr, b.addr), cmp.Compare(a.start, b.start)) })
		want := func(addr uint64, j int) int {
			for i := len(segs) - 1; i >= 0; i-- {
				if s := &segs[i]; s.contains(addr) && s.start <= j && j < s.end {
					return i
				}
			}
			return -1
		}
		for range 200 {
			addr := uint64(rng.IntN(80<<20)) &^ 511
			if n > 0 && rng.IntN(4) == 0 { // a segment's first or last byte, or the byte past it
				s := segs[rng.IntN(n)]
				addr = s.addr + []uint64{0, uint64(s.size) - 1, uint64(s.size)}[rng.IntN(3)]
			}
			j := rng.IntN(110) - 1
			if got, w := segmentOf(segs, addr, j), want(addr, j); got != w {
				t.Fatalf("round %d: segmentOf(%#x, event %d) = %d, want %d in %+v", round, addr, j, got, w, segs)
			}
		}
	}
}

// TestFirstSampleAt holds the guided search to a scan of the samples for every event around them and every guess,
// right or wrong: empty and one-sample lists, repeated events, events before, between, at and past the samples.
func TestFirstSampleAt(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 200 {
		samples := make([]int, rng.IntN(12))
		for i := range samples {
			samples[i] = rng.IntN(40)
		}
		slices.Sort(samples)
		for j := -2; j < 45; j++ {
			want := len(samples)
			for k, s := range samples {
				if s >= j {
					want = k
					break
				}
			}
			for near := 0; near <= len(samples); near++ {
				if got := firstSampleAt(samples, j, near); got != want {
					t.Fatalf("round %d: firstSampleAt(%v, %d, near %d) = %d, want %d", round, samples, j, near, got, want)
				}
			}
		}
	}
}
