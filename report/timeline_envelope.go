package report

// Envelope cuts events [from, to) of t into at most buckets buckets (one event each when there are fewer), as
// TimelineIndex.Envelope does, which answers repeated requests without rebuilding the index. One envelope (a
// chart's) is cheaper without the index: one pass over the events and one over the blocks, where the index
// replays up to indexCheckpoint events for every bucket's categories.
func (t *TimelineDetail) Envelope(from, to, buckets int) TimelineEnvelope {
	e := t.extremes(t.Allocated(), from, to, buckets)
	nb := len(e.Peak)
	if nb == 0 {
		return e
	}
	// Block i is live after event j when Start[i] ≤ j < End[i], so it counts in the buckets whose peak events
	// lie in [Start[i], End[i]): those from the first peak at or after its start to the first at or after its
	// end. at(j) is the first bucket whose peak is at or after event j (the peaks grow with the buckets): the
	// bucket holding j, or the next one when j lies past its peak.
	n := e.To - e.From
	at := func(j int32) int32 {
		switch {
		case int(j) <= e.From:
			return 0
		case int(j) >= e.To:
			return int32(nb)
		}
		// Bucket k starts at From + k·n/nb (rounded down): j's is the last k whose start is at or before j,
		// found from the quotient and put right by the starts themselves.
		off := int(j) - e.From
		k := min(off*nb/n, nb-1)
		for k+1 < nb && e.Start[k+1] <= int(j) {
			k++
		}
		for k > 0 && e.Start[k] > int(j) {
			k--
		}
		if e.Peak[k] < int(j) {
			k++
		}
		return int32(k)
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
