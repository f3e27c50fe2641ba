package allocator

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/memscan/memscan/snapshot"
)

// propertyConfigs are the settings random sequences run under: every rule family at least once.
var propertyConfigs = []struct {
	cfg Config
	opt Options
}{
	{Config{}, Options{}},
	{Config{}, Options{Capacity: 512 * MiB}},
	{Config{ExpandableSegments: true}, Options{TotalMemory: 1 << 30}},
	{Config{ExpandableSegments: true}, Options{TotalMemory: 1 << 30, Capacity: 600 * MiB}},
	{Config{MaxSplitSize: 64 * MiB}, Options{Capacity: 700 * MiB}},
	{Config{PerProcessMemoryFraction: 0.5, GarbageCollectionThreshold: 0.6}, Options{TotalMemory: 1 << 30}},
	{Config{RoundupPower2Divisions: [16]int64{4, 4, 8, 8, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1}}, Options{Capacity: 1 << 30}},
}

// TestRandomSequences runs random allocation sequences (several streams, a private pool, empty_cache calls) under
// every rule family and checks the structure after every step: blocks tile each segment, free neighbours are
// merged, counters match the blocks, reserved ≥ allocated ≥ requested, and reserved never exceeds the capacity
// or the fraction limit.
func TestRandomSequences(t *testing.T) {
	for ci, pc := range propertyConfigs {
		for seed := range uint64(4) {
			rng := rand.New(rand.NewPCG(seed, uint64(ci)))
			a, err := New(pc.cfg, pc.opt)
			if err != nil {
				t.Fatal(err)
			}
			var live []uint64
			next := uint64(1)
			for step := range 3000 {
				switch r := rng.IntN(100); {
				case r < 55 || len(live) == 0:
					size := randomSize(rng)
					pool := DefaultPool
					if rng.IntN(10) == 0 {
						pool = PoolID{1, 2}
					}
					err := a.MallocIn(next, size, uint64(rng.IntN(2)), pool)
					if err == nil {
						live = append(live, next)
					} else if !isOOM(err) {
						t.Fatalf("config %d seed %d step %d: %v", ci, seed, step, err)
					}
					next++
				case r < 97:
					i := rng.IntN(len(live))
					if err := a.Free(live[i]); err != nil {
						t.Fatalf("config %d seed %d step %d: free: %v", ci, seed, step, err)
					}
					live[i] = live[len(live)-1]
					live = live[:len(live)-1]
				default:
					a.EmptyCache()
				}
				if err := a.checkInvariants(); err != nil {
					t.Fatalf("config %d (%s) seed %d step %d: %v", ci, pc.cfg, seed, step, err)
				}
				if c := pc.opt.Capacity; c > 0 && a.Reserved() > c {
					t.Fatalf("config %d seed %d step %d: reserved %d above capacity %d", ci, seed, step, a.Reserved(), c)
				}
				if a.allowed > 0 && a.Reserved() > a.allowed {
					t.Fatalf("config %d seed %d step %d: reserved %d above the fraction limit %d", ci, seed, step, a.Reserved(), a.allowed)
				}
			}
			// Freeing everything and emptying the cache returns every segment.
			for _, id := range live {
				if err := a.Free(id); err != nil {
					t.Fatal(err)
				}
			}
			a.EmptyCache()
			if err := a.ReleasePool(PoolID{1, 2}); err == nil {
				a.EmptyCache()
			}
			if a.Reserved() != 0 || a.Allocated() != 0 || a.Segments() != 0 {
				t.Errorf("config %d seed %d: after freeing all and empty_cache reserved %d allocated %d segments %d", ci, seed, a.Reserved(), a.Allocated(), a.Segments())
			}
		}
	}
}

// randomSize draws sizes across the small pool, the 1–10 MiB band and large requests, with repeats.
func randomSize(rng *rand.Rand) int64 {
	switch rng.IntN(4) {
	case 0:
		return 1 + rng.Int64N(MiB)
	case 1:
		return MiB + rng.Int64N(9*MiB)
	case 2:
		return 10*MiB + rng.Int64N(90*MiB)
	default:
		return []int64{4 * MiB, 32 * MiB, 512, 96 * MiB}[rng.IntN(4)]
	}
}

// FuzzReplay feeds arbitrary traces to the driver: it must never panic or fail, and the model it leaves must be
// structurally sound.
func FuzzReplay(f *testing.F) {
	f.Add([]byte{1, 0, 0, 5, 1, 1, 0, 7, 3, 0, 0, 0, 4, 2, 0, 0})
	f.Add([]byte{4, 1, 2, 3, 1, 1, 9, 9, 6, 0, 0, 0, 2, 1, 0, 0, 8, 0, 200, 1})
	actions := []snapshot.Action{snapshot.ActionAlloc, snapshot.ActionAlloc, snapshot.ActionFreeCompleted, snapshot.ActionFreeRequested,
		snapshot.ActionSegmentAlloc, snapshot.ActionSegmentFree, snapshot.ActionSegmentMap, snapshot.ActionSegmentUnmap, snapshot.ActionOOM, snapshot.ActionSnapshot}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 4096 {
			data = data[:4096]
		}
		var tr []snapshot.TraceEntry
		extras := &snapshot.Snapshot{}
		tab := snapshot.NewTraceTables(extras)
		for i := 0; i+4 <= len(data); i += 4 {
			size := int64(binary.LittleEndian.Uint16(data[i+2:])) << (data[i+1] % 24)
			tr = append(tr, snapshot.TraceEntry{
				Action: actions[int(data[i])%len(actions)],
				Addr:   0x7f0000000000 + uint64(data[i+1]%16)*32*MiB,
				Size:   size - int64(data[i]%3), // occasionally 0 or negative
				Stream: tab.Stream(uint64(data[i+1] % 2)), Extra: tab.Extra(snapshot.TraceExtra{DeviceFree: size}),
			})
		}
		cfg := propertyConfigs[len(data)%len(propertyConfigs)]
		rec := Record(tr, RecordOptions{Settings: cfg.cfg, Capacity: cfg.opt.Capacity, Extras: extras.TraceExtras, Streams: extras.TraceStreams})
		res, a, err := replay(context.Background(), rec, cfg.cfg, ReplayOptions{Capacity: cfg.opt.Capacity, TotalMemory: cfg.opt.TotalMemory})
		if err != nil {
			t.Fatalf("replay: %v", err)
		}
		if err := a.checkInvariants(); err != nil {
			t.Fatal(err)
		}
		if res.PeakReserved < res.FinalReserved || len(res.Issues) > maxIssues+len(rec.Issues) {
			t.Fatalf("peak %d below final %d, or %d issues", res.PeakReserved, res.FinalReserved, len(res.Issues))
		}
	})
}
