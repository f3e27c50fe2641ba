package export

import (
	"context"
	"io"
	"testing"
)

// BenchmarkExport measures each format on a real 2.6 MB snapshot with C++ stacks (skipped without ../shared).
func BenchmarkExport(b *testing.B) {
	s := decodeReal(b, realPprofFiles[1])
	ctx := context.Background()
	w := Window{Start: 1000, End: 3000}
	for _, tc := range []struct {
		name string
		run  func() error
	}{
		{"pprof", func() error { return WritePprof(ctx, io.Discard, s, ProfileOptions{Classify: RulesClassifier(nil)}) }},
		{"pprof-peak", func() error {
			return WritePprof(ctx, io.Discard, s, ProfileOptions{At: AtPeak, Classify: RulesClassifier(nil)})
		}},
		{"perfetto", func() error { return WritePerfetto(ctx, io.Discard, s, TraceOptions{Classify: RulesClassifier(nil)}) }},
		{"collapsed", func() error { return WriteCollapsed(ctx, io.Discard, s) }},
		{"json", func() error { return WriteJSON(ctx, io.Discard, s) }},
		{"pickle", func() error { return WritePickle(ctx, io.Discard, s) }},
		{"slice", func() error { _, err := WriteSlice(ctx, io.Discard, s, SliceOptions{Window: &w}); return err }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				if err := tc.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
