package export

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/memscan/memscan/snapshot"
)

// Window is a half-open range [Start, End) of trace event indices, applied to every device trace.
type Window struct {
	Start, End int
}

// ParseWindow parses "A:B" (either side may be empty: ":B" from the start, "A:" to the end).
func ParseWindow(s string) (Window, error) {
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return Window{}, fmt.Errorf("--window %q: want START:END event indices", s)
	}
	w := Window{Start: 0, End: -1}
	var err error
	if a != "" {
		if w.Start, err = strconv.Atoi(a); err != nil || w.Start < 0 {
			return Window{}, fmt.Errorf("--window %q: start must be a non-negative event index", s)
		}
	}
	if b != "" {
		if w.End, err = strconv.Atoi(b); err != nil || w.End < 0 {
			return Window{}, fmt.Errorf("--window %q: end must be a non-negative event index", s)
		}
		if w.End < w.Start {
			return Window{}, fmt.Errorf("--window %q: end is before start", s)
		}
	}
	return w, nil
}

// bounds clips the window to a trace of length n.
func (w Window) bounds(n int) (int, int) {
	end := w.End
	if end < 0 || end > n {
		end = n
	}
	start := min(w.Start, end)
	return start, end
}

// SliceOptions choose what a sliced snapshot keeps.
type SliceOptions struct {
	// Window keeps only these trace events of each device; nil keeps all.
	Window *Window
	// TopN > 0 keeps only the trace events of the N creation sites with the most bytes (allocations in the trace
	// plus live blocks), together with every segment, OOM, snapshot and annotation event.
	TopN     int
	Classify Classifier // nil means DefaultClassifier
}

// SiteBytes is one creation site and the bytes ranked for it.
type SiteBytes struct {
	Site  string
	Bytes int64
}

// Slice returns a smaller snapshot: the segments (the allocator state when the snapshot was taken) are kept whole
// so its totals stay those of the original, while the traces are cut to the window and/or the top-N sites. The
// input is not modified; stacks are shared with it. The second result lists the kept sites when TopN is set.
func Slice(ctx context.Context, s *snapshot.Snapshot, opt SliceOptions) (*snapshot.Snapshot, []SiteBytes, error) {
	// A bare segment list (torch ≤ 1.13) stays one: it has no traces to cut, and writing it as a dict would make
	// readers date it to another generation.
	out := *s
	out.DeviceTraces = make([][]snapshot.TraceEntry, len(s.DeviceTraces))
	for d, tr := range s.DeviceTraces {
		if opt.Window != nil {
			a, b := opt.Window.bounds(len(tr))
			tr = tr[a:b]
		}
		out.DeviceTraces[d] = tr
	}
	if opt.TopN <= 0 {
		return &out, nil, nil
	}
	classify := memoized(opt.Classify)
	site := func(st *snapshot.Stack) string {
		_, v := classify(st)
		return v
	}
	bytes := make(map[string]int64)
	for _, tr := range out.DeviceTraces {
		for i := range tr {
			if tr[i].Action == snapshot.ActionAlloc {
				bytes[site(out.EntryStack(&tr[i]))] += tr[i].Size
			}
		}
	}
	for i := range s.Segments {
		for j := range s.Segments[i].Blocks {
			if b := &s.Segments[i].Blocks[j]; b.State == snapshot.BlockActiveAllocated {
				bytes[site(b.Stack)] += b.RequestedSize
			}
		}
	}
	ranked := make([]SiteBytes, 0, len(bytes))
	for k, v := range bytes {
		ranked = append(ranked, SiteBytes{k, v})
	}
	slices.SortFunc(ranked, func(a, b SiteBytes) int {
		return cmp.Or(cmp.Compare(b.Bytes, a.Bytes), strings.Compare(a.Site, b.Site))
	})
	if len(ranked) > opt.TopN {
		ranked = ranked[:opt.TopN]
	}
	keep := make(map[string]bool, len(ranked))
	for _, r := range ranked {
		keep[r.Site] = true
	}
	for d, tr := range out.DeviceTraces {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		kept := make([]snapshot.TraceEntry, 0, len(tr)/4)
		// A free belongs to the site of the alloc at its address; frees of allocations older than the trace are
		// judged by their own stack.
		owner := make(map[uint64]bool)
		for i := range tr {
			e := &tr[i]
			var k bool
			switch e.Action {
			case snapshot.ActionAlloc:
				k = keep[site(out.EntryStack(e))]
				owner[e.Addr] = k
			case snapshot.ActionFreeRequested, snapshot.ActionFreeCompleted:
				var known bool
				k, known = owner[e.Addr]
				if !known {
					k = keep[site(out.EntryStack(e))]
				}
				if e.Action == snapshot.ActionFreeCompleted {
					delete(owner, e.Addr)
				}
			default:
				k = true
			}
			if k {
				kept = append(kept, *e)
			}
		}
		out.DeviceTraces[d] = kept
	}
	return &out, ranked, nil
}

// WriteSlice slices s and writes it as a protocol-4 pickle.
func WriteSlice(ctx context.Context, w io.Writer, s *snapshot.Snapshot, opt SliceOptions) ([]SiteBytes, error) {
	sl, kept, err := Slice(ctx, s, opt)
	if err != nil {
		return nil, err
	}
	return kept, WritePickle(ctx, w, sl)
}
