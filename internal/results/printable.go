package results

import (
	"io"

	"github.com/memscan/memscan/internal/units"
)

// printable wraps the writer of a report meant for a terminal or a Markdown viewer (the text reports, the
// Markdown files, the console views) so that what a terminal would act on is written escaped (units.Terminal):
// file names, categories, ranks and stack frames come from the inputs, and an ESC among them would otherwise
// reach the terminal as an escape sequence.
func printable(w io.Writer) io.Writer { return &escaper{w: w} }

type escaper struct {
	w   io.Writer
	buf []byte
}

func (e *escaper) Write(p []byte) (int, error) {
	clean := true
	for _, c := range p {
		if c >= 0x7f || c < 0x20 && c != '\n' && c != '\t' {
			clean = false
			break
		}
	}
	if clean {
		return e.w.Write(p)
	}
	e.buf = units.AppendEscaped(e.buf[:0], p, false)
	if _, err := e.w.Write(e.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// oneLine keeps a name from the inputs on its line (units.OneLine).
func oneLine(s string) string { return units.OneLine(s) }

// oneLineArgs applies oneLine to the string arguments of a printf: the format is memscan's own, the strings are
// what the inputs named.
func oneLineArgs(args []any) []any {
	for i, a := range args {
		if s, ok := a.(string); ok {
			args[i] = oneLine(s)
		}
	}
	return args
}
