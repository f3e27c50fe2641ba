package plots

import "fmt"

// CategoryHex is CategoryColor as a CSS colour ("#1f77b4"), so the interactive page colours categories as the
// PNG charts do.
func CategoryHex(name string) string {
	r, g, b, _ := CategoryColor(name).RGBA()
	return fmt.Sprintf("#%02x%02x%02x", r>>8, g>>8, b>>8)
}
