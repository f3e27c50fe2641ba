package analyze

import (
	"context"

	"github.com/memscan/memscan/internal/detect"
	"github.com/memscan/memscan/report"
)

// expandableSettings is what the fragmentation finding asks the allocator model for.
const expandableSettings = "expandable_segments:True"

// replayAllocatorModel starts the replay of every device trace through the caching-allocator model, once for the
// fragmentation finding and the report's replay section alike. It runs alongside the trace replay, which it does
// not depend on; allocatorReplays waits for it.
func (a *analysis) replayAllocatorModel() error {
	if a.opts.Allocator.Skip {
		return nil
	}
	r := &pendingReplays{done: make(chan struct{})}
	a.allocRun = r
	go func() {
		defer close(r.done)
		r.reps, r.err = ReplayAllocator(a.ctx, a.snap, a.opts.Allocator)
	}()
	return nil
}

// pendingReplays is the allocator replays while they run: reps and err are set when done is closed.
type pendingReplays struct {
	done chan struct{}
	reps []report.AllocatorReplay
	err  error
}

// allocatorReplays waits for the allocator replays (nil when skipped).
func (a *analysis) allocatorReplays() ([]report.AllocatorReplay, error) {
	if a.allocRun == nil {
		return nil, nil
	}
	<-a.allocRun.done
	return a.allocRun.reps, a.allocRun.err
}

// allocModel is the detectors' allocator model: the replays already made, falling back to a fresh replay for a
// device or settings they do not cover (rank summaries skip the replay section).
func (a *analysis) allocModel() detect.AllocatorModel {
	return replayedModel{reps: a.allocatorReplays, fallback: detect.Replayer{Snapshot: a.snap}}
}

type replayedModel struct {
	reps     func() ([]report.AllocatorReplay, error)
	fallback detect.Replayer
}

// PeakReserved serves expandable segments from the replay section's expandable-segments run.
func (m replayedModel) PeakReserved(ctx context.Context, dev int, settings string) (int64, error) {
	if settings == expandableSettings {
		reps, err := m.reps()
		if err != nil {
			return 0, err
		}
		for _, r := range reps {
			if r.Device != dev || r.ExpandablePeakReservedBytes <= 0 {
				continue
			}
			if r.Partial {
				return 0, detect.PartialReplayError(r.ExpandableSettings, r.PartialReason)
			}
			return r.ExpandablePeakReservedBytes, nil
		}
	}
	return m.fallback.PeakReserved(ctx, dev, settings)
}
