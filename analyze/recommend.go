package analyze

import (
	"fmt"

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

// expandable reports whether the snapshot already uses expandable segments.
func expandable(s *snapshot.Snapshot) bool {
	if s.AllocatorSettings != nil && s.AllocatorSettings.ExpandableSegments {
		return true
	}
	for i := range s.Segments {
		if s.Segments[i].IsExpandable {
			return true
		}
	}
	return false
}

// recommend derives advice from a finished report; every entry carries the number and the threshold behind it.
func recommend(r *Report, s *snapshot.Snapshot) []Recommendation {
	out := oomRecommendations(r)
	if len(r.LeakSuspects) > 0 {
		l := r.LeakSuspects[0]
		out = append(out, Recommendation{ID: "possible-leak", Severity: SeverityWarning,
			Title: "Possible memory leak: live bytes from one site keep growing",
			Value: float64(l.GrowthBytes), Threshold: float64(LeakMinGrowthBytes), Unit: UnitBytes,
			Evidence: fmt.Sprintf("%s (%s) on device %d grew from %s to %s across %d %s without ever shrinking (%d suspect site(s))",
				l.Site, l.Category, l.Device, units.Bytes(l.FirstBytes), units.Bytes(l.LastBytes), l.Markers, l.MarkerKind, len(r.LeakSuspects)),
			Advice: "Check that tensors from this site are not kept alive across steps (appended to lists, stored on self, loss kept with its graph instead of loss.item())."})
	}

	out = append(out, cacheRecommendations(r, expandable(s))...)
	out = append(out, layoutRecommendations(r)...)
	return out
}

// oomRecommendations explains the recorded OOM events: the first one, and the first that struck while the cache
// held enough free memory.
func oomRecommendations(r *Report) []Recommendation {
	out := []Recommendation{}
	for i, o := range r.OOMs {
		if i == 0 {
			rec := Recommendation{ID: "oom", Severity: SeverityCritical, Title: "Out-of-memory event recorded",
				Value: float64(len(r.OOMs)), Threshold: 0,
				Evidence: fmt.Sprintf("%d oom event(s); the first asked for %s with %s free on device %d (event %d)",
					len(r.OOMs), units.Bytes(o.RequestedBytes), units.Bytes(o.DeviceFreeBytes), o.Device, o.EventIndex),
				Advice: "Look at the live set at the peak and the top sites: reduce batch or sequence length, enable activation checkpointing, or shard parameters/optimizer state (FSDP/ZeRO)."}
			if o.Site != "" {
				rec.Evidence += ", from " + o.Site
			}
			out = append(out, rec)
		}
		if cached := o.ReservedBytes - o.AllocatedBytes; cached >= o.RequestedBytes && o.RequestedBytes > 0 {
			out = append(out, Recommendation{ID: "oom-fragmentation", Severity: SeverityCritical,
				Title:     "OOM while the cache held enough free memory",
				Value:     float64(cached),
				Threshold: float64(o.RequestedBytes), Unit: UnitBytes,
				Evidence: fmt.Sprintf("at oom event %d on device %d the allocator held %s reserved but not allocated, more than the %s requested, yet no free block was large enough",
					o.EventIndex, o.Device, units.Bytes(cached), units.Bytes(o.RequestedBytes)),
				Advice: "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True so free memory can be remapped into one range."})
			break
		}
	}
	return out
}

// cacheRecommendations looks at what the cache holds beyond the requested bytes: overhead, large unused blocks,
// fragmentation (unless segments are expandable) and blocks pending on other streams.
func cacheRecommendations(r *Report, expandableSegments bool) []Recommendation {
	var out []Recommendation
	reserved := r.ReservedBytes
	if overhead := units.Share(reserved-r.RequestedBytes, reserved); reserved > 0 && overhead > CacheOverheadPct {
		out = append(out, Recommendation{ID: "cache-overhead", Severity: SeverityWarning, Title: "High cache overhead",
			Value: overhead, Threshold: CacheOverheadPct, Unit: UnitPercent,
			Evidence: fmt.Sprintf("%s of %s reserved (%.1f%%) holds no requested bytes: %s cached free, %s pending free, %s rounding",
				units.Bytes(reserved-r.RequestedBytes), units.Bytes(reserved), overhead, units.Bytes(r.InactiveBytes),
				units.Bytes(r.ExternalFreeBytes-r.InactiveBytes), units.Bytes(r.InternalFreeBytes)),
			Advice: "Release cached blocks between phases with torch.cuda.empty_cache(), or limit splitting with PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:<N>; see the fragmentation figures for why the cache is large."})
	}

	f := r.Fragmentation
	if f.LargeFreeBlocks > 0 {
		out = append(out, Recommendation{ID: "large-unused-blocks", Severity: SeverityWarning, Title: "Large unused cached blocks",
			Value: float64(r.LargestFreeBlockBytes), Threshold: float64(LargeFreeBlockBytes), Unit: UnitBytes,
			Evidence: fmt.Sprintf("%d cached free block(s) of at least %s hold %s; the largest is %s",
				f.LargeFreeBlocks, units.Bytes(LargeFreeBlockBytes), units.Bytes(f.LargeFreeBlocksBytes), units.Bytes(r.LargestFreeBlockBytes)),
			Advice: "Memory freed after a peak stays cached: call torch.cuda.empty_cache() after one-off phases (evaluation, checkpoint loading), or let other work reuse it."})
	}

	if !expandableSegments && f.FragmentationPct > FragmentationPctThreshold && units.Share(f.CachedFreeBytes, reserved) >= FragmentationMinCachedPct {
		out = append(out, Recommendation{ID: "fragmentation", Severity: SeverityWarning, Title: "Fragmented cache",
			Value: f.FragmentationPct, Threshold: FragmentationPctThreshold, Unit: UnitPercent,
			Evidence: fmt.Sprintf("%.1f%% of the %s cached free memory lies outside the largest free block (%s); %d segment(s) are at least %.0f%% free",
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
func layoutRecommendations(r *Report) []Recommendation {
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
