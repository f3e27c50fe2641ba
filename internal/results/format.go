package results

import (
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// GroupDigits renders n with a space every three digits ("13 207 024 640"), the exact-bytes column.
func GroupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// FormatTimeUS renders a Unix-epoch microsecond time in UTC, so reports do not depend on the reader's zone.
func FormatTimeUS(us int64) string {
	return time.UnixMicro(us).UTC().Format("2006-01-02 15:04:05.000000 UTC")
}

// align is a column alignment in a text table.
type align uint8

const (
	alignLeft align = iota
	alignRight
)

// table is a plain-text table with a header row; widths are computed from the content so the output is
// deterministic and needs no terminal.
type table struct {
	header []string
	aligns []align
	rows   [][]string
}

func newTable(aligns []align, header ...string) *table {
	return &table{header: header, aligns: aligns}
}

// add appends a row; each cell is kept on one line (oneLine), since names come from the inputs.
func (t *table) add(cells ...string) {
	row := make([]string, len(cells))
	for i, c := range cells {
		row[i] = oneLine(c)
	}
	t.rows = append(t.rows, row)
}

// write prints the table indented by indent spaces, columns separated by two spaces.
func (t *table) write(w io.Writer, indent int) {
	widths := make([]int, len(t.header))
	measure := func(cells []string) {
		for i, c := range cells {
			if i < len(widths) {
				widths[i] = max(widths[i], utf8.RuneCountInString(c))
			}
		}
	}
	measure(t.header)
	for _, r := range t.rows {
		measure(r)
	}
	pad := strings.Repeat(" ", indent)
	line := func(cells []string) {
		var b strings.Builder
		b.WriteString(pad)
		for i := range widths {
			c := ""
			if i < len(cells) {
				c = cells[i]
			}
			gap := widths[i] - utf8.RuneCountInString(c)
			if i > 0 {
				b.WriteString("  ")
			}
			if i < len(t.aligns) && t.aligns[i] == alignRight {
				b.WriteString(strings.Repeat(" ", gap))
				b.WriteString(c)
			} else {
				b.WriteString(c)
				if i < len(widths)-1 {
					b.WriteString(strings.Repeat(" ", gap))
				}
			}
		}
		io.WriteString(w, strings.TrimRight(b.String(), " ")+"\n")
	}
	line(t.header)
	rule := make([]string, len(widths))
	for i, wd := range widths {
		rule[i] = strings.Repeat("-", wd)
	}
	line(rule)
	for _, r := range t.rows {
		line(r)
	}
}

// truncate shortens s to at most n runes, keeping the end (the most specific part of a path or site).
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n || n < 2 {
		return s
	}
	r := []rune(s)
	return "…" + string(r[len(r)-(n-1):])
}
