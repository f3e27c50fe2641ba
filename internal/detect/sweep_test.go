package detect

import (
	"context"
	"maps"
	"slices"
	"testing"

	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/internal/gen"
	"github.com/memscan/memscan/internal/replay"
	"github.com/memscan/memscan/internal/testutil"
)

// TestCacheSweepMatchesRebuild: the sweep's cache after each of a run of decreasing events (every cudaMalloc of a
// generated trace, and a stride through all events) has the largest free range and the live blocks per segment
// that a rebuild from every block finds, on traces whose live set cycles and on one that keeps growing.
func TestCacheSweepMatchesRebuild(t *testing.T) {
	for _, cfg := range []gen.Config{
		{Seed: 3, Entries: 6000},
		{Seed: 4, Entries: 6000, Grow: 0.2},
		{Seed: 5, Entries: 6000, Devices: 2, Expandable: true},
	} {
		s := testutil.Generated(t, cfg).Snapshot
		for dev := range s.DeviceTraces {
			r, err := replay.ReplayDevice(context.Background(), s, dev)
			if err != nil {
				t.Fatal(err)
			}
			d := Prepare(r, categorize.NewCategorizer(nil))
			segs := d.segments(s)
			sw := newCacheSweep(d, segs)
			checked := 0
			for j := len(d.Trace) - 2; j >= -1; j-- {
				_, isMalloc := d.cudaMallocAt(j + 1)
				if !isMalloc && j%97 != 0 {
					continue
				}
				used := d.usedAt(segs, j)
				want := cacheOf(segs, j, used).largestFree
				if got := sw.largestFreeAfter(j); got != want {
					t.Fatalf("seed %d device %d, after event %d: sweep's largest free range %d, rebuild's %d", cfg.Seed, dev, j, got, want)
				}
				if got := sw.used(); !sameGroups(got, used) {
					t.Fatalf("seed %d device %d, after event %d: the sweep's live blocks per segment differ from the rebuild's", cfg.Seed, dev, j)
				}
				checked++
			}
			if checked < 50 {
				t.Fatalf("seed %d device %d: only %d events checked", cfg.Seed, dev, checked)
			}
		}
	}
}

// sameGroups compares two groupings of live blocks by segment, ignoring the order within a group.
func sameGroups(a, b map[int][]liveBlock) bool {
	if !slices.Equal(slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b))) {
		return false
	}
	byIndex := func(x, y liveBlock) int { return x.i - y.i }
	for k := range a {
		x, y := slices.Clone(a[k]), slices.Clone(b[k])
		slices.SortFunc(x, byIndex)
		slices.SortFunc(y, byIndex)
		if !slices.Equal(x, y) {
			return false
		}
	}
	return true
}
