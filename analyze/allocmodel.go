package analyze

import (
	"context"

	"github.com/memscan/memscan/internal/detect"
	"github.com/memscan/memscan/report"
)

// expandableSettings is what the fragmentation finding asks the allocator model for.
const expandableSettings = "expandable_segments:True"

// replayAllocatorModel replays every device trace through the caching-allocator model once, before the detectors
// run, so that the fragmentation finding and the report's replay section read the same replays instead of each
// recording and replaying the trace on its own.
func (a *analysis) replayAllocatorModel() error {
	if a.opts.Allocator.Skip {
		return nil
	}
	reps, blocks, err := replayAllocator(a.ctx, a.snap, a.opts.Allocator, true)
	if err != nil {
		return err
	}
	a.allocReps, a.blockSeries = reps, blocks
	return nil
}

// allocModel is the detectors' allocator model: the replays already made, falling back to a fresh replay for a
// device or settings they do not cover (rank summaries skip the replay section).
func (a *analysis) allocModel() detect.AllocatorModel {
	return replayedModel{reps: a.allocReps, fallback: detect.Replayer{Snapshot: a.snap}}
}

type replayedModel struct {
	reps     []report.AllocatorReplay
	fallback detect.Replayer
}

// PeakReserved serves expandable segments from the replay section's expandable-segments run, partial or not, so
// that the fragmentation finding and the section state one saving.
func (m replayedModel) PeakReserved(ctx context.Context, dev int, settings string) (detect.Replayed, error) {
	if settings == expandableSettings {
		for _, r := range m.reps {
			if r.Device == dev && r.ExpandablePeakReservedBytes > 0 {
				return detect.Replayed{Baseline: r.BaselinePeakReservedBytes, Peak: r.ExpandablePeakReservedBytes, Partial: r.PartialReason}, nil
			}
		}
	}
	return m.fallback.PeakReserved(ctx, dev, settings)
}
