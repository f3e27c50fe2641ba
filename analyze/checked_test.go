package analyze_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/internal/snapbuild"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/snapshot"
	"github.com/memscan/memscan/tracer"
)

// hugeSegment appends a segment of one inactive block of size bytes, with its sizes set directly (the builder's
// own sums would wrap, which is what is under test).
func hugeSegment(b *snapbuild.SnapBuilder, size int64) {
	addr := uint64(0x7f0000000000) + uint64(len(b.S.Segments))<<62
	b.S.Segments = append(b.S.Segments, snapshot.Segment{Address: addr, TotalSize: size, Type: snapshot.SegmentLarge,
		Blocks: []snapshot.Block{{Address: addr, Size: size, State: snapshot.BlockInactive}}})
}

// TestAnalyzeSizeOverflow checks that sizes adding up past 2^63−1 are an error naming the field where the
// running sum overflowed (the report printed "reserved -384.0 PiB" for them), and that large sizes that fit are
// analyzed with exact totals.
func TestAnalyzeSizeOverflow(t *testing.T) {
	const e60 = int64(1) << 60
	tests := []struct {
		name  string
		build func(b *snapbuild.SnapBuilder)
		field string // "" when the analysis must succeed
		value int64
	}{
		{
			// Segment totals 3·2^60 each: the third makes 9·2^60 > 2^63−1. (Block sizes, summed apart, fit.)
			name:  "segment totals",
			build: func(b *snapbuild.SnapBuilder) { hugeSegment(b, 3*e60); hugeSegment(b, 3*e60); hugeSegment(b, 3*e60) },
			field: "segments[2].total_size", value: 3 * e60,
		},
		{
			name:  "a block of the most negative size",
			build: func(b *snapbuild.SnapBuilder) { hugeSegment(b, 1<<20); b.S.Segments[0].Blocks[0].Size = math.MinInt64 },
			field: "segments[0].blocks[0].size", value: math.MinInt64,
		},
		{
			// The state is small; the trace's sizes alone pass the limit at its second event.
			name: "trace sizes",
			build: func(b *snapbuild.SnapBuilder) {
				b.Segment(snapbuild.SegOpts{}, snapbuild.Free(2<<20))
				b.Event(0, snapbuild.Ev(snapshot.ActionAlloc, 0x1000, 4*e60, nil), snapbuild.Ev(snapshot.ActionAlloc, 0x2000, 4*e60, nil))
			},
			field: "device_traces[0][1].size", value: 4 * e60,
		},
		{
			// 2 × 3 EiB of segments and blocks: 6 EiB reserved, large, but every sum fits.
			name:  "large sizes that fit",
			build: func(b *snapbuild.SnapBuilder) { hugeSegment(b, 3*e60); hugeSegment(b, 3*e60) },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := snapbuild.NewSnap(1)
			tc.build(b)
			rep, err := analyze.Analyze(context.Background(), testutil.Input(b, "huge.pickle"), analyze.Options{})
			if tc.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				tot, _ := rep.AllocatorTotals()
				if tot.ReservedBytes != 6*e60 || tot.InactiveBytes != 6*e60 || tot.ExternalFreeBytes != 6*e60 {
					t.Errorf("reserved %d, inactive %d, external free %d; want %d each", tot.ReservedBytes, tot.InactiveBytes, tot.ExternalFreeBytes, 6*e60)
				}
				return
			}
			var oe *analyze.OverflowError
			if !errors.As(err, &oe) || oe.Field != tc.field || oe.Value != tc.value {
				t.Fatalf("err = %v, want an OverflowError at %s (%d)", err, tc.field, tc.value)
			}
			if !strings.HasPrefix(err.Error(), "analyze huge.pickle: "+tc.field+": ") {
				t.Errorf("message %q does not start with the file and the field", err)
			}
		})
	}
}

// TestAnalyzeTracerSizeOverflow is TestAnalyzeSizeOverflow for tracer files: tensor sizes that add up past
// 2^63−1 bytes name the tensor where the sum overflowed.
func TestAnalyzeTracerSizeOverflow(t *testing.T) {
	tensor := func(size int64) tracer.Tensor { return tracer.Tensor{SizeBytes: size} }
	tr := &tracer.File{Rank: 0, Devices: []tracer.Device{
		{Name: "cuda:0", Tensors: []tracer.Tensor{tensor(1 << 62), tensor(1 << 61)}},
		{Name: "cuda:1", Tensors: []tracer.Tensor{tensor(1 << 60), tensor(1 << 61)}},
	}}
	in := &load.Input{Path: "tracer.json", Format: tracer.Format, Tracer: tr}
	_, err := analyze.Analyze(context.Background(), in, analyze.Options{})
	var oe *analyze.OverflowError
	// 2^62 + 2^61 + 2^60 fit; adding 2^61 passes 2^63−1.
	if !errors.As(err, &oe) || oe.Field != "cuda:1: tensor 1: size_bytes" || !strings.HasPrefix(err.Error(), "analyze tracer.json: cuda:1: tensor 1") {
		t.Fatalf("err = %v, want an OverflowError at cuda:1 tensor 1", err)
	}
}
