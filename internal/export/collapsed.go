package export

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/memscan/memscan/snapshot"
)

// WriteCollapsed writes folded stacks in the shape `python -m torch.cuda._memory_viz memory` feeds to flamegraph.pl:
// one line per block, `stream_<s>;<state>;<root frame>;…;<leaf frame> <bytes>`, frames filtered like the viewer
// and formatted basename(filename):line:name. The bytes are the block's used (requested) size; rounding slack and
// stale sizes show up as a `<gaps>` line, as upstream. Legacy blocks with history get one line per history entry
// (`<no-context>` when the entry has no stack).
func WriteCollapsed(ctx context.Context, w io.Writer, s *snapshot.Snapshot) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var line []byte
	// Stacks are shared through the pickle memo, so caching the joined fragment per *Stack saves most of the work.
	frag := make(map[*snapshot.Stack]string)
	fragment := func(st *snapshot.Stack) string {
		if st == nil || len(st.Frames) == 0 {
			return "<non-python>"
		}
		if f, ok := frag[st]; ok {
			return f
		}
		var parts []string
		for i := len(st.Frames) - 1; i >= 0; i-- {
			if KeepFrame(st.Frames[i]) {
				parts = append(parts, foldedFrame(shortFrame(st.Frames[i])))
			}
		}
		f := strings.Join(parts, ";")
		frag[st] = f
		return f
	}
	emit := func(prefix, state, frames string, n int64) error {
		line = line[:0]
		line = append(line, prefix...)
		line = append(line, ';')
		line = append(line, state...)
		line = append(line, ';')
		line = append(line, frames...)
		line = append(line, ' ')
		line = strconv.AppendInt(line, n, 10)
		line = append(line, '\n')
		_, err := bw.Write(line)
		return err
	}
	for i := range s.Segments {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		seg := &s.Segments[i]
		prefix := "stream_" + strconv.FormatUint(seg.Stream, 10)
		for j := range seg.Blocks {
			b := &seg.Blocks[j]
			state := b.State.String()
			var accounted int64
			if len(b.History) == 0 {
				accounted = b.RequestedSize
				if err := emit(prefix, state, fragment(b.Stack), accounted); err != nil {
					return err
				}
			} else {
				for _, h := range b.History {
					accounted += h.RealSize
					fr := "<no-context>"
					if h.Stack != nil {
						fr = fragment(h.Stack)
					}
					if err := emit(prefix, state, fr, h.RealSize); err != nil {
						return err
					}
				}
			}
			if gap := b.Size - accounted; gap != 0 {
				if err := emit(prefix, state, "<gaps>", gap); err != nil {
					return err
				}
			}
		}
	}
	return bw.Flush()
}

// foldedFrame escapes what would change a folded-stacks line's meaning: ';' separates frames and a line break
// ends the line, so a frame named "f;g" or "f\n1 999" read as two frames, or as a fake stack with a count of its
// own. They become \x3b and \n (other control characters \xNN), which flame graph tools show as written.
func foldedFrame(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r == ';' || r < 0x20 || r == 0x7f }) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == ';':
			b.WriteString(`\x3b`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
