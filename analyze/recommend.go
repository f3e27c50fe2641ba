package analyze

import (
	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/detect"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/snapshot"
)

// recommend lists the findings of a finished snapshot report, ranked (findings.Rank: critical first, then by the
// bytes their change saves at the peak); every one carries the number and the threshold behind it. With an allocation history the trace detectors (internal/detect) judge at the peak or the OOM: their
// findings replace the dump-time cache checks, which only run on snapshots without history, labelled as such.
func recommend(r *report.SnapshotReport, s *snapshot.Snapshot, events int, judged []findings.Finding, atDump bool) []findings.Finding {
	out := append([]findings.Finding{}, judged...)
	out = append(out, cacheRecommendations(r, detect.ExpandableOn(s), atDump)...)
	out = append(out, layoutRecommendations(r)...)
	if atDump {
		out = append(out, noHistory(r, s, events))
	}
	findings.Rank(out)
	return out
}

// noHistory says that the snapshot was dumped without allocation history, with how many trace events it holds
// (events) and how many of the allocated bytes that leaves without a stack.
func noHistory(r *report.SnapshotReport, s *snapshot.Snapshot, events int) findings.Finding {
	var stackless int64
	for i := range s.Segments {
		for _, b := range s.Segments[i].Blocks {
			if b.State == snapshot.BlockActiveAllocated && (b.Stack == nil || len(b.Stack.Frames) == 0) {
				stackless += b.Size
			}
		}
	}
	return findings.NewNoHistory(events, stackless, r.AllocatedBytes)
}

// cacheRecommendations looks at what the cache holds beyond the requested bytes at the dump. Without an
// allocation history (atDump) that moment is all there is: overhead, large unused blocks and fragmentation are
// judged there and say so. Blocks pending on other streams are a state of the dump either way.
func cacheRecommendations(r *report.SnapshotReport, expandableSegments, atDump bool) []findings.Finding {
	var out []findings.Finding
	reserved := r.ReservedBytes
	pending := r.ExternalFreeBytes - r.InactiveBytes
	if overhead := units.Share(reserved-r.RequestedBytes, reserved); atDump && reserved > 0 && overhead > findings.DumpCacheOverheadPct {
		out = append(out, findings.NewDumpCacheOverhead(overhead, reserved, r.RequestedBytes, r.InactiveBytes, pending, r.InternalFreeBytes))
	}
	f := r.Fragmentation
	if atDump && f.LargeFreeBlocks > 0 {
		out = append(out, findings.NewLargeUnusedBlocks(f.LargeFreeBlocks, f.LargeFreeBlocksBytes, r.LargestFreeBlockBytes))
	}
	if atDump && !expandableSegments && f.FragmentationPct > findings.DumpFragmentationPct && units.Share(f.CachedFreeBytes, reserved) >= findings.DumpFragmentationMinCachedPct {
		out = append(out, findings.NewDumpFragmentation(f.FragmentationPct, f.CachedFreeBytes, r.LargestFreeBlockBytes, f.MostlyFreeSegments, f.MostlyFreeThreshold))
	}
	if reserved > 0 && pending > 0 && units.Share(pending, reserved) >= findings.PendingFreePct {
		out = append(out, findings.NewPendingFree(units.Share(pending, reserved), pending))
	}
	return out
}

// layoutRecommendations looks at where the reserved memory sits: small-pool segments, rounding, private pools.
func layoutRecommendations(r *report.SnapshotReport) []findings.Finding {
	var out []findings.Finding
	reserved := r.ReservedBytes
	var small report.Totals
	for _, g := range r.PerSegmentType {
		if g.Key == string(snapshot.SegmentSmall) {
			small = g.Totals
		}
	}
	if small.Segments > findings.SmallPoolSegmentsMax {
		out = append(out, findings.NewSmallPoolSegments(small.Segments, small.ReservedBytes, small.ExternalFreeBytes))
	}
	if waste := units.Share(r.InternalFreeBytes, reserved); waste > findings.RoundingWastePct {
		out = append(out, findings.NewRoundingWaste(waste, r.InternalFreeBytes))
	}
	var private int64
	for _, g := range r.PerPool {
		if g.Key != PoolKey(snapshot.PoolID{}) {
			private += g.ReservedBytes
		}
	}
	if p := units.Share(private, reserved); p > findings.PrivatePoolPct {
		out = append(out, findings.NewPrivatePools(p, private))
	}
	return out
}
