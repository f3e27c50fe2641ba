package findings

import (
	"fmt"

	"github.com/memscan/memscan/internal/units"
)

// Titles of the findings judged on the state at the dump.
const (
	titleDumpCacheOverhead = "High cache overhead at the dump"
	titleLargeUnusedBlocks = "Large unused cached blocks at the dump"
	titleDumpFragmentation = "Fragmented cache at the dump"
	titlePendingFree       = "Blocks waiting on other streams (record_stream)"
	titleSmallPoolSegments = "Many small-pool segments"
	titleRoundingWaste     = "Allocation rounding wastes memory"
	titlePrivatePools      = "Private memory pools hold reserved memory"
	titleNoHistory         = "Snapshot recorded without allocation history"
)

// atDump opens the evidence of a cache finding judged at the dump because the snapshot has no history.
const atDump = "at the dump (no allocation history to judge the peak): "

// NewDumpCacheOverhead words reserved memory holding no requested bytes at the dump, overheadPct of reserved:
// inactive (cached free), pending free and rounding bytes.
func NewDumpCacheOverhead(overheadPct float64, reserved, requested, inactive, pending, rounding int64) Finding {
	return Finding{ID: CacheOverhead, Severity: Warning, Title: titleDumpCacheOverhead,
		Value: overheadPct, Threshold: DumpCacheOverheadPct, Unit: Percent,
		Evidence: fmt.Sprintf(atDump+"%s of %s reserved (%.1f%%) holds no requested bytes: %s cached free, %s pending free, %s rounding",
			units.Bytes(reserved-requested), units.Bytes(reserved), overheadPct, units.Bytes(inactive), units.Bytes(pending), units.Bytes(rounding)),
		Advice: "Record the allocation history (torch.cuda.memory._record_memory_history) to tell memory the next peak reuses from memory it does not; only the latter is worth torch.cuda.empty_cache()."}
}

// NewLargeUnusedBlocks words count cached free blocks of at least LargeFreeBlockBytes holding bytes at the dump,
// the largest being largest.
func NewLargeUnusedBlocks(count int, bytes, largest int64) Finding {
	return Finding{ID: LargeUnusedBlocks, Severity: Info, Title: titleLargeUnusedBlocks,
		Value: float64(largest), Threshold: float64(LargeFreeBlockBytes), Unit: Bytes,
		Evidence: fmt.Sprintf(atDump+"%d cached free block(s) of at least %s hold %s; the largest is %s",
			count, units.Bytes(LargeFreeBlockBytes), units.Bytes(bytes), units.Bytes(largest)),
		Advice: "Memory freed after a one-off phase (evaluation, checkpoint loading) stays cached: call torch.cuda.empty_cache() after that phase if later work does not need it."}
}

// NewDumpFragmentation words cached free memory outside the largest free block at the dump: pct of cachedFree;
// mostlyFree segments are at least mostlyFreeShare free.
func NewDumpFragmentation(pct float64, cachedFree, largest int64, mostlyFree int, mostlyFreeShare float64) Finding {
	return Finding{ID: Fragmentation, Severity: Warning, Title: titleDumpFragmentation,
		Value: pct, Threshold: DumpFragmentationPct, Unit: Percent,
		Evidence: fmt.Sprintf(atDump+"%.1f%% of the %s cached free memory lies outside the largest free block (%s); %d segment(s) are at least %.0f%% free",
			pct, units.Bytes(cachedFree), units.Bytes(largest), mostlyFree, mostlyFreeShare*100),
		Advice: "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True so segments grow in place instead of leaving many partly used ranges."}
}

// NewPendingFree words pending bytes in active_pending_free blocks, pct of reserved.
func NewPendingFree(pct float64, pending int64) Finding {
	return Finding{ID: PendingFree, Severity: Info, Title: titlePendingFree,
		Value: pct, Threshold: PendingFreePct, Unit: Percent,
		Evidence: fmt.Sprintf("%s (%.1f%% of reserved) is in active_pending_free blocks: freed by the program but held until work on another stream finishes",
			units.Bytes(pending), pct),
		Advice: "Avoid Tensor.record_stream on large buffers (for NCCL set TORCH_NCCL_AVOID_RECORD_STREAMS=1), or synchronize the side stream before freeing."}
}

// NewSmallPoolSegments words segments small-pool segments reserving reserved bytes, free of them free.
func NewSmallPoolSegments(segments int, reserved, free int64) Finding {
	return Finding{ID: SmallPoolSegments, Severity: Info, Title: titleSmallPoolSegments,
		Value: float64(segments), Threshold: SmallPoolSegmentsMax,
		Evidence: fmt.Sprintf("%d small-pool (2 MiB) segments reserve %s, of which %s is free",
			segments, units.Bytes(reserved), units.Bytes(free)),
		Advice: "Many tensors under 1 MiB are alive or were alive together: batch small tensors into one buffer (e.g. flat parameter/optimizer buffers, foreach/fused optimizers)."}
}

// NewRoundingWaste words live blocks rounding bytes larger than requested, pct of reserved.
func NewRoundingWaste(pct float64, rounding int64) Finding {
	return Finding{ID: RoundingWaste, Severity: Info, Title: titleRoundingWaste,
		Value: pct, Threshold: RoundingWastePct, Unit: Percent,
		Evidence: fmt.Sprintf("live blocks are %s larger than requested (%.1f%% of reserved)", units.Bytes(rounding), pct),
		Advice:   "Odd sizes round up to allocator granularity: pad shapes to multiples of 512 bytes, or tune PYTORCH_CUDA_ALLOC_CONF=roundup_power2_divisions."}
}

// NewPrivatePools words private bytes reserved in non-default pools, pct of reserved.
func NewPrivatePools(pct float64, private int64) Finding {
	return Finding{ID: PrivatePools, Severity: Info, Title: titlePrivatePools,
		Value: pct, Threshold: PrivatePoolPct, Unit: Percent,
		Evidence: fmt.Sprintf("%s (%.1f%% of reserved) belongs to non-default pools (CUDA graphs or MemPool), which other allocations cannot reuse", units.Bytes(private), pct),
		Advice:   "Share one graph pool between captures (torch.cuda.graph(pool=...)) and release graphs that are no longer replayed."}
}

// NewNoHistory words a snapshot whose device traces hold events trace events in all, fewer than MinHistoryEvents
// on each device; stackless of the allocated bytes have no stack, which leaves them Unknown.
func NewNoHistory(events int, stackless, allocated int64) Finding {
	evidence := fmt.Sprintf("the snapshot holds %s, so it has no timeline, peak, leak check or OOM explanation",
		units.Plural(events, "trace event", "trace events"))
	if stackless > 0 {
		evidence += fmt.Sprintf(", and %s of the %s allocated (%s) has no stack to tell what it is (Unknown)",
			units.Bytes(stackless), units.Bytes(allocated), units.Percent(stackless, allocated))
	}
	return Finding{ID: NoHistory, Severity: Info, Title: titleNoHistory,
		Value: float64(events), Threshold: MinHistoryEvents,
		Evidence: evidence,
		Advice: `Record the history before dumping: torch.cuda.memory._record_memory_history(max_entries=100000) before the steps to look at, ` +
			`torch.cuda.memory._dump_snapshot("snapshot.pickle") after them (torch 2.0: _record_memory_history(True, trace_alloc_max_entries=100000, trace_alloc_record_context=True)).`}
}
