package export

import (
	"context"
	"io"

	"github.com/memscan/memscan/snapshot"
)

// Options configure Write; each field says which formats read it.
type Options struct {
	// At is the moment a pprof profile describes.
	At At
	// Rank is the process id of a Perfetto trace.
	Rank int
	// Window and TopN cut a slice (see SliceOptions).
	Window *Window
	TopN   int
	// Classify names the categories and sites of pprof, Perfetto and slice; nil means DefaultClassifier.
	Classify Classifier
	// Source names the input in a pprof profile and a Perfetto trace.
	Source string
}

// Binary says whether a format is binary, which a terminal should not be sent.
func (f Format) Binary() bool { return f == FormatPprof || f == FormatSlice }

// Write writes s to w in format. A slice cut to its TopN sites returns the sites it kept.
func Write(ctx context.Context, w io.Writer, s *snapshot.Snapshot, format Format, opt Options) ([]SiteBytes, error) {
	switch format {
	case FormatPprof:
		return nil, WritePprof(ctx, w, s, ProfileOptions{At: opt.At, Classify: opt.Classify, Source: opt.Source})
	case FormatPerfetto:
		return nil, WritePerfetto(ctx, w, s, TraceOptions{Rank: opt.Rank, Classify: opt.Classify, Source: opt.Source})
	case FormatCollapsed:
		return nil, WriteCollapsed(ctx, w, s)
	case FormatJSON:
		return nil, WriteJSON(ctx, w, s)
	case FormatSlice:
		return WriteSlice(ctx, w, s, SliceOptions{Window: opt.Window, TopN: opt.TopN, Classify: opt.Classify})
	}
	_, err := ParseFormat(string(format))
	return nil, err
}

// Caveat says how the output of format differs from what opt asks for when s lacks the allocator trace that the
// request needs: the output is still valid, but a "peak" profile would be mislabelled without the warning. It is
// empty when nothing is missing.
func Caveat(s *snapshot.Snapshot, format Format, opt Options) string {
	if hasTrace(s) {
		return ""
	}
	switch {
	case format == FormatPprof && opt.At == AtPeak:
		return "has no allocator trace, so there is no peak; the profile holds the snapshot's live blocks"
	case format == FormatSlice && opt.Window != nil:
		return "has no allocator trace; --window has nothing to cut"
	}
	return ""
}

// hasTrace says whether any device of the snapshot recorded allocator trace events.
func hasTrace(s *snapshot.Snapshot) bool {
	for _, t := range s.DeviceTraces {
		if len(t) > 0 {
			return true
		}
	}
	return false
}
