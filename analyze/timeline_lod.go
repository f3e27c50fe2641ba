package analyze

// TimelineEnvelope is a replayed trace cut into buckets of consecutive events with each bucket's extremes: what a
// chart one bucket per pixel column must draw so that no spike hides. Bucket k covers events
// [Start[k], Start[k+1]) (the last ends at To).
type TimelineEnvelope struct {
	From, To int
	Start    []int
	// AllocMin and AllocMax are the least and most live requested bytes after any event of the bucket, Peak the
	// first event that reached AllocMax.
	AllocMin, AllocMax []int64
	Peak               []int
	// ReservedMax is the most segment bytes in the bucket and ReservedEnd those after its last event (reserved
	// memory is a step function: a chart draws the step and the spike).
	ReservedMax, ReservedEnd []int64
	// WhatIfEnd is the what-if's reserved bytes after the bucket's last event (empty without a what-if).
	WhatIfEnd []int64
	// ByCategory[c][k] is the live bytes of category c (TimelineDetail.Categories) after event Peak[k], so a
	// stacked chart's top is the bucket's maximum.
	ByCategory [][]int64
}

// Envelope cuts events [from, to) of t into at most buckets buckets (one event each when there are fewer). It is
// O(events + blocks) in time and holds one word per event and two per block besides its result.
func (t *TimelineDetail) Envelope(from, to, buckets int) TimelineEnvelope {
	from, to = max(0, from), min(t.Events, to)
	e := TimelineEnvelope{From: from, To: to}
	n := to - from
	if n <= 0 || buckets <= 0 {
		return e
	}
	nb := min(buckets, n)
	e.Start = make([]int, nb)
	for k := range nb {
		e.Start[k] = from + k*n/nb
	}
	e.AllocMin, e.AllocMax, e.Peak = make([]int64, nb), make([]int64, nb), make([]int, nb)
	e.ReservedMax, e.ReservedEnd = make([]int64, nb), make([]int64, nb)
	alloc := t.Allocated()
	res, rk := t.InitialReserved, 0
	wres, wk := int64(0), 0
	if len(t.WhatIfEvent) > 0 {
		e.WhatIfEnd = make([]int64, nb)
	}
	k := -1
	for j := 0; j < to; j++ {
		for rk < len(t.ReservedEvent) && int(t.ReservedEvent[rk]) <= j {
			res += t.ReservedDelta[rk]
			rk++
		}
		for wk < len(t.WhatIfEvent) && int(t.WhatIfEvent[wk]) <= j {
			wres = t.WhatIfReserved[wk]
			wk++
		}
		if j < from {
			continue
		}
		if k+1 < nb && j == e.Start[k+1] {
			k++
			e.AllocMin[k], e.AllocMax[k], e.Peak[k], e.ReservedMax[k] = alloc[j], alloc[j], j, res
		}
		a := alloc[j]
		e.AllocMin[k] = min(e.AllocMin[k], a)
		if a > e.AllocMax[k] {
			e.AllocMax[k], e.Peak[k] = a, j
		}
		e.ReservedMax[k] = max(e.ReservedMax[k], res)
		e.ReservedEnd[k] = res
		if e.WhatIfEnd != nil {
			e.WhatIfEnd[k] = wres
		}
	}
	e.ByCategory = t.categoriesAt(e.Peak)
	return e
}

// categoriesAt returns the live bytes per category after each of the events at (ascending), in one sweep over
// the blocks ordered by start and by end.
func (t *TimelineDetail) categoriesAt(at []int) [][]int64 {
	out := make([][]int64, len(t.Categories))
	for c := range out {
		out[c] = make([]int64, len(at))
	}
	if len(at) == 0 {
		return out
	}
	// Counting sort of the blocks by the event that starts and the event that ends them.
	n := t.Events
	sOff, eOff := make([]int32, n+1), make([]int32, n+1)
	cur := make([]int64, len(t.Categories))
	for i := range t.Start {
		if t.Start[i] >= 0 {
			sOff[t.Start[i]+1]++
		} else {
			cur[t.SiteCategory[t.Site[i]]] += t.Size[i]
		}
		if int(t.End[i]) < n {
			eOff[t.End[i]+1]++
		}
	}
	for j := range n {
		sOff[j+1] += sOff[j]
		eOff[j+1] += eOff[j]
	}
	sIdx, eIdx := make([]int32, sOff[n]), make([]int32, eOff[n])
	sPos, ePos := append([]int32(nil), sOff[:n]...), append([]int32(nil), eOff[:n]...)
	for i := range t.Start {
		if s := t.Start[i]; s >= 0 {
			sIdx[sPos[s]] = int32(i)
			sPos[s]++
		}
		if e := t.End[i]; int(e) < n {
			eIdx[ePos[e]] = int32(i)
			ePos[e]++
		}
	}
	k := 0
	for j := 0; j < n && k < len(at); j++ {
		for _, b := range sIdx[sOff[j]:sOff[j+1]] {
			cur[t.SiteCategory[t.Site[b]]] += t.Size[b]
		}
		for _, b := range eIdx[eOff[j]:eOff[j+1]] {
			cur[t.SiteCategory[t.Site[b]]] -= t.Size[b]
		}
		for k < len(at) && at[k] == j {
			for c := range cur {
				out[c][k] = cur[c]
			}
			k++
		}
	}
	return out
}
