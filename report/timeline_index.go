package report

import "sort"

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

// indexCheckpoint is the distance in events between two stored category vectors of a TimelineIndex: a question
// about any moment replays at most this many events.
const indexCheckpoint = 1024

// TimelineIndex answers questions about any moment of one replayed trace without replaying it again: memory
// after each event, the live bytes per category, the largest live blocks, and bucketed extremes of any range
// (what memscan view sends as the page zooms). It holds one word per event, two per block, one per change of
// reserved memory and one category vector per indexCheckpoint events, all in flat slices; building it is
// O(events + blocks).
type TimelineIndex struct {
	d     *TimelineDetail
	alloc []int64 // after each event
	// res[k] is the segment bytes from the k-th change of reserved memory on (TimelineDetail.ReservedEvent).
	res []int64
	// Blocks by the event that starts them and by the event that ends them: block sIdx[k] for k in
	// sOff[j]..sOff[j+1]−1 starts at event j (likewise eIdx/eOff for ends).
	sOff, eOff, sIdx, eIdx []int32
	cat                    []int32 // category of each block
	// ck holds the live bytes per category before event c·indexCheckpoint, for every c, in one flat slice.
	ck []int64
}

// Index builds the TimelineIndex of t.
func (t *TimelineDetail) Index() *TimelineIndex {
	n, m, nc := t.Events, len(t.Start), len(t.Categories)
	x := &TimelineIndex{d: t, alloc: t.Allocated(), res: make([]int64, len(t.ReservedDelta)), cat: make([]int32, m)}
	r := t.InitialReserved
	for k, dr := range t.ReservedDelta {
		r += dr
		x.res[k] = r
	}
	x.sOff, x.eOff = make([]int32, n+1), make([]int32, n+1)
	cur := make([]int64, nc)
	for i := range t.Start {
		x.cat[i] = t.SiteCategory[t.Site[i]]
		if t.Start[i] >= 0 {
			x.sOff[t.Start[i]+1]++
		} else {
			cur[x.cat[i]] += t.Size[i]
		}
		if int(t.End[i]) < n {
			x.eOff[t.End[i]+1]++
		}
	}
	for j := range n {
		x.sOff[j+1] += x.sOff[j]
		x.eOff[j+1] += x.eOff[j]
	}
	x.sIdx, x.eIdx = make([]int32, x.sOff[n]), make([]int32, x.eOff[n])
	sPos, ePos := append([]int32(nil), x.sOff[:n]...), append([]int32(nil), x.eOff[:n]...)
	for i := range t.Start {
		if s := t.Start[i]; s >= 0 {
			x.sIdx[sPos[s]] = int32(i)
			sPos[s]++
		}
		if e := t.End[i]; int(e) < n {
			x.eIdx[ePos[e]] = int32(i)
			ePos[e]++
		}
	}
	x.ck = make([]int64, 0, (n/indexCheckpoint+1)*nc)
	for j := range n {
		if j%indexCheckpoint == 0 {
			x.ck = append(x.ck, cur...)
		}
		x.apply(cur, j)
	}
	if n%indexCheckpoint == 0 {
		x.ck = append(x.ck, cur...)
	}
	return x
}

// apply adds the blocks that event j starts and removes those it ends from the per-category bytes cur.
func (x *TimelineIndex) apply(cur []int64, j int) {
	for _, b := range x.sIdx[x.sOff[j]:x.sOff[j+1]] {
		cur[x.cat[b]] += x.d.Size[b]
	}
	for _, b := range x.eIdx[x.eOff[j]:x.eOff[j+1]] {
		cur[x.cat[b]] -= x.d.Size[b]
	}
}

// Events is the trace length.
func (x *TimelineIndex) Events() int { return x.d.Events }

// Allocated and Reserved are the live requested bytes and segment bytes after event j.
func (x *TimelineIndex) Allocated(j int) int64 { return x.alloc[j] }

// Reserved is the segment bytes after event j.
func (x *TimelineIndex) Reserved(j int) int64 {
	ev := x.d.ReservedEvent
	if k := sort.Search(len(ev), func(i int) bool { return int(ev[i]) > j }); k > 0 {
		return x.res[k-1]
	}
	return x.d.InitialReserved
}

// WhatIf is the what-if's reserved bytes after event j, false without a what-if.
func (x *TimelineIndex) WhatIf(j int) (int64, bool) { return x.d.whatIf(j) }

func (t *TimelineDetail) whatIf(j int) (int64, bool) {
	ev := t.WhatIfEvent
	k := sort.Search(len(ev), func(i int) bool { return int(ev[i]) > j })
	if k == 0 {
		return 0, false
	}
	return t.WhatIfReserved[k-1], true
}

// CategoriesAt returns the live bytes per category (TimelineDetail.Categories) after event j.
func (x *TimelineIndex) CategoriesAt(j int) []int64 {
	nc := len(x.d.Categories)
	c := (j + 1) / indexCheckpoint
	cur := append([]int64(nil), x.ck[c*nc:(c+1)*nc]...)
	for e := c * indexCheckpoint; e <= j; e++ {
		x.apply(cur, e)
	}
	return cur
}

// LiveAt returns the largest blocks live after event j (indexes into the detail's block slices), largest first,
// at most count.
func (x *TimelineIndex) LiveAt(j, count int) []int {
	t := x.d
	var top []int
	for i := range t.Start {
		if int(t.Start[i]) > j || j >= int(t.End[i]) {
			continue
		}
		if len(top) == count && t.Size[i] <= t.Size[top[count-1]] {
			continue
		}
		k := sort.Search(len(top), func(q int) bool { return t.Size[top[q]] < t.Size[i] })
		if len(top) < count {
			top = append(top, 0)
		}
		copy(top[k+1:], top[k:len(top)-1])
		top[k] = i
	}
	return top
}

// Envelope cuts events [from, to) into at most buckets buckets (one event each when there are fewer): O(to −
// from) plus, per bucket, one category vector replayed from its checkpoint.
func (x *TimelineIndex) Envelope(from, to, buckets int) TimelineEnvelope {
	t := x.d
	e := t.extremes(x.alloc, from, to, buckets)
	if len(e.Peak) == 0 {
		return e
	}
	e.ByCategory = make([][]int64, len(t.Categories))
	for c := range e.ByCategory {
		e.ByCategory[c] = make([]int64, len(e.Peak))
	}
	for k, j := range e.Peak {
		for c, v := range x.CategoriesAt(j) {
			e.ByCategory[c][k] = v
		}
	}
	return e
}

// extremes is an envelope without its categories, from the allocated bytes after every event and the changes of
// reserved memory.
func (t *TimelineDetail) extremes(alloc []int64, from, to, buckets int) TimelineEnvelope {
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
	if len(t.WhatIfEvent) > 0 {
		e.WhatIfEnd = make([]int64, nb)
	}
	// Reserved after event j is the initial bytes plus the changes at events up to j: it moves at a handful of
	// events, so it is followed as the events go by rather than held per event.
	r, rk := t.InitialReserved, 0
	k := -1
	for j := from; j < to; j++ {
		for rk < len(t.ReservedEvent) && int(t.ReservedEvent[rk]) <= j {
			r += t.ReservedDelta[rk]
			rk++
		}
		if k+1 < nb && j == e.Start[k+1] {
			k++
			e.AllocMin[k], e.AllocMax[k], e.Peak[k], e.ReservedMax[k] = alloc[j], alloc[j], j, r
		}
		a := alloc[j]
		e.AllocMin[k] = min(e.AllocMin[k], a)
		if a > e.AllocMax[k] {
			e.AllocMax[k], e.Peak[k] = a, j
		}
		e.ReservedMax[k] = max(e.ReservedMax[k], r)
		e.ReservedEnd[k] = r
	}
	for k := range e.WhatIfEnd {
		end := to
		if k+1 < nb {
			end = e.Start[k+1]
		}
		e.WhatIfEnd[k], _ = t.whatIf(end - 1)
	}
	return e
}
