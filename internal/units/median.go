package units

import (
	"cmp"
	"slices"
)

// FirstMax returns the index of the first highest value of v, −1 for none: where a series of memory readings
// peaks, the earliest event of its peak, as the timeline and the tables report it.
func FirstMax[T cmp.Ordered](v []T) int {
	if len(v) == 0 {
		return -1
	}
	k := 0
	for j, x := range v {
		if x > v[k] {
			k = j
		}
	}
	return k
}

// Median is the middle value of v, or for an even count the mean of the two middle values (for integers rounded
// toward the lower one, computed without overflow); 0 for none. v is not modified. It is the sample median of
// fitted statistics (calibration); measurements compared across ranks use Percentile, which is always one of them.
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

// PercentileIndex is memscan's one quantile rule for measurements compared across ranks and inputs: the p-th
// percentile (p in 0..100) of n values sorted ascending is the one at index ⌊(n−1)·p/100⌋, numpy's method
// "lower", computed in integers so that it is exact at any n. It is always one of the values, so every
// percentile lies between the minimum and the maximum and belongs to a real rank; the median (p = 50) of an even
// count is the lower middle value. merge (p50, p90, p99, outliers) and analyze's cross-input, tracer and log
// views (imbalance, outliers) all use it, so they agree on the same ranks. −1 for n = 0.
func PercentileIndex(n, p int) int {
	if n <= 0 {
		return -1
	}
	p = min(max(p, 0), 100)
	return (n-1)/100*p + (n-1)%100*p/100
}

// PercentileSorted is the p-th percentile of sorted (ascending) by PercentileIndex; 0 for none.
func PercentileSorted(sorted []int64, p int) int64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[PercentileIndex(len(sorted), p)]
}

// Percentile is the p-th percentile of v by PercentileIndex; v is not modified.
func Percentile(v []int64, p int) int64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return PercentileSorted(s, p)
}
