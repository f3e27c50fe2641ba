package analyze

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/memscan/memscan/allocator"
	"github.com/memscan/memscan/internal/snapbuild"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/snapshot"
	"github.com/vmihailenco/msgpack/v5"
)

// decodeGPURun decodes one of the shared H200 runs (skipping when the shared data is absent).
func decodeGPURun(t *testing.T, name string) *load.Input { return testutil.DecodeGPURun(t, name) }

// TestReplayAllocatorVarlen replays the H200 variable-length run: PyTorch recorded max_memory_reserved
// 79079407616 B (runs.json); with expandable segments the same run measured 61.6 GiB (issue 14).
func TestReplayAllocatorVarlen(t *testing.T) {
	in := decodeGPURun(t, "llama1b-varlen-b4-snap.pickle.gz")
	split, err := allocator.ParseConf("max_split_size_mb:512")
	if err != nil {
		t.Fatal(err)
	}
	reps, err := ReplayAllocator(context.Background(), in.Snapshot, AllocatorOptions{WhatIf: &split, Capacity: 149381316608, CapacitySource: "--device-memory"})
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 1 {
		t.Fatalf("%d replays, want one (one device)", len(reps))
	}
	r := reps[0]
	const recorded = 79079407616
	if r.RecordedPeakReservedBytes != recorded || r.BaselinePeakReservedBytes != recorded || !r.BaselineMatchesRecording || r.Partial {
		t.Errorf("recorded %d baseline %d (match %v, partial %v), PyTorch %d", r.RecordedPeakReservedBytes, r.BaselinePeakReservedBytes, r.BaselineMatchesRecording, r.Partial, int64(recorded))
	}
	if got := float64(r.ExpandablePeakReservedBytes) / (1 << 30); got < 61.3 || got > 61.9 {
		t.Errorf("expandable peak %.2f GiB, measured 61.6", got)
	}
	if want := recorded - r.ExpandablePeakReservedBytes; r.ExpandableSavingBytes() != want {
		t.Errorf("saving %d, want %d (PyTorch's peak minus the expandable peak)", r.ExpandableSavingBytes(), want)
	}
	if r.Settings != "max_split_size_mb:512" || !r.WhatIf || r.RecordedSettings != "" || !r.RecordedSettingsKnown {
		t.Errorf("settings %q (what-if %v), recorded %q (known %v)", r.Settings, r.WhatIf, r.RecordedSettings, r.RecordedSettingsKnown)
	}
	if r.CapacityBytes != 149381316608 || r.CapacitySource != "--device-memory" {
		t.Errorf("capacity %d from %q", r.CapacityBytes, r.CapacitySource)
	}
	if r.PeakReservedBytes <= r.BaselinePeakReservedBytes || r.PeakReservedBytes > r.CapacityBytes || len(r.WhatIfTimeline) == 0 {
		t.Errorf("what-if peak %d (baseline %d, capacity %d), %d timeline samples", r.PeakReservedBytes, r.BaselinePeakReservedBytes, r.CapacityBytes, len(r.WhatIfTimeline))
	}
	f := r.BaselineFragmentation
	if f.Reserved != r.BaselinePeakReservedBytes || f.Free != f.Reserved-f.Allocated || f.CachedSegments+f.FreeInUsedSegments != f.Free {
		t.Errorf("baseline fragmentation does not add up: %+v", f)
	}
}

// TestExpandableSaving: the saving is baseline minus expandable peak, never negative, and 0 without a replay.
func TestExpandableSaving(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *report.AllocatorReplay
		want int64
	}{
		{"saves", &report.AllocatorReplay{BaselinePeakReservedBytes: 10 << 30, ExpandablePeakReservedBytes: 9 << 30}, 1 << 30},
		{"costs more", &report.AllocatorReplay{BaselinePeakReservedBytes: 9 << 30, ExpandablePeakReservedBytes: 10 << 30}, 0},
		{"already on", &report.AllocatorReplay{BaselinePeakReservedBytes: 9 << 30, ExpandablePeakReservedBytes: 9 << 30}, 0},
		{"no replay", nil, 0},
	} {
		if got := tc.r.ExpandableSavingBytes(); got != tc.want {
			t.Errorf("%s: saving %d, want %d", tc.name, got, tc.want)
		}
	}
}

// TestReplayAllocatorPartial: a snapshot whose trace begins after its only segment was made replays from the
// final state and says so.
func TestReplayAllocatorPartial(t *testing.T) {
	b := snapbuild.NewSnap(1)
	base := b.Segment(snapbuild.SegOpts{}, snapbuild.Live(4*allocator.MiB, 4*allocator.MiB, nil), snapbuild.Free(16*allocator.MiB))
	b.Event(0, snapbuild.Ev(snapshot.ActionFreeRequested, base, 5*allocator.MiB, nil), snapbuild.Ev(snapshot.ActionFreeCompleted, base, 5*allocator.MiB, nil),
		snapbuild.Ev(snapshot.ActionAlloc, base, 4*allocator.MiB, nil))
	reps, err := ReplayAllocator(context.Background(), b.S, AllocatorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := reps[0]
	if !r.Partial || !strings.Contains(r.PartialReason, "starts after 20.0 MiB of segments were already reserved") || r.RecordedSettingsKnown {
		t.Errorf("partial %v %q, settings known %v", r.Partial, r.PartialReason, r.RecordedSettingsKnown)
	}
	if r.RecordedPeakReservedBytes != 20*allocator.MiB || r.BaselinePeakReservedBytes != 20*allocator.MiB || r.WhatIf || r.CapacitySource != "none (unlimited)" {
		t.Errorf("%+v", r)
	}
}

// TestAnalyzeAllocatorReplay: Analyze puts the replay in the report, overlays the what-if on the timeline and
// writes allocator_replay into the summary.json object.
func TestAnalyzeAllocatorReplay(t *testing.T) {
	in := decodeGPURun(t, "llama1b-bf16-b4-s2048-snap.pickle.gz")
	exp := allocator.Config{ExpandableSegments: true}
	r, err := Analyze(context.Background(), in, Options{Allocator: AllocatorOptions{WhatIf: &exp}})
	if err != nil {
		t.Fatal(err)
	}
	part := partOf[*report.SnapshotReport](t, r)
	ar := part.AllocatorReplay
	// 40194015232 B is PyTorch's max_memory_reserved for this run (runs.json).
	if ar == nil || ar.RecordedPeakReservedBytes != 40194015232 || ar.BaselinePeakReservedBytes != 40194015232 || !ar.BaselineMatchesRecording {
		t.Fatalf("allocator replay %+v", ar)
	}
	if ar.PeakReservedBytes != ar.ExpandablePeakReservedBytes || ar.PeakReservedBytes >= ar.BaselinePeakReservedBytes || part.AllocatorReplayDevices != nil {
		t.Errorf("what-if %d, expandable %d, baseline %d, devices %d", ar.PeakReservedBytes, ar.ExpandablePeakReservedBytes, ar.BaselinePeakReservedBytes, len(part.AllocatorReplayDevices))
	}
	ts := part.Timeline[0]
	if len(ts.WhatIfReserved) != len(ts.Index) {
		t.Fatalf("what-if overlay has %d points for %d", len(ts.WhatIfReserved), len(ts.Index))
	}
	for k, v := range ts.WhatIfReserved {
		if v > ar.PeakReservedBytes || v < ts.Allocated[k] {
			t.Fatalf("point %d: what-if reserved %d outside [allocated %d, peak %d]", k, v, ts.Allocated[k], ar.PeakReservedBytes)
		}
	}
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		AllocatorReplay map[string]any `json:"allocator_replay"`
	}
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"settings", "recorded_settings", "recorded_peak_reserved_bytes", "baseline_peak_reserved_bytes",
		"peak_reserved_bytes", "partial", "baseline_fragmentation_at_peak", "fragmentation_at_peak", "expandable_peak_reserved_bytes"} {
		if _, ok := back.AllocatorReplay[k]; !ok {
			t.Errorf("summary.json allocator_replay lacks %q", k)
		}
	}
	if back.AllocatorReplay["settings"] != "expandable_segments:True" {
		t.Errorf("settings %v", back.AllocatorReplay["settings"])
	}
}

// TestAllocatorReplayWireRoundTrip: the replay survives report.msgpack and summary.json, what-if timeline included
// (msgpack only).
func TestAllocatorReplayWireRoundTrip(t *testing.T) {
	b := snapbuild.NewSnap(1)
	seg := b.Segment(snapbuild.SegOpts{}, snapbuild.Free(20*allocator.MiB))
	b.Event(0, snapbuild.Ev(snapshot.ActionSegmentAlloc, seg, 20*allocator.MiB, nil), snapbuild.Ev(snapshot.ActionAlloc, seg, 5*allocator.MiB, nil),
		snapbuild.Ev(snapshot.ActionFreeRequested, seg, 5*allocator.MiB, nil), snapbuild.Ev(snapshot.ActionFreeCompleted, seg, 5*allocator.MiB, nil))
	exp := allocator.Config{ExpandableSegments: true}
	r, err := AnalyzeSnapshot(context.Background(), b.S, Options{Allocator: AllocatorOptions{WhatIf: &exp, Capacity: 1 << 30, TotalMemory: 2 << 30, CapacitySource: "test"}})
	if err != nil {
		t.Fatal(err)
	}
	part := partOf[*report.SnapshotReport](t, r)
	if part.AllocatorReplay == nil || !part.AllocatorReplay.BaselineMatchesRecording || len(part.AllocatorReplay.WhatIfTimeline) == 0 {
		t.Fatalf("replay %+v", part.AllocatorReplay)
	}
	summary := *part.AllocatorReplay
	summary.WhatIfTimeline = nil // not in summary.json
	for _, c := range []struct {
		name      string
		marshal   func(any) ([]byte, error)
		unmarshal func([]byte, any) error
		want      *report.AllocatorReplay
	}{
		{"msgpack", msgpack.Marshal, msgpack.Unmarshal, part.AllocatorReplay},
		{"JSON", json.Marshal, json.Unmarshal, &summary},
	} {
		raw, err := c.marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back report.Report
		if err := c.unmarshal(raw, &back); err != nil {
			t.Fatal(err)
		}
		if got := partOf[*report.SnapshotReport](t, &back).AllocatorReplay; !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s round trip:\n got %+v\nwant %+v", c.name, got, c.want)
		}
	}
}

func TestAllocatorReplaySkip(t *testing.T) {
	b := snapbuild.NewSnap(1)
	seg := b.Segment(snapbuild.SegOpts{}, snapbuild.Free(20*allocator.MiB))
	b.Event(0, snapbuild.Ev(snapshot.ActionSegmentAlloc, seg, 20*allocator.MiB, nil))
	for _, skip := range []bool{false, true} {
		r, err := AnalyzeSnapshot(context.Background(), b.S, Options{Allocator: AllocatorOptions{Skip: skip}})
		if err != nil {
			t.Fatal(err)
		}
		if ar := partOf[*report.SnapshotReport](t, r).AllocatorReplay; (ar == nil) != skip {
			t.Errorf("skip %v: replay %+v", skip, ar)
		}
	}
}
