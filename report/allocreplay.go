package report

// AllocatorReplay is one device trace replayed through the allocator model: the recorded peak reserved (from the
// trace's segment events), the baseline replay under the recorded settings — which checks the model against the
// recording — and the replay under Settings.
type AllocatorReplay struct {
	Device int `json:"device" msgpack:"device"`
	// Settings is what the what-if ran under (PYTORCH_CUDA_ALLOC_CONF syntax, "" = PyTorch's default); without a
	// what-if it equals RecordedSettings and PeakReservedBytes the baseline.
	Settings         string `json:"settings" msgpack:"settings"`
	WhatIf           bool   `json:"what_if" msgpack:"what_if"`
	RecordedSettings string `json:"recorded_settings" msgpack:"recorded_settings"`
	// RecordedSettingsKnown is false when the snapshot predates allocator_settings (torch < 2.3) and the default
	// was assumed.
	RecordedSettingsKnown bool   `json:"recorded_settings_known" msgpack:"recorded_settings_known"`
	CapacityBytes         int64  `json:"capacity_bytes" msgpack:"capacity_bytes"` // 0: unlimited
	CapacitySource        string `json:"capacity_source" msgpack:"capacity_source"`

	RecordedPeakReservedBytes int64 `json:"recorded_peak_reserved_bytes" msgpack:"recorded_peak_reserved_bytes"`
	BaselinePeakReservedBytes int64 `json:"baseline_peak_reserved_bytes" msgpack:"baseline_peak_reserved_bytes"`
	PeakReservedBytes         int64 `json:"peak_reserved_bytes" msgpack:"peak_reserved_bytes"`
	// BaselinePeakAllocatedBytes is the highest block bytes allocated in the baseline replay: requests rounded to
	// 512 bytes and blocks left whole where the remainder is too small to split, as torch.cuda.max_memory_allocated
	// counts them.
	BaselinePeakAllocatedBytes int64 `json:"baseline_peak_allocated_bytes,omitempty" msgpack:"baseline_peak_allocated_bytes,omitempty"`
	// ExpandablePeakReservedBytes is the peak reserved under the recorded settings with expandable_segments:True
	// (equal to the baseline when they are already on): what the fragmentation finding's fix would reserve.
	ExpandablePeakReservedBytes int64 `json:"expandable_peak_reserved_bytes" msgpack:"expandable_peak_reserved_bytes"`
	// ExpandableSettings is that configuration (the recorded one with expandable_segments:True).
	ExpandableSettings string `json:"expandable_settings" msgpack:"expandable_settings"`

	// BaselineMatchesRecording is true when the baseline reaches the recorded peak, follows the recorded reserved
	// memory at every allocation and creates the recorded segment sizes in order.
	BaselineMatchesRecording bool `json:"baseline_matches_recording" msgpack:"baseline_matches_recording"`
	// BaselineFirstDivergence is the first event where the baseline's reserved memory departs from the
	// recording (−1: never).
	BaselineFirstDivergence int `json:"baseline_first_divergence" msgpack:"baseline_first_divergence"`
	RecordedSegments        int `json:"recorded_segments" msgpack:"recorded_segments"`
	BaselineSegments        int `json:"baseline_segments" msgpack:"baseline_segments"`
	Segments                int `json:"segments" msgpack:"segments"`

	Partial       bool   `json:"partial" msgpack:"partial"`
	PartialReason string `json:"partial_reason,omitempty" msgpack:"partial_reason,omitempty"`

	// Fragmentation at the peak of the baseline and of the what-if.
	BaselineFragmentation AllocatorFragmentation `json:"baseline_fragmentation_at_peak" msgpack:"baseline_fragmentation_at_peak"`
	Fragmentation         AllocatorFragmentation `json:"fragmentation_at_peak" msgpack:"fragmentation_at_peak"`

	// FailedAllocations counts requests the what-if could not satisfy (it would run out of memory), the first
	// at FirstFailedEvent (−1: none).
	FailedAllocations int `json:"failed_allocations" msgpack:"failed_allocations"`
	FirstFailedEvent  int `json:"first_failed_event" msgpack:"first_failed_event"`
	// Retries counts the what-if's requests that found the device full and released every cached segment to try
	// again (PyTorch's num_alloc_retries); only a capacity makes any.
	Retries int `json:"alloc_retries,omitempty" msgpack:"alloc_retries,omitempty"`

	// WhatIfTimeline is the what-if's reserved memory at each change (for the timeline chart); not in
	// summary.json.
	WhatIfTimeline ReservedTimeline `json:"-" msgpack:"what_if_timeline,omitempty"`
}

// ExpandableSavingBytes is what expandable_segments:True would save at the peak: baseline peak reserved minus the
// peak under expandable segments, 0 when it saves nothing or is already on.
func (r *AllocatorReplay) ExpandableSavingBytes() int64 {
	if r == nil {
		return 0
	}
	return max(r.BaselinePeakReservedBytes-r.ExpandablePeakReservedBytes, 0)
}

// AllocatorFragmentation is where the allocator model's reserved memory went at one moment (package allocator's
// Fragmentation, as the report's contract keeps it: the report does not change when the model's API does).
type AllocatorFragmentation struct {
	Reserved  int64 `json:"reserved_bytes" msgpack:"reserved_bytes"`
	Allocated int64 `json:"allocated_bytes" msgpack:"allocated_bytes"` // block bytes of live allocations
	Requested int64 `json:"requested_bytes" msgpack:"requested_bytes"` // bytes the live allocations asked for
	// Free is Reserved − Allocated: cached memory no live allocation uses.
	Free int64 `json:"free_bytes" msgpack:"free_bytes"`
	// InternalSlack is Allocated − Requested: rounding and unsplit remainders inside live blocks.
	InternalSlack int64 `json:"internal_slack_bytes" msgpack:"internal_slack_bytes"`
	// CachedSegments is the free bytes in segments that hold no live allocation: empty_cache would return them.
	CachedSegments int64 `json:"cached_segment_bytes" msgpack:"cached_segment_bytes"`
	// FreeInUsedSegments is the rest of Free: free blocks in segments that also hold live allocations.
	FreeInUsedSegments int64 `json:"free_in_used_segments_bytes" msgpack:"free_in_used_segments_bytes"`
	Segments           int   `json:"segments" msgpack:"segments"`
}

// ReservedSample is reserved memory after trace event Index (at TimeUS when the trace has times).
type ReservedSample struct {
	Index    int   `json:"index" msgpack:"index"`
	TimeUS   int64 `json:"time_us,omitempty" msgpack:"time_us,omitempty"`
	Reserved int64 `json:"reserved_bytes" msgpack:"reserved_bytes"`
}

// ReservedTimeline is reserved memory at each change, in event order.
type ReservedTimeline []ReservedSample

// ReservedAt returns reserved memory after each of the trace events idx (ascending; −1 is the state before the
// first event), read off the timeline as a step function: for overlaying on another series of the same trace.
func (tl ReservedTimeline) ReservedAt(idx []int) []int64 {
	out := make([]int64, len(idx))
	j := 0
	var cur int64
	for i, x := range idx {
		for j < len(tl) && tl[j].Index <= x {
			cur = tl[j].Reserved
			j++
		}
		out[i] = cur
	}
	return out
}
