// Package report is the model of memscan's runtime report: a Run of per-input Reports (a Header every kind of
// input shares plus exactly one part of its kind: SnapshotReport, TracerReport, TimelineReport or LogReport), the
// cross-input view, and the findings as data (package findings). wire.go keeps its JSON and msgpack form, the
// contract of summary.json and report.msgpack, and reads old files back.
//
// analyze computes a report, internal/merge and internal/compare combine reports, and internal/results renders
// them; none of them needs the decoders or the estimator to read one, so this package imports only findings and
// phases (the models it embeds) and the msgpack codec.
package report

import (
	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/phases"
)

// ReportVersion is bumped whenever a field of Report changes meaning or is removed.
const ReportVersion = 1

// Run is the result of analyzing one or many inputs in one invocation.
type Run struct {
	Version int       `json:"version" msgpack:"version"`
	Tool    string    `json:"tool" msgpack:"tool"` // "memscan <version>"
	Inputs  []*Report `json:"inputs" msgpack:"inputs"`
	// Failures lists inputs that could not be analyzed, in input order.
	Failures []Failure `json:"failures,omitempty" msgpack:"failures,omitempty"`
	// Cross is set when more than one input was analyzed.
	Cross *Cross `json:"cross,omitempty" msgpack:"cross,omitempty"`
}

// Failure is an input that could not be found, decoded or analyzed.
type Failure struct {
	File  string `json:"file" msgpack:"file"`
	Error string `json:"error" msgpack:"error"`
}

// Report is the analysis of one input: the Header every kind shares and the part only its kind has, built by
// the analyzer of that kind (AnalyzeSnapshot, AnalyzeTracer, AnalyzeTimeline, AnalyzeLog). A renderer switches
// on the type of Part once; code that needs a measure of one kind asserts that kind's part. report_wire.go
// keeps the JSON and msgpack form of a Report exactly as it was when Report was one flat struct (summary.json
// inputs[], report.msgpack), and reads it back into the part of its kind.
type Report struct {
	Header
	// Part is *SnapshotReport, *TracerReport, *TimelineReport or *LogReport; never nil in a report that an
	// analyzer returned or the wire form decoded.
	Part Part
}

// Header is what every kind of report has: where the input came from and what memscan says about it.
// Categories, Top and Sites are filled by snapshots and tracer files, Categories and Peak by profiler timelines.
type Header struct {
	File        string `json:"file" msgpack:"file"`
	Format      string `json:"format" msgpack:"format"`             // e.g. "pickle-v4", "tracer-json"
	TorchFormat string `json:"torch_format" msgpack:"torch_format"` // e.g. "2.0-history", "2.1+"
	Rank        int    `json:"rank" msgpack:"rank"`                 // -1 when unknown
	Iteration   int    `json:"iteration" msgpack:"iteration"`       // -1 when unknown
	Devices     []int  `json:"devices" msgpack:"devices"`

	Categories []CategoryStat `json:"categories" msgpack:"categories"`
	Top        []Allocation   `json:"top" msgpack:"top"`
	Sites      []SiteStat     `json:"sites,omitempty" msgpack:"sites,omitempty"`
	// Peak is the highest of DevicePeaks for a snapshot, the timeline's highest total for a profiler timeline.
	Peak *Peak `json:"peak,omitempty" msgpack:"peak,omitempty"`

	Recommendations []findings.Finding `json:"recommendations" msgpack:"recommendations"`
	Warnings        []string           `json:"warnings" msgpack:"warnings"`
}

// SnapshotReport is what only an allocator snapshot has: allocator totals and groups, size histograms,
// fragmentation, and the replayed device trace (timeline, per-device peaks, OOMs, leak suspects).
type SnapshotReport struct {
	Totals // reserved/allocated/... flattened into the input object

	PerDevice      []GroupTotals `json:"per_device,omitempty" msgpack:"per_device,omitempty"`
	PerStream      []GroupTotals `json:"per_stream,omitempty" msgpack:"per_stream,omitempty"`
	PerPool        []GroupTotals `json:"per_pool,omitempty" msgpack:"per_pool,omitempty"`
	PerSegmentType []GroupTotals `json:"per_segment_type,omitempty" msgpack:"per_segment_type,omitempty"`

	ActiveSizes   []SizeBucket  `json:"active_size_histogram,omitempty" msgpack:"active_size_histogram,omitempty"`
	FreeSizes     []SizeBucket  `json:"free_size_histogram,omitempty" msgpack:"free_size_histogram,omitempty"`
	Fragmentation Fragmentation `json:"fragmentation" msgpack:"fragmentation"`

	// Timeline is the replayed device trace, downsampled for plotting; not in summary.json.
	Timeline []TimelineSeries `json:"-" msgpack:"timeline,omitempty"`
	// Details are the replayed device traces at full resolution, for the interactive page; in neither
	// summary.json nor report.msgpack (a trace of millions of events would dwarf the report).
	Details     []TimelineDetail `json:"-" msgpack:"-"`
	DevicePeaks []Peak           `json:"device_peaks,omitempty" msgpack:"device_peaks,omitempty"`
	OOMs        []OOM            `json:"ooms" msgpack:"ooms"`
	// Iterations holds, per device with a trace, the training iterations and their forward, backward and
	// optimizer boundaries (event index and time).
	Iterations []phases.Timeline `json:"iterations,omitempty" msgpack:"iterations,omitempty"`
	// IterationTable is, per device and iteration, the peak and the memory at each phase's end.
	IterationTable []IterationRow `json:"iteration_table,omitempty" msgpack:"iteration_table,omitempty"`
	// LeakSuspects are sites whose live bytes grew at the end of every iteration after the first (warm-up).
	LeakSuspects []LeakSuspect `json:"leak_suspects,omitempty" msgpack:"leak_suspects,omitempty"`
	// TraceActions counts the device-trace events by action, over all devices.
	TraceActions map[string]int `json:"trace_actions,omitempty" msgpack:"trace_actions,omitempty"`
	// AllocatorReplay is the caching-allocator replay of the main device's trace (the device of the peak, else
	// the one that reserved most); AllocatorReplayDevices lists every traced device when there are several.
	AllocatorReplay        *AllocatorReplay  `json:"allocator_replay,omitempty" msgpack:"allocator_replay,omitempty"`
	AllocatorReplayDevices []AllocatorReplay `json:"allocator_replay_devices,omitempty" msgpack:"allocator_replay_devices,omitempty"`
}

// TracerReport is what only a memory-tracer JSON file has: the primary device's peak_memory_mb in bytes, the
// sum of the listed tensors, and the phase and merged-module breakdowns (details under Tracer, which is set for
// every tracer report: the wire form tells a tracer report by it).
type TracerReport struct {
	PeakBytes   int64        `json:"peak_bytes,omitempty" msgpack:"peak_bytes,omitempty"`
	ListedBytes int64        `json:"listed_bytes,omitempty" msgpack:"listed_bytes,omitempty"`
	Phases      []PhaseStat  `json:"phases,omitempty" msgpack:"phases,omitempty"`
	Modules     []ModuleStat `json:"modules,omitempty" msgpack:"modules,omitempty"`
	Tracer      *TracerView  `json:"tracer,omitempty" msgpack:"tracer,omitempty"`
}

// TimelineReport is what only a torch.profiler memory timeline has; MemoryTimeline is set for every timeline
// report (the wire form tells a timeline report by it).
type TimelineReport struct {
	MemoryTimeline *TimelineView `json:"memory_timeline,omitempty" msgpack:"memory_timeline,omitempty"`
}

// LogReport is what only a training log has; Log is set for every log report (the wire form tells a log report
// by it).
type LogReport struct {
	Log *LogView `json:"log,omitempty" msgpack:"log,omitempty"`
}

// Totals are allocator totals in bytes. reserved = requested + internal_free + external_free exactly, as in
// PyTorch's _memory_viz stats.
type Totals struct {
	ReservedBytes  int64 `json:"reserved_bytes" msgpack:"reserved_bytes"`
	AllocatedBytes int64 `json:"allocated_bytes" msgpack:"allocated_bytes"` // sum of size of active_allocated blocks
	RequestedBytes int64 `json:"requested_bytes" msgpack:"requested_bytes"` // sum of requested size of active_allocated blocks
	ActiveBytes    int64 `json:"active_bytes" msgpack:"active_bytes"`       // sum of size of blocks not inactive
	InactiveBytes  int64 `json:"inactive_bytes" msgpack:"inactive_bytes"`   // sum of size of inactive blocks
	// InternalFreeBytes is rounding slack inside active_allocated blocks (size - requested).
	InternalFreeBytes int64 `json:"internal_free_bytes" msgpack:"internal_free_bytes"`
	// ExternalFreeBytes is every block that is not active_allocated (inactive and pending-free), full size.
	ExternalFreeBytes     int64   `json:"external_free_bytes" msgpack:"external_free_bytes"`
	EfficiencyPct         float64 `json:"efficiency_pct" msgpack:"efficiency_pct"` // requested / reserved × 100
	LargestFreeBlockBytes int64   `json:"largest_free_block_bytes" msgpack:"largest_free_block_bytes"`
	Segments              int     `json:"segments" msgpack:"segments"`
	Blocks                int     `json:"blocks" msgpack:"blocks"`
}

// GroupTotals are totals restricted to one device, stream, pool or segment type.
type GroupTotals struct {
	Key    string `json:"key" msgpack:"key"` // "0", "stream 0x7f…", "(0, 1)", "large"
	Totals `msgpack:",inline"`
}

// CategoryStat is the memory attributed to one category. For allocator snapshots Bytes is the sum of block sizes
// (rounding included) of live (active_allocated) blocks, so the categories add up to allocated_bytes; in a peak's
// live set it is the requested bytes of the allocations live at the peak.
type CategoryStat struct {
	Name  string `json:"name" msgpack:"name"`
	Bytes int64  `json:"bytes" msgpack:"bytes"`
	Count int    `json:"count" msgpack:"count"`
}

// Allocation is one live block (or tensor) with where it came from.
type Allocation struct {
	Size          int64  `json:"size" msgpack:"size"`
	RequestedSize int64  `json:"requested_size" msgpack:"requested_size"`
	Address       uint64 `json:"address" msgpack:"address"`
	Device        int    `json:"device" msgpack:"device"`
	Stream        uint64 `json:"stream" msgpack:"stream"`
	State         string `json:"state" msgpack:"state"`
	Category      string `json:"category" msgpack:"category"`
	Site          string `json:"site" msgpack:"site"` // file:line:function of the deciding frame
	Rule          string `json:"rule,omitempty" msgpack:"rule,omitempty"`
	// Frame is the frame that decided the category (file:line:function) when it differs from Site.
	Frame string `json:"frame,omitempty" msgpack:"frame,omitempty"`
}

// SiteStat is memory grouped by creation site.
type SiteStat struct {
	Site     string `json:"site" msgpack:"site"`
	Category string `json:"category" msgpack:"category"`
	Bytes    int64  `json:"bytes" msgpack:"bytes"`
	Count    int    `json:"count" msgpack:"count"`
}

// SizeBucket is one histogram bucket [Lo, Hi) in bytes.
type SizeBucket struct {
	Lo    int64 `json:"lo" msgpack:"lo"`
	Hi    int64 `json:"hi" msgpack:"hi"`
	Count int   `json:"count" msgpack:"count"`
	Bytes int64 `json:"bytes" msgpack:"bytes"`
}

// Fragmentation describes where reserved memory is not doing work.
type Fragmentation struct {
	InternalWasteBytes int64 `json:"internal_waste_bytes" msgpack:"internal_waste_bytes"`
	CachedFreeBytes    int64 `json:"cached_free_bytes" msgpack:"cached_free_bytes"`
	// MostlyFreeSegments are segments whose free share is at least MostlyFreeThreshold; MostlyFreeSegmentsBytes
	// is their reserved size.
	MostlyFreeSegments      int     `json:"mostly_free_segments" msgpack:"mostly_free_segments"`
	MostlyFreeSegmentsBytes int64   `json:"mostly_free_segments_bytes" msgpack:"mostly_free_segments_bytes"`
	MostlyFreeThreshold     float64 `json:"mostly_free_threshold" msgpack:"mostly_free_threshold"`
	// LargeFreeBlocks are cached free blocks of at least 100 MiB.
	LargeFreeBlocks      int   `json:"large_free_blocks" msgpack:"large_free_blocks"`
	LargeFreeBlocksBytes int64 `json:"large_free_blocks_bytes" msgpack:"large_free_blocks_bytes"`
	// FragmentationPct is cached free memory not in the largest free block, as a share of cached free.
	FragmentationPct float64 `json:"fragmentation_pct" msgpack:"fragmentation_pct"`
}

// TimelineSeries is memory over time on one device, from replaying its trace.
type TimelineSeries struct {
	Device int `json:"device" msgpack:"device"`
	// Index is the trace event index of each point; TimeUS its time when the trace has times (else empty).
	Index     []int   `json:"index" msgpack:"index"`
	TimeUS    []int64 `json:"time_us,omitempty" msgpack:"time_us,omitempty"`
	Allocated []int64 `json:"allocated" msgpack:"allocated"` // live requested bytes
	Reserved  []int64 `json:"reserved" msgpack:"reserved"`   // segment bytes
	// ByCategory holds, per category name, live bytes at each point (same length as Index).
	Categories []string  `json:"categories,omitempty" msgpack:"categories,omitempty"`
	ByCategory [][]int64 `json:"by_category,omitempty" msgpack:"by_category,omitempty"`
	// WhatIfReserved is reserved memory at each point under the --alloc-conf what-if (allocator replay); empty
	// without one.
	WhatIfReserved []int64 `json:"what_if_reserved,omitempty" msgpack:"what_if_reserved,omitempty"`
}

// Peak is the highest live allocated memory in a device trace and what was live then. EventIndex −1 means the
// memory live before the first recorded event was never exceeded.
type Peak struct {
	Device     int            `json:"device" msgpack:"device"`
	Bytes      int64          `json:"bytes" msgpack:"bytes"`
	EventIndex int            `json:"event_index" msgpack:"event_index"`
	TimeUS     int64          `json:"time_us,omitempty" msgpack:"time_us,omitempty"`
	Categories []CategoryStat `json:"categories" msgpack:"categories"`
	Sites      []SiteStat     `json:"sites" msgpack:"sites"`
	// Iteration (1-based, 0 when outside any) and Phase ("forward", "backward", "optimizer", "setup", "-") say
	// where in training the peak fell.
	Iteration int    `json:"iteration" msgpack:"iteration"`
	Phase     string `json:"phase" msgpack:"phase"`
	// Components is the live set in the static estimator's components (package components); count is blocks.
	Components []CategoryStat `json:"components,omitempty" msgpack:"components,omitempty"`
	// LifetimeDecidedBytes is what the lifetime, not a stack rule, categorized (stacks missing or generic).
	LifetimeDecidedBytes int64 `json:"lifetime_decided_bytes" msgpack:"lifetime_decided_bytes"`
	// FirstIterationPhase is the phase of iteration 1's own peak ("" without iterations): the step a static
	// estimate describes.
	FirstIterationPhase string `json:"first_iteration_phase,omitempty" msgpack:"first_iteration_phase,omitempty"`
	// ReservedBytes is the segment bytes at the same moment (what the allocator held for the peak); 0 in reports
	// written before it existed.
	ReservedBytes int64 `json:"reserved_bytes,omitempty" msgpack:"reserved_bytes,omitempty"`
	// AllocatedBytes is the highest block bytes allocated over the trace, as the caching-allocator replay rounds and
	// splits each request: the unit of torch.cuda.max_memory_allocated, which it equals on a trace recorded from
	// the process's first allocation. RequestedBytes is Bytes again (what the tensors asked for), so that a reader
	// of summary.json sees both units side by side. 0 where they were not measured (no allocator replay, or a
	// report written before they existed).
	AllocatedBytes int64 `json:"allocated_bytes,omitempty" msgpack:"allocated_bytes,omitempty"`
	RequestedBytes int64 `json:"requested_bytes,omitempty" msgpack:"requested_bytes,omitempty"`
	// EfficiencyPct is Bytes over ReservedBytes at the peak: how much of what the cache held then the tensors
	// used. A snapshot's totals judge the moment of the dump; this one the moment that decides whether a run fits.
	EfficiencyPct float64 `json:"efficiency_pct,omitempty" msgpack:"efficiency_pct,omitempty"`
}

// OOM is one out-of-memory event from a device trace.
type OOM struct {
	Device          int    `json:"device" msgpack:"device"`
	EventIndex      int    `json:"event_index" msgpack:"event_index"`
	TimeUS          int64  `json:"time_us,omitempty" msgpack:"time_us,omitempty"`
	RequestedBytes  int64  `json:"requested_bytes" msgpack:"requested_bytes"`
	DeviceFreeBytes int64  `json:"device_free_bytes" msgpack:"device_free_bytes"`
	Site            string `json:"site,omitempty" msgpack:"site,omitempty"`
	Category        string `json:"category,omitempty" msgpack:"category,omitempty"`
	// AllocatedBytes and ReservedBytes are the replayed live requested bytes and segment bytes at the event.
	AllocatedBytes int64 `json:"allocated_bytes" msgpack:"allocated_bytes"`
	ReservedBytes  int64 `json:"reserved_bytes" msgpack:"reserved_bytes"`
	// Explained is what was live at the failing request by phase and category, and where the step was heading.
	Explained *findings.OOMExplained `json:"explained,omitempty" msgpack:"explained,omitempty"`
	// Remedies are the single changes to a static configuration (memscan analyze --static) tried against the
	// memory the allocator could have had, the unchanged configuration first (AddRemedies).
	Remedies []findings.Remedy `json:"remedies,omitempty" msgpack:"remedies,omitempty"`
}

// IterationRow is one iteration of a device trace: its peak and the memory when each of its phases ended. Allocated
// bytes are block bytes (torch.cuda.memory_allocated's unit, from the allocator replay; 0 where it did not run),
// requested bytes what the tensors asked for. torch.cuda.max_memory_allocated and max_memory_reserved, reset at the
// iteration's start and read at its end, are PeakAllocatedBytes and PeakReservedBytes.
type IterationRow struct {
	Device    int  `json:"device" msgpack:"device"`
	Iteration int  `json:"iteration" msgpack:"iteration"` // 1-based, as phases.Iteration.Index
	Complete  bool `json:"complete" msgpack:"complete"`
	// PeakEvent is the first event after which the iteration's allocated memory was highest (block bytes where
	// known, else requested), in PeakPhase; PeakRequestedBytes the requested bytes then; PeakReservedBytes the
	// highest reserved memory in the iteration.
	PeakAllocatedBytes int64  `json:"peak_allocated_bytes,omitempty" msgpack:"peak_allocated_bytes,omitempty"`
	PeakRequestedBytes int64  `json:"peak_requested_bytes" msgpack:"peak_requested_bytes"`
	PeakReservedBytes  int64  `json:"peak_reserved_bytes" msgpack:"peak_reserved_bytes"`
	PeakEvent          int    `json:"peak_event" msgpack:"peak_event"`
	PeakPhase          string `json:"peak_phase" msgpack:"peak_phase"`
	// Phases are the phases seen, in order: forward, backward, optimizer for training; prefill and decode for a
	// generate call; forward alone for a plain inference forward.
	Phases []PhaseEnd `json:"phases" msgpack:"phases"`
}

// PhaseEnd is one phase of an iteration and the memory after its last event.
type PhaseEnd struct {
	Phase          string      `json:"phase" msgpack:"phase"`
	Span           phases.Span `json:"span" msgpack:"span"`
	AllocatedBytes int64       `json:"allocated_bytes,omitempty" msgpack:"allocated_bytes,omitempty"`
	RequestedBytes int64       `json:"requested_bytes" msgpack:"requested_bytes"`
	ReservedBytes  int64       `json:"reserved_bytes" msgpack:"reserved_bytes"`
}

// LeakSuspect is a site whose live bytes grew at the end of every iteration after the first.
type LeakSuspect struct {
	Device   int    `json:"device" msgpack:"device"`
	Site     string `json:"site" msgpack:"site"`
	Category string `json:"category" msgpack:"category"`
	// Markers is the number of complete iterations compared; MarkerKind what found them (phases' source).
	Markers     int    `json:"markers" msgpack:"markers"`
	MarkerKind  string `json:"marker_kind" msgpack:"marker_kind"`
	FirstBytes  int64  `json:"first_bytes" msgpack:"first_bytes"`
	LastBytes   int64  `json:"last_bytes" msgpack:"last_bytes"`
	GrowthBytes int64  `json:"growth_bytes" msgpack:"growth_bytes"`
	// PerIterationBytes is the mean growth per iteration after the first.
	PerIterationBytes int64 `json:"per_iteration_bytes" msgpack:"per_iteration_bytes"`
}

// Cross is the cross-input section: one row per input and imbalance statistics.
type Cross struct {
	Rows []CrossRow `json:"rows" msgpack:"rows"`
	// Imbalance compares the maximum with the median over the inputs of one iteration, per metric.
	MaxReservedBytes     int64   `json:"max_reserved_bytes" msgpack:"max_reserved_bytes"`
	MedianReservedBytes  int64   `json:"median_reserved_bytes" msgpack:"median_reserved_bytes"`
	MaxAllocatedBytes    int64   `json:"max_allocated_bytes" msgpack:"max_allocated_bytes"`
	MedianAllocatedBytes int64   `json:"median_allocated_bytes" msgpack:"median_allocated_bytes"`
	ImbalancePct         float64 `json:"imbalance_pct" msgpack:"imbalance_pct"` // (max/median − 1) × 100 of reserved
	// NotRankSet says why the inputs were not compared as ranks (some path names no rank, a rank appears twice
	// in an iteration, or two runs are mixed): then the statistics above and the outliers are left empty and the
	// rows are a plain table. "" when they were compared.
	NotRankSet string `json:"not_rank_set,omitempty" msgpack:"not_rank_set,omitempty"`
	// Iterations is how many iterations the snapshots span; with several, the statistics above are those of the
	// most unbalanced one, ImbalanceIteration (−1: the path told none), since ranks are compared within a step.
	Iterations         int      `json:"iterations,omitempty" msgpack:"iterations,omitempty"`
	ImbalanceIteration int      `json:"imbalance_iteration" msgpack:"imbalance_iteration"`
	OutlierFiles       []string `json:"outlier_files,omitempty" msgpack:"outlier_files,omitempty"`
	// Recommendations drawn from comparing the inputs (rank imbalance, growth across iterations).
	Recommendations []findings.Finding `json:"recommendations,omitempty" msgpack:"recommendations,omitempty"`
	// Tracer compares tracer inputs across ranks (set when at least two inputs are tracer JSON).
	Tracer *TracerCross `json:"tracer,omitempty" msgpack:"tracer,omitempty"`
}

// CrossRow is one input in the cross-input table. Reserved, allocated and efficiency are allocator measures and
// are 0 for inputs whose kind has none (see Report.AllocatorTotals); PeakBytes is the trace peak of a snapshot, the
// recorded peak of a tracer file or profiler timeline, or the highest allocated value a log printed.
type CrossRow struct {
	File string `json:"file" msgpack:"file"`
	// Kind is KindSnapshot, KindTracer, KindTimeline or KindLog; empty in reports written before it existed,
	// which only compared snapshots.
	Kind           string  `json:"kind,omitempty" msgpack:"kind,omitempty"`
	Rank           int     `json:"rank" msgpack:"rank"`
	Iteration      int     `json:"iteration" msgpack:"iteration"`
	ReservedBytes  int64   `json:"reserved_bytes" msgpack:"reserved_bytes"`
	AllocatedBytes int64   `json:"allocated_bytes" msgpack:"allocated_bytes"`
	PeakBytes      int64   `json:"peak_bytes" msgpack:"peak_bytes"`
	EfficiencyPct  float64 `json:"efficiency_pct" msgpack:"efficiency_pct"`
	// ListedBytes is the sum of the tensors a tracer file lists (tracer inputs only).
	ListedBytes int64 `json:"listed_bytes,omitempty" msgpack:"listed_bytes,omitempty"`
}

// HasAllocatorTotals says whether the row's reserved, allocated and efficiency were measured, as
// Report.AllocatorTotals said of its input. Rows written before Kind existed compared snapshots only.
func (r CrossRow) HasAllocatorTotals() bool {
	return r.Kind == "" || r.Kind == KindSnapshot || r.ReservedBytes > 0
}

// Input kinds, as Report.Kind and CrossRow.Kind name them.
const (
	KindSnapshot = "snapshot" // allocator snapshot
	KindTracer   = "tracer"   // memory tracer JSON
	KindTimeline = "timeline" // torch.profiler memory timeline
	KindLog      = "log"      // training log
)

// Part is the part of a Report that only its kind of input has: *SnapshotReport, *TracerReport,
// *TimelineReport or *LogReport. A renderer switches on its concrete type once, so that adding an input kind
// means adding a part type and its case in each renderer.
type Part interface {
	// Kind names the kind of input the part belongs to: KindSnapshot, KindTracer, KindTimeline or KindLog.
	Kind() string
}

// Kind is KindSnapshot.
func (*SnapshotReport) Kind() string { return KindSnapshot }

// Kind is KindTracer.
func (*TracerReport) Kind() string { return KindTracer }

// Kind is KindTimeline.
func (*TimelineReport) Kind() string { return KindTimeline }

// Kind is KindLog.
func (*LogReport) Kind() string { return KindLog }

// Kind says what kind of input r was analyzed from, the name of its Part's kind (as CrossRow.Kind records it);
// empty for a report without a part.
func (r *Report) Kind() string {
	if r.Part == nil {
		return ""
	}
	return r.Part.Kind()
}

// OOMs returns the out-of-memory events of r's device trace; only a snapshot's trace records them, so the
// other kinds have none.
func (r *Report) OOMs() []OOM {
	if s, ok := r.Part.(*SnapshotReport); ok {
		return s.OOMs
	}
	return nil
}

// AllocatorTotals returns the allocator totals of a snapshot, and false with zero totals for the other kinds,
// which measure no allocator state: tables that put every input's totals side by side show those as zero.
func (r *Report) AllocatorTotals() (Totals, bool) {
	if s, ok := r.Part.(*SnapshotReport); ok {
		return s.Totals, true
	}
	return Totals{}, false
}

// RecordedPeak is the peak an input recorded: the trace peak of a snapshot, the peak of a profiler timeline or
// tracer file, the highest allocated value a log printed; false for a snapshot without a trace.
func (r *Report) RecordedPeak() (int64, bool) {
	if r.Peak != nil {
		return r.Peak.Bytes, true
	}
	switch p := r.Part.(type) {
	case *TracerReport:
		return p.PeakBytes, true
	case *TimelineReport:
		return p.MemoryTimeline.PeakBytes, true
	case *LogReport:
		return max(p.Log.PeakAllocatedBytes, 0), true // −1 when the log prints no allocated measure
	}
	return 0, false
}
