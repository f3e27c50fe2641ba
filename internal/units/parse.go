package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseBytes reads a size the way users write one: a plain byte count, or a number with a unit — decimal KB, MB,
// GB, TB (powers of 1000) or binary KiB, MiB, GiB, TiB (powers of 1024), case-insensitive, "B" optional after
// the prefix ("80G" is 80 GB). It rejects zero, negative and non-finite sizes.
func ParseBytes(s string) (int64, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := 1.0
	for _, u := range []struct {
		suffix string
		m      float64
	}{
		{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"TIB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
		{"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"T", 1e12}, {"B", 1},
	} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.m
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || v <= 0 || math.IsInf(v, 0) || v*mult >= math.MaxInt64 {
		return 0, fmt.Errorf("cannot read %q as a size (e.g. 80GB, 139.8GiB or a byte count)", s)
	}
	if v*mult < 1 {
		return 0, fmt.Errorf("size %q is less than one byte", s)
	}
	return int64(v * mult), nil
}
