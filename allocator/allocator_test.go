package allocator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// op is one step of a hand-made allocation sequence.
type op struct {
	kind   byte // 'a' alloc, 'f' free, 'e' empty_cache, 'r' release pool
	id     uint64
	size   int64
	stream uint64
	pool   PoolID
}

func al(id uint64, size int64) op { return op{kind: 'a', id: id, size: size} }
func als(id uint64, size int64, stream uint64) op {
	return op{kind: 'a', id: id, size: size, stream: stream}
}
func alp(id uint64, size int64, p PoolID) op { return op{kind: 'a', id: id, size: size, pool: p} }
func fr(id uint64) op                        { return op{kind: 'f', id: id} }
func ec() op                                 { return op{kind: 'e'} }
func rp(p PoolID) op                         { return op{kind: 'r', pool: p} }

// evs renders segment events compactly: A/F/M/U and the size in MiB (bytes when not whole MiB).
func evs(list []SegmentEvent) string {
	var parts []string
	for _, e := range list {
		k := map[EventKind]string{SegmentAlloc: "A", SegmentFree: "F", SegmentMap: "M", SegmentUnmap: "U"}[e.Kind]
		if e.Size%MiB == 0 {
			parts = append(parts, fmt.Sprintf("%s%dM", k, e.Size/MiB))
		} else {
			parts = append(parts, fmt.Sprintf("%s%d", k, e.Size))
		}
	}
	return strings.Join(parts, " ")
}

const KiB = 1 << 10

// TestRules drives the model with hand-made sequences whose segment events and totals were derived by hand from
// the rules (see the comment of each case).
func TestRules(t *testing.T) {
	private := PoolID{1, 1}
	cases := []struct {
		name          string
		cfg           Config
		opt           Options
		ops           []op
		oomAt         []int // indices of ops that must fail with an OOMError
		wantEvents    string
		wantReserved  int64
		wantAllocated int64
		check         func(t *testing.T, a *Allocator)
	}{
		{
			// 1 B rounds to 512 B, which goes to the small pool's 2 MiB segment; a 1 MiB request still fits the
			// remaining 2 MiB − 512 B of the same segment.
			name: "rounding and small pool", ops: []op{al(1, 1), al(2, MiB)},
			wantEvents: "A2M", wantReserved: 2 * MiB, wantAllocated: 512 + MiB,
		},
		{
			// 5 MiB takes a 20 MiB segment (1–10 MiB rule) and splits; 6 MiB fits the 15 MiB remainder; 10 MiB
			// does not fit the 9 MiB left and gets its own 10 MiB; 11 MiB + 1 rounds to 11 MiB + 512, its
			// segment to 12 MiB, and the 1 MiB − 512 remainder is not split (not > 1 MiB).
			name:       "large pool segment sizes and split threshold",
			ops:        []op{al(1, 5*MiB), al(2, 6*MiB), al(3, 10*MiB), al(4, 11*MiB+1)},
			wantEvents: "A20M A10M A12M", wantReserved: 42 * MiB, wantAllocated: 5*MiB + 6*MiB + 10*MiB + 12*MiB,
		},
		{
			// a, b, c split one 20 MiB segment into 5+5+5 (+5 free). Freeing a and c, then b, merges both
			// neighbours back into one 20 MiB block, which a 20 MiB request reuses; after freeing it, empty_cache
			// releases the whole segment.
			name:       "merge with both neighbours",
			ops:        []op{al(1, 5*MiB), al(2, 5*MiB), al(3, 5*MiB), fr(1), fr(3), fr(2), al(4, 20*MiB), fr(4), ec()},
			wantEvents: "A20M F20M", wantReserved: 0, wantAllocated: 0,
		},
		{
			// Two 12 MiB segments; the second gets the lower address. With both free, the next 12 MiB request
			// takes the lowest address: the newer segment.
			name:       "ties go to the lowest address",
			ops:        []op{al(1, 12*MiB), al(2, 12*MiB), fr(1), fr(2), al(3, 12*MiB)},
			wantEvents: "A12M A12M", wantReserved: 24 * MiB, wantAllocated: 12 * MiB,
			check: func(t *testing.T, a *Allocator) {
				addr3, _ := a.AddressOf(3)
				if ev := a.Events(); addr3 != ev[1].Addr || ev[1].Addr >= ev[0].Addr {
					t.Errorf("request took 0x%x; segments at 0x%x (first), 0x%x (second)", addr3, ev[0].Addr, ev[1].Addr)
				}
			},
		},
		{
			// Free blocks of 12 and 14 MiB: an 11.5 MiB request takes the 12 MiB one (best fit), no new segment.
			name:       "best fit takes the smallest block that fits",
			ops:        []op{al(1, 14*MiB), al(2, 12*MiB), fr(1), fr(2), al(3, 11*MiB+MiB/2)},
			wantEvents: "A14M A12M", wantReserved: 26 * MiB, wantAllocated: 12 * MiB,
		},
		{
			// A block freed on stream 1 is not reused by stream 2.
			name:       "streams keep their blocks",
			ops:        []op{als(1, 5*MiB, 1), fr(1), als(2, 5*MiB, 2)},
			wantEvents: "A20M A20M", wantReserved: 40 * MiB, wantAllocated: 5 * MiB,
		},
		{
			// max_split 40 MiB: a 30 MiB request may not take the cached 50 MiB block (new segment); a 45 MiB
			// request takes it whole (50 < 45 + 20), unsplit; a 41 MiB request may take the cached 60 MiB block
			// (60 < 61), a 42 MiB one finds nothing and a new 42 MiB segment is not split either.
			name:       "max_split_size oversize rules",
			cfg:        Config{MaxSplitSize: 40 * MiB},
			ops:        []op{al(1, 50*MiB), fr(1), al(2, 30*MiB), al(3, 60*MiB), fr(3), al(4, 45*MiB), al(5, 41*MiB), al(6, 42*MiB)},
			wantEvents: "A50M A30M A60M A42M", wantReserved: 182 * MiB, wantAllocated: 30*MiB + 50*MiB + 60*MiB + 42*MiB,
		},
		{
			// The reuse window: with max_split 40 MiB and a cached 70 MiB block, a 45 MiB request may not take it
			// (70 ≥ 45 + 20) and gets its own segment.
			name:       "max_split_size reuse window",
			cfg:        Config{MaxSplitSize: 40 * MiB},
			ops:        []op{al(1, 70*MiB), fr(1), al(2, 45*MiB)},
			wantEvents: "A70M A46M", wantReserved: 116 * MiB, wantAllocated: 46 * MiB,
		},
		{
			// With 4 divisions, 5 MiB + 1 rounds to the next quarter of [4, 8) MiB: 6 MiB, split from a 20 MiB
			// segment.
			name:       "roundup_power2_divisions",
			cfg:        Config{RoundupPower2Divisions: [16]int64{4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4}},
			ops:        []op{al(1, 5*MiB+1)},
			wantEvents: "A20M", wantReserved: 20 * MiB, wantAllocated: 6 * MiB,
		},
		{
			// Fraction 0.5 of 100 MiB: limit 50 MiB, GC above 25 MiB. Lookups: a (1), b (2), c (3). At c, the
			// cached a is 2 lookups old and b 1; the mean is 1.5, so only a (12 MiB) goes, which covers the
			// 1 MiB excess; c then gets a 16 MiB segment.
			name:       "garbage collection frees the older block",
			cfg:        Config{PerProcessMemoryFraction: 0.5, GarbageCollectionThreshold: 0.5},
			opt:        Options{TotalMemory: 100 * MiB},
			ops:        []op{al(1, 12*MiB), fr(1), al(2, 14*MiB), fr(2), al(3, 16*MiB)},
			wantEvents: "A12M A14M F12M A16M", wantReserved: 30 * MiB, wantAllocated: 16 * MiB,
		},
		{
			// The same sequence without a fraction: the threshold does nothing.
			name:       "garbage collection needs a fraction",
			cfg:        Config{GarbageCollectionThreshold: 0.5},
			opt:        Options{TotalMemory: 100 * MiB},
			ops:        []op{al(1, 12*MiB), fr(1), al(2, 14*MiB), fr(2), al(3, 16*MiB)},
			wantEvents: "A12M A14M A16M", wantReserved: 42 * MiB, wantAllocated: 16 * MiB,
		},
		{
			// Fraction 0.5 of 100 MiB: 30 + 24 MiB exceeds the 50 MiB limit and nothing is cached: OOM.
			name:  "memory fraction limit",
			cfg:   Config{PerProcessMemoryFraction: 0.5},
			opt:   Options{TotalMemory: 100 * MiB},
			ops:   []op{al(1, 30*MiB), al(2, 24*MiB)},
			oomAt: []int{1}, wantEvents: "A30M", wantReserved: 30 * MiB, wantAllocated: 30 * MiB,
		},
		{
			// Capacity 40 MiB: with 12 (cached) + 14 MiB reserved a new 16 MiB segment does not fit, so
			// release_cached_blocks frees the cached 12 MiB segment and the retry succeeds.
			name:       "capacity: release cached blocks and retry",
			opt:        Options{Capacity: 40 * MiB},
			ops:        []op{al(1, 12*MiB), al(2, 14*MiB), fr(1), al(3, 16*MiB)},
			wantEvents: "A12M A14M F12M A16M", wantReserved: 30 * MiB, wantAllocated: 30 * MiB,
		},
		{
			// Capacity 30 MiB: 5 MiB splits a 20 MiB segment; 16 MiB does not fit its 15 MiB remainder, and a
			// 16 MiB segment cannot fit even after releasing (the only segment holds a live block): OOM.
			name:  "capacity: out of memory",
			opt:   Options{Capacity: 30 * MiB},
			ops:   []op{al(1, 5*MiB), al(2, 16*MiB)},
			oomAt: []int{1}, wantEvents: "A20M", wantReserved: 20 * MiB, wantAllocated: 5 * MiB,
		},
		{
			// max_split 20 MiB, capacity 100 MiB, 30 (cached) + 40 (live) + 24 (cached) MiB: an 8 MiB request
			// may not use the oversize cached blocks and its 20 MiB segment does not fit; release_available
			// frees the single smallest cached block ≥ 20 MiB (24 MiB) and the retry fits.
			name: "max_split: release the smallest sufficient oversize block",
			cfg:  Config{MaxSplitSize: 20 * MiB}, opt: Options{Capacity: 100 * MiB},
			ops:        []op{al(1, 30*MiB), al(2, 40*MiB), al(3, 24*MiB), fr(1), fr(3), al(4, 8*MiB)},
			wantEvents: "A30M A40M A24M F24M A20M", wantReserved: 90 * MiB, wantAllocated: 40*MiB + 8*MiB,
		},
		{
			// max_split 20 MiB, capacity 100 MiB, three 30 MiB segments, two cached: a 50 MiB request needs 50
			// MiB released, no single cached block is that large, so oversize blocks go from the largest (ties:
			// the higher address, the older one) down until 60 ≥ 50 MiB are freed.
			name: "max_split: release oversize blocks from the largest down",
			cfg:  Config{MaxSplitSize: 20 * MiB}, opt: Options{Capacity: 100 * MiB},
			ops:        []op{al(1, 30*MiB), al(2, 30*MiB), al(3, 30*MiB), fr(1), fr(2), al(4, 50*MiB)},
			wantEvents: "A30M A30M A30M F30M F30M A50M", wantReserved: 80 * MiB, wantAllocated: 80 * MiB,
			check: func(t *testing.T, a *Allocator) {
				ev := a.Events()
				if ev[3].Addr != ev[0].Addr || ev[4].Addr != ev[1].Addr {
					t.Errorf("freed 0x%x then 0x%x; want the first segment 0x%x then the second 0x%x", ev[3].Addr, ev[4].Addr, ev[0].Addr, ev[1].Addr)
				}
			},
		},
		{
			// Expandable, 1 GiB device: 5 MiB maps one 20 MiB page; 16 MiB does not fit the 15 MiB free tail,
			// so the tail plus one more page is mapped and merged (35 MiB, split to 16 + 19); 1 KiB maps a 2 MiB
			// small page. empty_cache with a and b freed unmaps the two whole large pages, and the range goes.
			name: "expandable segments map and unmap pages",
			cfg:  Config{ExpandableSegments: true}, opt: Options{TotalMemory: 1 << 30},
			ops:        []op{al(1, 5*MiB), al(2, 16*MiB), al(3, KiB), fr(1), ec(), fr(2), ec()},
			wantEvents: "M20M M20M M2M U40M", wantReserved: 2 * MiB, wantAllocated: KiB,
		},
		{
			// The expandable walk: free blocks of 6 MiB (interior) and a 5 MiB tail before unmapped space. A
			// 3 MiB request's best fit is the tail, but its expandable size (5 MiB + the unmapped rest) is larger
			// than the interior block's, so the request goes to the interior block at offset 5 MiB.
			name: "expandable walk keeps requests off the growable tail",
			cfg:  Config{ExpandableSegments: true}, opt: Options{TotalMemory: 1 << 30},
			ops:        []op{al(1, 5*MiB), al(2, 6*MiB), al(3, 4*MiB), fr(2), al(4, 3*MiB)},
			wantEvents: "M20M", wantReserved: 20 * MiB, wantAllocated: 12 * MiB,
			check: func(t *testing.T, a *Allocator) {
				a1, _ := a.AddressOf(1)
				a4, _ := a.AddressOf(4)
				if a4-a1 != 5*MiB {
					t.Errorf("3 MiB request at offset %d, want 5 MiB", a4-a1)
				}
			},
		},
		{
			// A private pool keeps its cached block from the default pool; empty_cache leaves it until the pool
			// is released.
			name:       "private pools are kept apart",
			ops:        []op{alp(1, 5*MiB, private), fr(1), al(2, 5*MiB), ec(), rp(private), ec()},
			wantEvents: "A20M A20M F20M", wantReserved: 20 * MiB, wantAllocated: 5 * MiB,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, err := New(tc.cfg, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			for i, o := range tc.ops {
				var err error
				switch o.kind {
				case 'a':
					err = a.MallocIn(o.id, o.size, o.stream, o.pool)
				case 'f':
					err = a.Free(o.id)
				case 'e':
					a.EmptyCache()
				case 'r':
					err = a.ReleasePool(o.pool)
				}
				var oom *OOMError
				if wantOOM := slices.Contains(tc.oomAt, i); wantOOM != errors.As(err, &oom) {
					t.Fatalf("op %d (%c %d): err %v, want OOM %v", i, o.kind, o.id, err, wantOOM)
				} else if err != nil && !wantOOM {
					t.Fatalf("op %d: %v", i, err)
				}
				if err := a.checkInvariants(); err != nil {
					t.Fatalf("after op %d: %v", i, err)
				}
			}
			if got := evs(a.Events()); got != tc.wantEvents {
				t.Errorf("events %q, want %q", got, tc.wantEvents)
			}
			if a.Reserved() != tc.wantReserved || a.Allocated() != tc.wantAllocated {
				t.Errorf("reserved %d allocated %d, want %d and %d", a.Reserved(), a.Allocated(), tc.wantReserved, tc.wantAllocated)
			}
			if tc.check != nil {
				tc.check(t, a)
			}
		})
	}
}

func TestRoundSize(t *testing.T) {
	all := func(d int64) Config {
		var c Config
		for i := range c.RoundupPower2Divisions {
			c.RoundupPower2Divisions[i] = d
		}
		return c
	}
	cases := []struct {
		cfg  Config
		n    int64
		want int64
	}{
		{Config{}, 1, 512},
		{Config{}, 512, 512},
		{Config{}, 513, 1024},
		{Config{}, 5*MiB + 1, 5*MiB + 512},
		// 1200 B is not above 512·4, so plain rounding applies (the code's rule; the docs' 1280 example is not).
		{all(4), 1200, 1536},
		{all(4), 5*MiB + 1, 6 * MiB},
		{all(4), 4 * MiB, 4 * MiB},     // a power of two stays
		{all(8), 300 * MiB, 320 * MiB}, // eighths of [256, 512) MiB
		{all(1), 5*MiB + 1, 5*MiB + 512},
		// Interval 2 ([4, 8) MiB) only: 3 MiB + 1 uses interval 1 and plain rounding.
		{Config{RoundupPower2Divisions: [16]int64{2: 2}}, 5 * MiB, 6 * MiB},
		{Config{RoundupPower2Divisions: [16]int64{2: 2}}, 3*MiB + 1, 3*MiB + 512},
	}
	for _, tc := range cases {
		if got := RoundSize(tc.cfg, tc.n); got != tc.want {
			t.Errorf("RoundSize(%v, %d) = %d, want %d", tc.cfg.RoundupPower2Divisions, tc.n, got, tc.want)
		}
	}
}

func TestSegmentSize(t *testing.T) {
	cases := []struct{ s, want int64 }{
		{512, 2 * MiB}, {MiB, 2 * MiB}, {MiB + 512, 20 * MiB}, {10*MiB - 512, 20 * MiB},
		{10 * MiB, 10 * MiB}, {10*MiB + 512, 12 * MiB}, {101 * MiB, 102 * MiB},
	}
	for _, tc := range cases {
		if got := SegmentSize(Config{}, tc.s); got != tc.want {
			t.Errorf("SegmentSize(%d) = %d, want %d", tc.s, got, tc.want)
		}
	}
	if got := SegmentSize(Config{LargeSegmentSize: 64 * MiB}, 5*MiB); got != 64*MiB {
		t.Errorf("large_segment_size_mb:64: %d", got)
	}
}

func TestEventAPIErrors(t *testing.T) {
	a, err := New(Config{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Malloc(1, 0, 0); !errors.Is(err, ErrBadSize) {
		t.Errorf("zero size: %v", err)
	}
	if err := a.Malloc(1, 10, 0); err != nil {
		t.Fatal(err)
	}
	if err := a.Malloc(1, 10, 0); !errors.Is(err, ErrLive) {
		t.Errorf("live id: %v", err)
	}
	if err := a.Free(2); !errors.Is(err, ErrUnknown) {
		t.Errorf("unknown id: %v", err)
	}
	if err := a.ReleasePool(PoolID{3, 3}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown pool: %v", err)
	}
	if _, err := New(Config{Backend: "cudaMallocAsync"}, Options{}); err == nil {
		t.Error("cudaMallocAsync accepted")
	}
}

// TestReplaySequence: 12 + 14 MiB segments, then a 16 MiB request that fits no cached block: three segments and
// 42 MiB at the peak (counted by hand below).
func TestReplaySequence(t *testing.T) {
	ops := []Op{
		{Kind: OpAlloc, ID: 1, Size: 12 * MiB}, {Kind: OpAlloc, ID: 2, Size: 14 * MiB}, {Kind: OpFree, ID: 1},
		{Kind: OpAlloc, ID: 3, Size: 16 * MiB}, {Kind: OpFree, ID: 2}, {Kind: OpEmptyCache},
		{Kind: OpAlloc, ID: 4, Size: 64 * MiB}, {Kind: OpFree, ID: 4},
	}
	res, err := ReplaySequence(context.Background(), Config{}, Options{Capacity: 60 * MiB}, ops)
	if err != nil {
		t.Fatal(err)
	}
	// Peak after op 3: 12 + 14 + 16 MiB; live then: 14 + 16 MiB; the 12 MiB segment is cached and empty.
	want := Fragmentation{Reserved: 42 * MiB, Allocated: 30 * MiB, Requested: 30 * MiB, Free: 12 * MiB, CachedSegments: 12 * MiB, Segments: 3}
	if res.PeakReserved != 42*MiB || res.PeakIndex != 3 || res.PeakFragmentation != want {
		t.Errorf("peak %d at op %d, fragmentation %+v; want 42 MiB at op 3, %+v", res.PeakReserved, res.PeakIndex, res.PeakFragmentation, want)
	}
	// empty_cache leaves 16 MiB; the 64 MiB request cannot fit the 60 MiB capacity: op 6 fails, its free is ignored.
	if !slices.Equal(res.Failed, []int{6}) || res.FinalReserved != 16*MiB || res.SegmentsCreated != 3 {
		t.Errorf("failed %v, final %d, created %d", res.Failed, res.FinalReserved, res.SegmentsCreated)
	}
	if _, err := ReplaySequence(context.Background(), Config{}, Options{}, []Op{{Kind: OpFree, ID: 9}}); !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "op 0") {
		t.Errorf("free of an unknown id: %v", err)
	}
}
