package units

import "fmt"

// Share is part as a percentage of whole; 0 when whole is not positive, so an empty input has no share.
func Share(part, whole int64) float64 {
	if whole <= 0 {
		return 0
	}
	return float64(part) / float64(whole) * 100
}

// Percent renders part/whole as "12.34 %"; a whole that is not positive gives "-". It is the only percentage
// formatter for shares; signed errors ("+1.2%") are a different quantity and keep their own column style.
func Percent(part, whole int64) string {
	if whole <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f %%", float64(part)*100/float64(whole))
}
