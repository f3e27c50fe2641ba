package analyze

import (
	"fmt"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/snapshot"
	"github.com/memscan/memscan/units"
)

// Recommendation thresholds. Each recommendation reports its measured value next to the threshold it crossed.
const (
	// CacheOverheadPct: reserved memory not holding requested bytes, % of reserved (fires above).
	CacheOverheadPct = 10.0
	// FragmentationPctThreshold: cached free memory outside the largest free block, % of cached free (fires
	// above), considered only when cached free memory is at least FragmentationMinCachedPct of reserved.
	FragmentationPctThreshold = 50.0
	FragmentationMinCachedPct = 10.0
	// PendingFreePct: bytes in active_pending_free blocks, % of reserved (fires at or above).
	PendingFreePct = 1.0
	// SmallSegmentsThreshold: number of 2 MiB small-pool segments (fires above).
	SmallSegmentsThreshold = 100
	// RoundingWastePct: size − requested of live blocks, % of reserved (fires above).
	RoundingWastePct = 5.0
	// PrivatePoolPct: reserved bytes in non-default pools (CUDA graphs, MemPool), % of reserved (fires above).
	PrivatePoolPct = 10.0
)

// Severities.
const (
	SeverityCritical = "critical"
	SeverityWarning  = "warning"
	SeverityInfo     = "info"
)

// recommend derives advice from a finished report; every entry carries the number and the threshold behind it.
// With an allocation history the trace detectors (package findings) judge at the peak or the OOM: their findings
// replace the dump-time cache checks, which only run on snapshots without history, labelled as such.
func recommend(r *SnapshotReport, s *snapshot.Snapshot, judged []findings.Finding, atDump bool) []Recommendation {
	out := []Recommendation{}
	for _, f := range judged {
		out = append(out, Recommendation{ID: f.ID, Severity: f.Severity, Title: f.Title, Evidence: f.Evidence,
			Value: f.Value, Threshold: f.Threshold, Unit: f.Unit, Advice: f.Advice, Device: f.Device, Event: f.Event,
			Iteration: f.Iteration, Phase: f.Phase, Basis: f.Basis})
	}
	out = append(out, cacheRecommendations(r, findings.ExpandableOn(s), atDump)...)
	out = append(out, layoutRecommendations(r)...)
	return out
}

// cacheRecommendations looks at what the cache holds beyond the requested bytes at the dump. Without an
// allocation history (atDump) that moment is all there is: overhead, large unused blocks and fragmentation are
// judged there and say so. Blocks pending on other streams are a state of the dump either way.
func cacheRecommendations(r *SnapshotReport, expandableSegments, atDump bool) []Recommendation {
	var out []Recommendation
	reserved := r.ReservedBytes
	const dump = "at the dump (no allocation history to judge the peak): "
	if overhead := units.Share(reserved-r.RequestedBytes, reserved); atDump && reserved > 0 && overhead > CacheOverheadPct {
		out = append(out, Recommendation{ID: "cache-overhead", Severity: SeverityWarning, Title: "High cache overhead at the dump",
			Value: overhead, Threshold: CacheOverheadPct, Unit: UnitPercent,
			Evidence: fmt.Sprintf(dump+"%s of %s reserved (%.1f%%) holds no requested bytes: %s cached free, %s pending free, %s rounding",
				units.Bytes(reserved-r.RequestedBytes), units.Bytes(reserved), overhead, units.Bytes(r.InactiveBytes),
				units.Bytes(r.ExternalFreeBytes-r.InactiveBytes), units.Bytes(r.InternalFreeBytes)),
			Advice: "Record the allocation history (torch.cuda.memory._record_memory_history) to tell memory the next peak reuses from memory it does not; only the latter is worth torch.cuda.empty_cache()."})
	}

	f := r.Fragmentation
	if atDump && f.LargeFreeBlocks > 0 {
		out = append(out, Recommendation{ID: "large-unused-blocks", Severity: SeverityInfo, Title: "Large unused cached blocks at the dump",
			Value: float64(r.LargestFreeBlockBytes), Threshold: float64(LargeFreeBlockBytes), Unit: UnitBytes,
			Evidence: fmt.Sprintf(dump+"%d cached free block(s) of at least %s hold %s; the largest is %s",
				f.LargeFreeBlocks, units.Bytes(LargeFreeBlockBytes), units.Bytes(f.LargeFreeBlocksBytes), units.Bytes(r.LargestFreeBlockBytes)),
			Advice: "Memory freed after a one-off phase (evaluation, checkpoint loading) stays cached: call torch.cuda.empty_cache() after that phase if later work does not need it."})
	}

	if atDump && !expandableSegments && f.FragmentationPct > FragmentationPctThreshold && units.Share(f.CachedFreeBytes, reserved) >= FragmentationMinCachedPct {
		out = append(out, Recommendation{ID: "fragmentation", Severity: SeverityWarning, Title: "Fragmented cache at the dump",
			Value: f.FragmentationPct, Threshold: FragmentationPctThreshold, Unit: UnitPercent,
			Evidence: fmt.Sprintf(dump+"%.1f%% of the %s cached free memory lies outside the largest free block (%s); %d segment(s) are at least %.0f%% free",
				f.FragmentationPct, units.Bytes(f.CachedFreeBytes), units.Bytes(r.LargestFreeBlockBytes), f.MostlyFreeSegments, f.MostlyFreeThreshold*100),
			Advice: "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True so segments grow in place instead of leaving many partly used ranges."})
	}

	if pending := r.ExternalFreeBytes - r.InactiveBytes; reserved > 0 && pending > 0 && units.Share(pending, reserved) >= PendingFreePct {
		out = append(out, Recommendation{ID: "pending-free", Severity: SeverityInfo, Title: "Blocks waiting on other streams (record_stream)",
			Value: units.Share(pending, reserved), Threshold: PendingFreePct, Unit: UnitPercent,
			Evidence: fmt.Sprintf("%s (%.1f%% of reserved) is in active_pending_free blocks: freed by the program but held until work on another stream finishes",
				units.Bytes(pending), units.Share(pending, reserved)),
			Advice: "Avoid Tensor.record_stream on large buffers (for NCCL set TORCH_NCCL_AVOID_RECORD_STREAMS=1), or synchronize the side stream before freeing."})
	}
	return out
}

// layoutRecommendations looks at where the reserved memory sits: small-pool segments, rounding, private pools.
func layoutRecommendations(r *SnapshotReport) []Recommendation {
	var out []Recommendation
	reserved := r.ReservedBytes
	var small Totals
	for _, g := range r.PerSegmentType {
		if g.Key == string(snapshot.SegmentSmall) {
			small = g.Totals
		}
	}
	if small.Segments > SmallSegmentsThreshold {
		out = append(out, Recommendation{ID: "small-pool-segments", Severity: SeverityInfo, Title: "Many small-pool segments",
			Value: float64(small.Segments), Threshold: SmallSegmentsThreshold,
			Evidence: fmt.Sprintf("%d small-pool (2 MiB) segments reserve %s, of which %s is free",
				small.Segments, units.Bytes(small.ReservedBytes), units.Bytes(small.ExternalFreeBytes)),
			Advice: "Many tensors under 1 MiB are alive or were alive together: batch small tensors into one buffer (e.g. flat parameter/optimizer buffers, foreach/fused optimizers)."})
	}

	if waste := units.Share(r.InternalFreeBytes, reserved); waste > RoundingWastePct {
		out = append(out, Recommendation{ID: "rounding-waste", Severity: SeverityInfo, Title: "Allocation rounding wastes memory",
			Value: waste, Threshold: RoundingWastePct, Unit: UnitPercent,
			Evidence: fmt.Sprintf("live blocks are %s larger than requested (%.1f%% of reserved)", units.Bytes(r.InternalFreeBytes), waste),
			Advice:   "Odd sizes round up to allocator granularity: pad shapes to multiples of 512 bytes, or tune PYTORCH_CUDA_ALLOC_CONF=roundup_power2_divisions."})
	}

	var private int64
	for _, g := range r.PerPool {
		if g.Key != PoolKey(snapshot.PoolID{}) {
			private += g.ReservedBytes
		}
	}
	if p := units.Share(private, reserved); p > PrivatePoolPct {
		out = append(out, Recommendation{ID: "private-pools", Severity: SeverityInfo, Title: "Private memory pools hold reserved memory",
			Value: p, Threshold: PrivatePoolPct, Unit: UnitPercent,
			Evidence: fmt.Sprintf("%s (%.1f%% of reserved) belongs to non-default pools (CUDA graphs or MemPool), which other allocations cannot reuse", units.Bytes(private), p),
			Advice:   "Share one graph pool between captures (torch.cuda.graph(pool=...)) and release graphs that are no longer replayed."})
	}
	return out
}
