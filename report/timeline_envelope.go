package report

// Envelope cuts events [from, to) of t into at most buckets buckets (one event each when there are fewer), as
// TimelineIndex.Envelope does, which answers repeated requests without rebuilding the index. One envelope (a
// chart's) is cheaper without the index: one pass over the events and one over the blocks, where the index
// replays up to indexCheckpoint events for every bucket's categories.
func (t *TimelineDetail) Envelope(from, to, buckets int) TimelineEnvelope {
	e := t.extremes(t.Allocated(), t.reserved(), from, to, buckets)
	nb := len(e.Peak)
	if nb == 0 {
		return e
	}
	// Block i is live after event j when Start[i] ≤ j < End[i], so it counts in the buckets whose peak events
	// lie in [Start[i], End[i]): those from the first peak at or after its start to the first at or after its
	// end. first[j−From] is the first bucket whose peak is at or after event j (the peaks grow with the buckets).
	first := make([]int32, e.To-e.From+1)
	k := 0
	for j := range first {
		for k < nb && e.Peak[k] < e.From+j {
			k++
		}
		first[j] = int32(k)
	}
	at := func(j int32) int32 {
		switch {
		case int(j) <= e.From:
			return 0
		case int(j) >= e.To:
			return int32(nb)
		}
		return first[int(j)-e.From]
	}
	// Each block adds its bytes from its first bucket on and takes them back from the one its end reaches: the
	// running sums are the live bytes per category at every bucket's peak.
	diff := make([][]int64, len(t.Categories))
	for c := range diff {
		diff[c] = make([]int64, nb+1)
	}
	for i := range t.Start {
		lo, hi := at(t.Start[i]), at(t.End[i])
		if lo == hi {
			continue
		}
		d := diff[t.SiteCategory[t.Site[i]]]
		d[lo] += t.Size[i]
		d[hi] -= t.Size[i]
	}
	e.ByCategory = make([][]int64, len(t.Categories))
	for c, d := range diff {
		var cur int64
		for k := range nb {
			cur += d[k]
			d[k] = cur
		}
		e.ByCategory[c] = d[:nb:nb]
	}
	return e
}

// reserved returns the segment bytes after every event.
func (t *TimelineDetail) reserved() []int64 {
	out := make([]int64, t.Events)
	res, rk := t.InitialReserved, 0
	for j := range out {
		for rk < len(t.ReservedEvent) && int(t.ReservedEvent[rk]) <= j {
			res += t.ReservedDelta[rk]
			rk++
		}
		out[j] = res
	}
	return out
}
