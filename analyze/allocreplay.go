package analyze

import (
	"context"
	"fmt"

	"github.com/memscan/memscan/allocator"
	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/snapshot"
)

// AllocatorOptions ask for a caching-allocator replay of each device trace under other settings.
type AllocatorOptions struct {
	// WhatIf is the configuration to try (memscan analyze --alloc-conf); nil replays the recorded settings only
	// (plus expandable_segments:True for the fragmentation finding).
	WhatIf *allocator.Config
	// Capacity is the usable device memory in bytes (from --gpu or --device-memory); 0 takes it from an oom event
	// in the trace, else the replay assumes no limit. CapacitySource names where it came from.
	Capacity       int64
	TotalMemory    int64
	CapacitySource string
	// Skip turns the replay off, for callers that do not show it (rank summaries for memscan merge).
	Skip bool
}

// ReplayAllocator replays every device trace of s through the allocator model: baseline (recorded settings), the
// expandable-segments variant and, when opt.WhatIf is set, the what-if. Devices without trace events are skipped.
func ReplayAllocator(ctx context.Context, s *snapshot.Snapshot, opt AllocatorOptions) ([]report.AllocatorReplay, error) {
	out, _, err := replayAllocator(ctx, s, opt, false)
	return out, err
}

// replayAllocator is ReplayAllocator, also returning, when series is set, each device's block bytes allocated after
// every event of the baseline (by device).
func replayAllocator(ctx context.Context, s *snapshot.Snapshot, opt AllocatorOptions, series bool) ([]report.AllocatorReplay, map[int]*allocator.BlockSeries, error) {
	var out []report.AllocatorReplay
	var blocks map[int]*allocator.BlockSeries
	for dev, tr := range s.DeviceTraces {
		if len(tr) == 0 {
			continue
		}
		r, b, err := replayDevice(ctx, s, dev, opt, series)
		if err != nil {
			return nil, nil, fmt.Errorf("allocator replay of device %d: %w", dev, err)
		}
		out = append(out, r)
		if b != nil {
			if blocks == nil {
				blocks = map[int]*allocator.BlockSeries{}
			}
			blocks[dev] = b
		}
	}
	return out, blocks, nil
}

func replayDevice(ctx context.Context, s *snapshot.Snapshot, dev int, opt AllocatorOptions, series bool) (report.AllocatorReplay, *allocator.BlockSeries, error) {
	ropt := allocator.ReplayOptions{Capacity: opt.Capacity, TotalMemory: opt.TotalMemory, AllocatedSeries: series}
	// The fragmentation finding's fix: the recorded settings with expandable segments, replayed alongside unless
	// they are on already or are the what-if.
	recorded, _, _ := allocator.ConfigFromSettings(s.AllocatorSettings)
	exp := recorded
	exp.ExpandableSegments = true
	var extra []allocator.Config
	if !recorded.ExpandableSegments && (opt.WhatIf == nil || opt.WhatIf.String() != exp.String()) {
		extra = append(extra, exp)
	}
	sr, err := allocator.ReplaySnapshot(ctx, s, dev, opt.WhatIf, ropt, extra...)
	if err != nil {
		return report.AllocatorReplay{}, nil, err
	}
	rec, base := sr.Recording, sr.Baseline
	what := base
	if sr.WhatIf != nil {
		what = sr.WhatIf
	}
	out := report.AllocatorReplay{
		Device: dev, Settings: what.Settings, WhatIf: sr.WhatIf != nil,
		RecordedSettings: sr.RecordedSettings.String(), RecordedSettingsKnown: sr.RecordedKnown,
		CapacityBytes: what.Capacity, CapacitySource: what.CapacitySource,
		RecordedPeakReservedBytes: rec.PeakReserved, BaselinePeakReservedBytes: base.PeakReserved, BaselinePeakAllocatedBytes: base.PeakAllocated,
		PeakReservedBytes: what.PeakReserved, BaselineFirstDivergence: base.FirstDivergence,
		RecordedSegments: len(rec.Created), BaselineSegments: len(base.Created), Segments: len(what.Created),
		Partial: base.Partial, PartialReason: base.PartialReason(),
		BaselineFragmentation: report.AllocatorFragmentation(base.PeakFragmentation), Fragmentation: report.AllocatorFragmentation(what.PeakFragmentation),
		FailedAllocations: len(what.Failed), FirstFailedEvent: -1, Retries: what.Retries,
	}
	if opt.Capacity > 0 && what.CapacitySource == "input" && opt.CapacitySource != "" {
		out.CapacitySource = opt.CapacitySource
	}
	if len(what.Failed) > 0 {
		out.FirstFailedEvent = what.Failed[0].Index
	}
	out.BaselineMatchesRecording = base.PeakReserved == rec.PeakReserved && base.FirstDivergence < 0 && allocator.FirstSizeMismatch(rec.Created, base.Created) < 0
	if sr.WhatIf != nil {
		out.WhatIfTimeline = make(report.ReservedTimeline, len(what.Timeline))
		for i, s := range what.Timeline {
			out.WhatIfTimeline[i] = report.ReservedSample(s)
		}
	}
	out.ExpandableSettings = exp.String()
	switch {
	case len(sr.Extra) > 0:
		out.ExpandablePeakReservedBytes = sr.Extra[0].PeakReserved
	case recorded.ExpandableSegments:
		out.ExpandablePeakReservedBytes = base.PeakReserved
	default:
		out.ExpandablePeakReservedBytes = what.PeakReserved
	}
	if sr.SettingsNote != "" {
		out.RecordedSettings += " (" + sr.SettingsNote + ")"
	}
	return out, base.Allocated, nil
}

// allocatorReplay is the analysis step that replays each device trace through the allocator model, picks the
// main device's replay for the report, overlays the what-if on the timeline and warns where the model and the
// recording part.
func (a *analysis) allocatorReplay() error {
	reps, err := a.allocatorReplays()
	if err != nil {
		return err
	}
	if w := a.opts.Allocator.WhatIf; w != nil && len(reps) == 0 && !a.opts.Allocator.Skip {
		a.warns.add("alloc-conf-no-trace", fmt.Sprintf("the what-if under %s was not replayed: the snapshot has no allocation trace (record one with torch.cuda.memory._record_memory_history before the run allocates)",
			settingsName(w.String())))
	}
	if len(reps) == 0 {
		return nil
	}
	main := 0
	for i, r := range reps {
		switch {
		case a.rep.Peak != nil && r.Device == a.rep.Peak.Device:
			main = i
		case a.rep.Peak == nil && r.RecordedPeakReservedBytes > reps[main].RecordedPeakReservedBytes:
			main = i
		}
	}
	a.part.AllocatorReplay = &reps[main]
	if len(reps) > 1 {
		a.part.AllocatorReplayDevices = reps
	}
	// The peak in torch's unit: the replay rounds and splits every request as the caching allocator does.
	for i := range a.part.DevicePeaks {
		p := &a.part.DevicePeaks[i]
		for _, r := range reps {
			if r.Device == p.Device {
				p.AllocatedBytes = r.BaselinePeakAllocatedBytes
			}
		}
		if a.rep.Peak != nil && a.rep.Peak.Device == p.Device {
			a.rep.Peak.AllocatedBytes = p.AllocatedBytes
		}
	}
	for i := range a.part.Timeline {
		ts := &a.part.Timeline[i]
		for _, r := range reps {
			if r.Device == ts.Device && r.WhatIf {
				ts.WhatIfReserved = r.WhatIfTimeline.ReservedAt(ts.Index)
			}
		}
	}
	for i := range a.part.Details {
		setWhatIf(&a.part.Details[i], reps)
	}
	for _, r := range reps {
		a.warnReplay(&r)
	}
	return nil
}

// warnReplay words what a reader must know about one replay beyond its own section: a capacity given that the
// recording itself exceeded, a complete trace whose baseline does not follow the recording, a what-if that runs
// out of memory. (A partial replay says why in its section; the trace problems behind it are already warned
// about by the trace replay.)
func (a *analysis) warnReplay(r *report.AllocatorReplay) {
	if a.opts.Allocator.Capacity > 0 && r.RecordedPeakReservedBytes > r.CapacityBytes {
		// Usually "80GB" read as 80·10^9 bytes for a card that holds 80 GiB: the departures and failures that
		// follow come from the capacity, not from the settings.
		a.warns.add("allocator-capacity-below-recording", fmt.Sprintf("device %d reserved %s in the recording, more than the capacity of %s from %s: the device has more memory than that (GB means 10^9 bytes, GiB 2^30; --gpu takes a catalogued card's size)",
			r.Device, units.Bytes(r.RecordedPeakReservedBytes), units.Bytes(r.CapacityBytes), r.CapacitySource))
	}
	switch {
	case r.Partial:
	case !r.BaselineMatchesRecording:
		a.warns.add("allocator-replay-departs", fmt.Sprintf("allocator replay of device %d under the recorded settings departs from the recording at event %d (peak reserved %s recorded, %s replayed): what-if numbers are less certain",
			r.Device, r.BaselineFirstDivergence, units.Bytes(r.RecordedPeakReservedBytes), units.Bytes(r.BaselinePeakReservedBytes)))
	}
	if r.WhatIf && r.FailedAllocations > 0 {
		a.warns.add("allocator-replay-oom", fmt.Sprintf("under %s device %d runs out of memory at event %d (%d requests fail with a capacity of %s)",
			settingsName(r.Settings), r.Device, r.FirstFailedEvent, r.FailedAllocations, units.Bytes(r.CapacityBytes)))
	}
	if !r.WhatIf {
		return
	}
	switch {
	case r.Retries > 0:
		// The what-if fits only by flushing: each retry synchronizes the device and cudaFrees the whole cache.
		a.warns.add("allocator-replay-retries", fmt.Sprintf("under %s device %d reaches its capacity of %s: the allocator released every cached segment and retried %s (torch.cuda.memory_stats' num_alloc_retries), each a device synchronization and a cudaFree per segment, then cudaMallocs again",
			settingsName(r.Settings), r.Device, units.Bytes(r.CapacityBytes), units.Plural(r.Retries, "time", "times")))
	case r.CapacityBytes == 0 && r.PeakReservedBytes-r.RecordedPeakReservedBytes >= findings.CacheOverheadMinBytes:
		// A few segments more than the recording are within what any device of that run held.
		a.warns.add("allocator-replay-unbounded", fmt.Sprintf("under %s device %d would reserve %s, %s more than the recorded run, and no device capacity is known (--gpu or --device-memory): the replay never flushes its cache or runs out of memory, which a device of that size does first",
			settingsName(r.Settings), r.Device, units.Bytes(r.PeakReservedBytes), units.Bytes(r.PeakReservedBytes-r.RecordedPeakReservedBytes)))
	}
	if w := a.opts.Allocator.WhatIf; w != nil && w.GarbageCollectionThreshold > 0 && !(w.PerProcessMemoryFraction > 0 && w.PerProcessMemoryFraction < 1) {
		// CUDACachingAllocator collects garbage only when a memory fraction is set (set_fraction).
		a.warns.add("allocator-replay-gc-inactive", fmt.Sprintf("garbage_collection_threshold acts only under a per-process memory fraction (torch.cuda.set_per_process_memory_fraction, or per_process_memory_fraction in PYTORCH_CUDA_ALLOC_CONF): under %s it reclaims nothing on device %d, and none of the what-if's difference comes from it",
			settingsName(r.Settings), r.Device))
	}
}

// settingsName is a configuration as a reader sees it: its PYTORCH_CUDA_ALLOC_CONF string, or "the default".
func settingsName(s string) string {
	if s == "" {
		return "the default settings"
	}
	return s
}
