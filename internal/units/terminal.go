package units

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Terminal returns s with what a terminal would act on written as visible escapes: control characters other
// than newline and tab (ESC above all, which starts colours, cursor moves, window titles, clipboard writes),
// DEL, the C1 controls (\u009b is a one-byte CSI) and bytes that are not UTF-8 (\xff). Names from the inputs
// (file names, categories, ranks, frames) pass through it before they reach a terminal or a Markdown file.
func Terminal(s string) string {
	if !needsEscape(s, false) {
		return s
	}
	return string(AppendEscaped(nil, []byte(s), false))
}

// OneLine is Terminal that also escapes newline, carriage return and tab, for text that must stay on its line:
// a table cell, a title, a name in a list (a newline in a name would make a fake row).
func OneLine(s string) string {
	if !needsEscape(s, true) {
		return s
	}
	return string(AppendEscaped(nil, []byte(s), true))
}

func needsEscape(s string, lineBreaks bool) bool {
	return strings.ContainsFunc(s, func(r rune) bool {
		return r < 0x20 && (lineBreaks || r != '\n' && r != '\t') || r >= 0x7f && r < 0xa0 || r == utf8.RuneError
	})
}

// AppendEscaped appends p to dst escaped as Terminal (lineBreaks false) or OneLine (true) escape it.
func AppendEscaped(dst, p []byte, lineBreaks bool) []byte {
	for len(p) > 0 {
		r, size := utf8.DecodeRune(p)
		switch {
		case r == utf8.RuneError && size <= 1:
			dst = fmt.Appendf(dst, `\x%02x`, p[0])
		case (r == '\n' || r == '\t') && !lineBreaks:
			dst = append(dst, byte(r))
		case r == '\n':
			dst = append(dst, `\n`...)
		case r == '\t':
			dst = append(dst, `\t`...)
		case r == '\r':
			dst = append(dst, `\r`...)
		case r < 0x20 || r == 0x7f:
			dst = fmt.Appendf(dst, `\x%02x`, r)
		case r >= 0x80 && r < 0xa0:
			dst = fmt.Appendf(dst, `\u%04x`, r)
		default:
			dst = append(dst, p[:size]...)
		}
		p = p[size:]
	}
	return dst
}
