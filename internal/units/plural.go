package units

import "strconv"

// Plural writes n with the singular or the plural noun, so output never reads "1 runs" or "run(s)". The plural
// is given rather than derived because English plurals are irregular ("micro-batches").
func Plural[T ~int | ~int64](n T, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(int64(n), 10) + " " + many
}
