package replay

import "sort"

// Steps is a series over a trace's events that changes at few of them: reserved memory moves only at segment
// events (26 of 2.6 M in a training loop), so it is kept as its changes, 12 bytes each, instead of 8 bytes an
// event. The zero value is 0 everywhere.
type Steps struct {
	// initial is the value before the first event; at are the events whose value differs from the previous
	// one's, ascending, and val the value from each on.
	initial int64
	at      []int32
	val     []int64
}

// StepsOf returns the series whose value is initial before the first event and dense[j] after event j.
func StepsOf(initial int64, dense []int64) Steps {
	s := Steps{initial: initial}
	prev := initial
	for j, v := range dense {
		if v != prev {
			s.at, s.val = append(s.at, int32(j)), append(s.val, v)
			prev = v
		}
	}
	return s
}

// At returns the value after event j (the value before the first event for j < 0).
func (s *Steps) At(j int) int64 {
	k := s.last(j)
	if k < 0 {
		return s.initial
	}
	return s.val[k]
}

// last returns the index of the last change at or before event j, −1 when none.
func (s *Steps) last(j int) int {
	return sort.Search(len(s.at), func(k int) bool { return int(s.at[k]) > j }) - 1
}

// Max returns the largest value after events lo through hi−1 (hi > lo).
func (s *Steps) Max(lo, hi int) int64 {
	best := s.At(lo)
	for k := s.last(lo) + 1; k < len(s.at) && int(s.at[k]) < hi; k++ {
		best = max(best, s.val[k])
	}
	return best
}

// ArgMax returns the first of events 0..n−1 after which the value is largest, and that value; −1 and the initial
// value only when the initial value is larger than every later one.
func (s *Steps) ArgMax(n int) (int, int64) {
	if n <= 0 {
		return -1, s.initial
	}
	idx, best := 0, s.At(0)
	for k := s.last(0) + 1; k < len(s.at) && int(s.at[k]) < n; k++ {
		if s.val[k] > best {
			idx, best = int(s.at[k]), s.val[k]
		}
	}
	if s.initial > best {
		return -1, s.initial
	}
	return idx, best
}

// Changes returns how many times the value changes.
func (s *Steps) Changes() int { return len(s.at) }

// Change returns the k-th change: its event and the value from it on.
func (s *Steps) Change(k int) (event int, value int64) { return int(s.at[k]), s.val[k] }

// stepsFrom builds the series from per-event deltas given at the events at (ascending, one per event) starting
// from initial; deltas of 0 make no change.
func stepsFrom(initial int64, at []int32, deltas []int64) Steps {
	s := Steps{initial: initial}
	cur := initial
	for k, d := range deltas {
		if d == 0 {
			continue
		}
		cur += d
		s.at, s.val = append(s.at, at[k]), append(s.val, cur)
	}
	return s
}
