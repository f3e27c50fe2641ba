// Package findings is the one home of what memscan concludes about a run: the Finding type, every finding ID with
// its severity, unit, threshold (thresholds.go, each with the reason for its value) and wording, and the
// structured evidence some findings carry (an OOM explained, the remedies an estimate proposes).
//
// Detectors live beside the data they read — the trace detectors in internal/detect, the dump-time, tracer, log
// and cross-input ones in analyze, the cross-rank ones in internal/merge — and compute numbers only: every
// sentence a finding prints is written here, by the constructor of its ID. This package imports nothing of
// memscan but units, so that the report model, the renderers and merge can use it without the detectors.
package findings

import (
	"cmp"
	"math"
	"slices"
	"strconv"

	"github.com/memscan/memscan/internal/units"
)

// ID names a finding; stable across versions (scripts and memscan compare key on it).
type ID string

// Severity says how urgent a finding is.
type Severity string

// Severities, most urgent first.
const (
	Critical Severity = "critical"
	Warning  Severity = "warning"
	Info     Severity = "info"
)

// Unit says what a finding's Value and Threshold count.
type Unit string

// Units of Finding.Value and Threshold; a finding without a unit counts a plain number.
const (
	Bytes   Unit = "bytes"
	Percent Unit = "%"
	// Ratio is a plain ratio such as max reserved / peak allocated, printed with an "x".
	Ratio Unit = "ratio"
	Count Unit = ""
)

// Finding is one conclusion with the number behind it: the measured Value and the Threshold it crossed, and, for
// a finding judged on a trace, where (device, event, iteration, phase). Its field order and tags are the wire form
// of summary.json's recommendations and report.msgpack.
type Finding struct {
	ID        ID       `json:"id" msgpack:"id"`
	Severity  Severity `json:"severity" msgpack:"severity"`
	Title     string   `json:"title" msgpack:"title"`
	Evidence  string   `json:"evidence" msgpack:"evidence"`
	Value     float64  `json:"value" msgpack:"value"`
	Threshold float64  `json:"threshold" msgpack:"threshold"`
	Unit      Unit     `json:"unit,omitempty" msgpack:"unit,omitempty"`
	// Device, Event, Iteration (1-based, 0: none) and Phase say where a trace finding was judged; Basis says how
	// a predicted Value was obtained ("allocator replay", "estimate", "layer extrapolation").
	Device    int    `json:"device,omitempty" msgpack:"device,omitempty"`
	Event     int    `json:"event_index,omitempty" msgpack:"event_index,omitempty"`
	Iteration int    `json:"iteration,omitempty" msgpack:"iteration,omitempty"`
	Phase     string `json:"phase,omitempty" msgpack:"phase,omitempty"`
	Basis     string `json:"basis,omitempty" msgpack:"basis,omitempty"`
	Advice    string `json:"advice" msgpack:"advice"`
	// SavedBytes is what the change the finding proposes would save at the peak (at the failing request for an
	// out-of-memory finding), 0 where it proposes none or the saving is not known; findings are ranked by it.
	SavedBytes int64 `json:"saved_at_peak_bytes,omitempty" msgpack:"saved_at_peak_bytes,omitempty"`
}

// Rank orders findings as a reader acts on them, in place and stably: critical ones first (a run that failed is
// explained before anything else), then by the bytes their change would save at the peak, largest first; the
// rest keep their order.
func Rank(fs []Finding) {
	critical := func(f Finding) int {
		if f.Severity == Critical {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(fs, func(a, b Finding) int {
		return cmp.Or(cmp.Compare(critical(a), critical(b)), cmp.Compare(b.SavedBytes, a.SavedBytes))
	})
}

// FormatMeasure renders a finding's value or threshold in its unit, e.g. "2.0GiB", "12.75%" or "1.25x".
func FormatMeasure(v float64, unit Unit) string {
	switch unit {
	case Bytes:
		return units.Bytes(int64(v))
	case Percent:
		return strconv.FormatFloat(v, 'f', 2, 64) + "%"
	case Ratio:
		return strconv.FormatFloat(v, 'f', 2, 64) + "x"
	}
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}

// Spec is what every finding of one ID shares: its severity, unit and title (the title may differ where one ID is
// judged two ways, at the peak and at the dump), and what judges it.
type Spec struct {
	ID       ID
	Severity Severity
	Unit     Unit
	Title    string
	// Scope is where the detector runs: "trace", "dump", "inputs" (across the inputs of one analysis), "ranks"
	// (memscan merge), "log" or "tracer".
	Scope string
}

// Catalogue lists every finding memscan can print, in the order the report groups them.
func Catalogue() []Spec {
	return []Spec{
		{OOM, Critical, Bytes, titleOOM, "trace"},
		{Leak, Warning, Bytes, titleLeak, "trace"},
		{Fragmentation, Warning, Bytes, titleFragmentation, "trace"},
		{CacheOverhead, Info, Ratio, titleCacheOverhead, "trace"},
		{IdleCache, Info, Bytes, titleIdleCache, "trace"},
		{LossLogits, Warning, Bytes, titleLossLogits, "trace"},
		{CacheOverhead, Warning, Percent, titleDumpCacheOverhead, "dump"},
		{LargeUnusedBlocks, Info, Bytes, titleLargeUnusedBlocks, "dump"},
		{Fragmentation, Warning, Percent, titleDumpFragmentation, "dump"},
		{PendingFree, Info, Percent, titlePendingFree, "dump"},
		{SmallPoolSegments, Info, Count, titleSmallPoolSegments, "dump"},
		{RoundingWaste, Info, Percent, titleRoundingWaste, "dump"},
		{PrivatePools, Info, Percent, titlePrivatePools, "dump"},
		{NoHistory, Info, Count, titleNoHistory, "dump"},
		{RankImbalance, Warning, Percent, titleInputsImbalance, "inputs"},
		{LeakAcrossIterations, Warning, Bytes, titleLeakAcrossIterations, "inputs"},
		{MixedIterations, Warning, Count, titleMixedIterations, "ranks"},
		{MixedRuns, Warning, Count, titleMixedRuns, "ranks"},
		{DuplicateRanks, Warning, Count, titleDuplicateRanks, "ranks"},
		{MissingRanks, Warning, Count, titleMissingRanks, "ranks"},
		{StagesWithoutWorld, Warning, Count, titleStagesWithoutWorld, "ranks"},
		{RankImbalance, Warning, Count, titleRanksImbalance, "ranks"},
		{PipelineStageSkew, Info, Count, titlePipelineStageSkew, "ranks"},
		{RankOOM, Critical, Count, titleRankOOM, "ranks"},
		{LogNearCapacity, Warning, Count, titleLogNearCapacity, "log"},
		{LogReservedSlack, Info, Count, titleLogReservedSlack, "log"},
		{LogRankImbalance, Info, Count, titleLogRankImbalance, "log"},
		{TracerUnlistedPeak, Info, Count, titleTracerUnlistedPeak, "tracer"},
		{TracerUnknownModule, Info, Count, titleTracerUnknownModule, "tracer"},
	}
}

// Finding IDs.
const (
	// Judged on a device trace, at the peak or the OOM (internal/detect).
	OOM           ID = "oom"
	Leak          ID = "leak"
	Fragmentation ID = "fragmentation" // also judged at the dump when there is no history
	CacheOverhead ID = "cache-overhead"
	IdleCache     ID = "idle-cache"
	LossLogits    ID = "loss-logits"
	// Judged on the state at the dump (analyze).
	LargeUnusedBlocks ID = "large-unused-blocks"
	PendingFree       ID = "pending-free"
	SmallPoolSegments ID = "small-pool-segments"
	RoundingWaste     ID = "rounding-waste"
	PrivatePools      ID = "private-pools"
	NoHistory         ID = "no-allocation-history"
	// Judged across the inputs of one analysis (analyze) or across rank summaries (memscan merge).
	RankImbalance        ID = "rank-imbalance"
	LeakAcrossIterations ID = "possible-leak-across-iterations"
	MixedIterations      ID = "mixed-iterations"
	MixedRuns            ID = "mixed-runs"
	DuplicateRanks       ID = "duplicate-ranks"
	MissingRanks         ID = "missing-ranks"
	StagesWithoutWorld   ID = "stages-without-world"
	PipelineStageSkew    ID = "pipeline-stage-skew"
	RankOOM              ID = "rank-oom"
	// Judged on a training log's memory lines.
	LogNearCapacity  ID = "log-near-capacity"
	LogReservedSlack ID = "log-reserved-slack"
	LogRankImbalance ID = "log-rank-imbalance"
	// Judged on a memory-tracer file.
	TracerUnlistedPeak  ID = "tracer-unlisted-peak"
	TracerUnknownModule ID = "tracer-unknown-module"
)
