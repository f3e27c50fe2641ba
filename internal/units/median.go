package units

import "slices"

// Median is the middle value of v, or for an even count the mean of the two middle values (for integers rounded
// toward the lower one, computed without overflow); 0 for none. v is not modified.
func Median[T int64 | float64](v []T) T {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	lo, hi := s[n/2-1], s[n/2]
	if _, isFloat := any(lo).(float64); isFloat {
		return (lo + hi) / 2
	}
	return lo + (hi-lo)/2
}
