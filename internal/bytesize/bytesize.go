// Package bytesize reads sizes given on the command line ("64MiB", "2GB", "1048576").
package bytesize

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Parse reads 100MB, 2GB, 512KiB, 8GiB, 1TiB or a plain byte count; decimal units are powers of 1000, binary
// units of 1024, and the letters may be in either case. The result is positive and fits an int64.
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToUpper(s))
	mult := 1.0
	for _, u := range []struct {
		suffix string
		m      float64
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"TIB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.m
			break
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	if err != nil || !(v > 0) {
		return 0, fmt.Errorf("cannot read %q as a size (e.g. 512MiB, 8GiB, 2GB)", s)
	}
	b := v * mult
	if b >= math.MaxInt64 {
		return 0, fmt.Errorf("size %q is larger than %d bytes", s, int64(math.MaxInt64))
	}
	if b < 1 {
		return 0, fmt.Errorf("size %q is less than one byte", s)
	}
	return int64(b), nil
}

// Format renders n the way Parse reads it, in the largest binary unit it reaches: exactly when that unit divides
// it ("64MiB"), else to a tenth ("11.8GiB"); below 1 KiB in bytes ("1000").
func Format(n int64) string {
	for _, u := range []struct {
		shift int
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		switch {
		case n < 1<<u.shift:
			continue
		case n%(1<<u.shift) == 0:
			return fmt.Sprintf("%d%s", n>>u.shift, u.name)
		}
		return fmt.Sprintf("%.1f%s", float64(n)/float64(int64(1)<<u.shift), u.name)
	}
	return strconv.FormatInt(n, 10)
}
