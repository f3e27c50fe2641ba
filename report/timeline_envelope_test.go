package report

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

// randomDetail is a trace of n events over m blocks in three categories: blocks live before the trace, still
// live at its end, and freed within it, with reserved and what-if changes.
func randomDetail(r *rand.Rand, n, m int) *TimelineDetail {
	d := &TimelineDetail{Events: n, InitialAllocated: 0, InitialReserved: 1 << 20,
		Categories: []string{"a", "b", "c"}, Sites: []string{"s0", "s1", "s2", "s3"}, SiteCategory: []int32{0, 1, 2, 1}}
	for range m {
		start := int32(r.IntN(n+1) - 1) // −1: live before the first event
		end := int32(n)                 // still live at the end
		if r.IntN(4) > 0 {
			end = start + 1 + int32(r.IntN(n-int(start)))
		}
		size := int64(1 + r.IntN(1<<16))
		if start < 0 {
			d.InitialAllocated += size
		}
		d.Start, d.End, d.Size = append(d.Start, start), append(d.End, end), append(d.Size, size)
		d.Site = append(d.Site, int32(r.IntN(len(d.Sites))))
	}
	for j := 0; j < n; j += 1 + r.IntN(50) {
		d.ReservedEvent, d.ReservedDelta = append(d.ReservedEvent, int32(j)), append(d.ReservedDelta, int64(r.IntN(1<<20))-1<<19)
		if r.IntN(2) == 0 {
			d.WhatIfEvent, d.WhatIfReserved = append(d.WhatIfEvent, int32(j)), append(d.WhatIfReserved, int64(r.IntN(1<<24)))
		}
	}
	return d
}

// TestEnvelopeWithoutIndex: the one-shot envelope equals the index's for whole traces, zooms, more buckets
// than events, and empty ranges; its stack adds up to allocated memory at every bucket's peak (the blocks live
// there, counted directly); and its reserved memory, and the index's after every event, are the changes summed.
func TestEnvelopeWithoutIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ n, m int }{{1, 1}, {10, 30}, {3000, 2000}, {2999, 1500}, {5000, 100}} {
		d := randomDetail(r, tc.n, tc.m)
		x := d.Index()
		// Reserved memory, summed from its changes event by event: the index's and every bucket's.
		reservedAt := func(j int) int64 {
			r := d.InitialReserved
			for k, e := range d.ReservedEvent {
				if int(e) <= j {
					r += d.ReservedDelta[k]
				}
			}
			return r
		}
		for j := range tc.n {
			if got := x.Reserved(j); got != reservedAt(j) {
				t.Fatalf("%d events: the index's reserved after event %d is %d, summed %d", tc.n, j, got, reservedAt(j))
			}
		}
		for _, rg := range [][3]int{{0, tc.n, 900}, {0, tc.n, 901}, {1, tc.n - 1, 899}, {0, tc.n, 7}, {tc.n / 3, tc.n / 2, 50}, {tc.n / 2, tc.n, 5000}, {-5, tc.n + 5, 13}, {tc.n, tc.n, 10}, {0, tc.n, 0}} {
			got, want := d.Envelope(rg[0], rg[1], rg[2]), x.Envelope(rg[0], rg[1], rg[2])
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%d events, %d blocks, range %v: one-shot envelope\n%+v\nthe index's\n%+v", tc.n, tc.m, rg, got, want)
			}
			for k := range got.Start {
				end := got.To
				if k+1 < len(got.Start) {
					end = got.Start[k+1]
				}
				var most int64 = math.MinInt64
				for j := got.Start[k]; j < end; j++ {
					most = max(most, reservedAt(j))
				}
				if got.ReservedMax[k] != most || got.ReservedEnd[k] != reservedAt(end-1) {
					t.Fatalf("range %v bucket %d: reserved max %d end %d, summed %d and %d", rg, k, got.ReservedMax[k], got.ReservedEnd[k], most, reservedAt(end-1))
				}
			}
			for k, j := range got.Peak {
				var live, stack int64
				perCat := make([]int64, len(d.Categories))
				for i := range d.Start {
					if int(d.Start[i]) <= j && j < int(d.End[i]) {
						live += d.Size[i]
						perCat[d.SiteCategory[d.Site[i]]] += d.Size[i]
					}
				}
				for c := range got.ByCategory {
					stack += got.ByCategory[c][k]
					// Each layer on its own, counted from the blocks rather than taken from the index alone.
					if got.ByCategory[c][k] != perCat[c] {
						t.Fatalf("range %v bucket %d category %d: %d, live blocks %d", rg, k, c, got.ByCategory[c][k], perCat[c])
					}
				}
				if stack != live || live != got.AllocMax[k] {
					t.Fatalf("range %v bucket %d: stack %d, live blocks %d, maximum %d", rg, k, stack, live, got.AllocMax[k])
				}
			}
		}
	}
}
