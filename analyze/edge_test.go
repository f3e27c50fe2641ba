package analyze

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memscan/memscan/allocator"
	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/snapbuild"
	"github.com/memscan/memscan/internal/traingen"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/snapshot"
)

// edgeRun is a short training run whose sequence length changes (the cache fragments), 2 MiB-multiple sizes.
var edgeRun = traingen.TrainingLoop{Iterations: 4, Layers: 4, WeightBytes: 64 << 20, ActivationBytes: 256 << 20, LogitsBytes: 512 << 20,
	Annotations: true, Scale: []float64{1, 3, 2, 4}}

// whatIf analyzes s with the what-if settings conf and the capacity given (0: none), returning the report.
func whatIf(t *testing.T, s *snapshot.Snapshot, conf string, capacity int64) *report.Report {
	t.Helper()
	opt := AllocatorOptions{Capacity: capacity, CapacitySource: "test"}
	if conf != "" {
		c, err := allocator.ParseConf(conf)
		if err != nil {
			t.Fatal(err)
		}
		opt.WhatIf = &c
	}
	r, err := AnalyzeSnapshot(context.Background(), s, Options{Allocator: opt})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func warned(r *report.Report, sub string) bool {
	return slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.Contains(w, sub) })
}

// TestWhatIfWithoutTrace: a what-if on a snapshot without a trace says it was not replayed; the same snapshot
// without a what-if, and a snapshot with a trace under the what-if, say nothing of the kind.
func TestWhatIfWithoutTrace(t *testing.T) {
	b := snapbuild.NewSnap(1)
	b.Segment(snapbuild.SegOpts{}, snapbuild.Live(1<<30, 1<<30, nil), snapbuild.Free(1<<30))
	const msg = "was not replayed: the snapshot has no allocation trace"
	if r := whatIf(t, b.S, "expandable_segments:True", 0); !warned(r, msg) {
		t.Errorf("no warning: %q", r.Warnings)
	}
	if r := whatIf(t, b.S, "", 0); warned(r, msg) {
		t.Errorf("warned without a what-if: %q", r.Warnings)
	}
	if r := whatIf(t, edgeRun.Build(), "expandable_segments:True", 0); warned(r, msg) {
		t.Errorf("warned with a trace: %q", r.Warnings)
	}
}

// TestWhatIfGarbageCollectionInactive: garbage_collection_threshold alone reclaims nothing, as in PyTorch, which
// collects only under a per-process memory fraction; the warning says so, and is absent once a fraction is set.
func TestWhatIfGarbageCollectionInactive(t *testing.T) {
	const msg = "garbage_collection_threshold acts only under a per-process memory fraction"
	r := whatIf(t, edgeRun.Build(), "garbage_collection_threshold:0.6", 0)
	ar := r.Part.(*report.SnapshotReport).AllocatorReplay
	if !warned(r, msg) || ar.PeakReservedBytes != ar.BaselinePeakReservedBytes {
		t.Errorf("threshold alone: warnings %q, peak %d vs baseline %d", r.Warnings, ar.PeakReservedBytes, ar.BaselinePeakReservedBytes)
	}
	if r := whatIf(t, edgeRun.Build(), "garbage_collection_threshold:0.6,per_process_memory_fraction:0.5", 40<<30); warned(r, msg) {
		t.Errorf("warned with a fraction: %q", r.Warnings)
	}
}

// TestWhatIfRetries: with a capacity between the run's peak allocated and what it reserved, the what-if fits only
// by releasing the cache and retrying, which the report counts and a warning states; without a capacity nothing
// retries and nothing is said.
func TestWhatIfRetries(t *testing.T) {
	s := edgeRun.Build()
	free := whatIf(t, s, "max_split_size_mb:1024", 0)
	ar := free.Part.(*report.SnapshotReport).AllocatorReplay
	capacity := (free.Peak.Bytes + ar.RecordedPeakReservedBytes) / 2
	if free.Peak.Bytes >= ar.RecordedPeakReservedBytes-1<<30 || ar.Retries != 0 || warned(free, "retried") {
		t.Fatalf("fixture: peak %d, reserved %d, retries %d, warnings %q", free.Peak.Bytes, ar.RecordedPeakReservedBytes, ar.Retries, free.Warnings)
	}
	bound := whatIf(t, s, "max_split_size_mb:1024", capacity)
	ar = bound.Part.(*report.SnapshotReport).AllocatorReplay
	if ar.Retries == 0 || ar.FailedAllocations != 0 || !warned(bound, "released every cached segment and retried") {
		t.Errorf("capacity %d: retries %d, failures %d, warnings %q", capacity, ar.Retries, ar.FailedAllocations, bound.Warnings)
	}
}

// TestWhatIfUnbounded: a what-if that reserves more than the recorded run (by findings.CacheOverheadMinBytes or
// more) with no capacity known says the replay never flushes or fails; the same what-if with a capacity, and
// expandable segments, which reserve 14 MiB more here, say nothing of it.
func TestWhatIfUnbounded(t *testing.T) {
	const msg = "no device capacity is known"
	in, err := load.DecodeFile(context.Background(), filepath.Join("..", "testdata", "example", "rank0_memory_snapshot.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	// Blocks above 20 MiB are never split: the example's 250 MiB logits-sized requests each take a segment.
	r := whatIf(t, in.Snapshot, "max_split_size_mb:20", 0)
	ar := r.Part.(*report.SnapshotReport).AllocatorReplay
	if ar.PeakReservedBytes-ar.RecordedPeakReservedBytes < findings.CacheOverheadMinBytes || !warned(r, msg) {
		t.Errorf("peak %d vs recorded %d, warnings %q", ar.PeakReservedBytes, ar.RecordedPeakReservedBytes, r.Warnings)
	}
	if r := whatIf(t, in.Snapshot, "max_split_size_mb:20", 80<<30); warned(r, msg) {
		t.Errorf("warned with a capacity: %q", r.Warnings)
	}
	if r := whatIf(t, in.Snapshot, "expandable_segments:True", 0); warned(r, msg) {
		t.Errorf("warned for a what-if that reserves no more: %q", r.Warnings)
	}
}
