package analyze

import (
	"context"

	"github.com/memscan/memscan/allocator"
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
		r.reps, r.blocks, r.err = replayAllocator(a.ctx, a.snap, a.opts.Allocator, true)
	}()
	return nil
}

// pendingReplays is the allocator replays while they run: reps, blocks (each device's block bytes allocated after
// every event of its baseline replay, torch.cuda.memory_allocated's unit) and err are set when done is closed.
type pendingReplays struct {
	done   chan struct{}
	reps   []report.AllocatorReplay
	blocks map[int]*allocator.BlockSeries
	err    error
}

// allocatorReplays waits for the allocator replays (nil when skipped).
func (a *analysis) allocatorReplays() ([]report.AllocatorReplay, error) {
	if a.allocRun == nil {
		return nil, nil
	}
	<-a.allocRun.done
	return a.allocRun.reps, a.allocRun.err
}

// replaysPending reports whether the allocator replays are still running.
func (a *analysis) replaysPending() bool {
	if a.allocRun == nil {
		return false
	}
	select {
	case <-a.allocRun.done:
		return false
	default:
		return true
	}
}

// blockSeries waits for the allocator replays and returns device dev's baseline block bytes after every event (nil
// without a replay).
func (a *analysis) blockSeries(dev int) *allocator.BlockSeries {
	if _, err := a.allocatorReplays(); err != nil || a.allocRun == nil {
		return nil
	}
	return a.allocRun.blocks[dev]
}

// allocModel is the detectors' allocator model: the replays already made, falling back to a fresh replay for a
// device or settings they do not cover (rank summaries skip the replay section).
func (a *analysis) allocModel() detect.AllocatorModel {
	return replayedModel{reps: a.allocatorReplays, pending: a.replaysPending, fallback: detect.Replayer{Snapshot: a.snap}}
}

type replayedModel struct {
	reps     func() ([]report.AllocatorReplay, error)
	pending  func() bool
	fallback detect.Replayer
}

// Pending reports whether the replays are still running.
func (m replayedModel) Pending() bool { return m.pending() }

// PeakReserved serves expandable segments from the replay section's expandable-segments run, partial or not, so
// that the fragmentation finding and the section state one saving.
func (m replayedModel) PeakReserved(ctx context.Context, dev int, settings string) (detect.Replayed, error) {
	if settings == expandableSettings {
		reps, err := m.reps()
		if err != nil {
			return detect.Replayed{}, err
		}
		for _, r := range reps {
			if r.Device == dev && r.ExpandablePeakReservedBytes > 0 {
				return detect.Replayed{Baseline: r.BaselinePeakReservedBytes, Peak: r.ExpandablePeakReservedBytes, Partial: r.PartialReason}, nil
			}
		}
	}
	return m.fallback.PeakReserved(ctx, dev, settings)
}
