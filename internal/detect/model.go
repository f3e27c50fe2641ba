package detect

import (
	"context"
	"fmt"
	"strings"

	"github.com/memscan/memscan/allocator"
	"github.com/memscan/memscan/snapshot"
)

// Replayer is the AllocatorModel backed by package allocator: it replays a snapshot's device trace under the
// recorded settings with the asked ones added on top (so a what-if changes one thing), with the capacity the
// trace shows (an oom event's), else unlimited.
type Replayer struct {
	Snapshot *snapshot.Snapshot
}

// PeakReserved returns the peak reserved bytes of device dev's trace replayed under settings. A replay the model
// could not follow everywhere is an error naming why, so a saving is never stated from a partial replay.
func (r Replayer) PeakReserved(ctx context.Context, dev int, settings string) (int64, error) {
	recorded, _, _ := allocator.ConfigFromSettings(r.Snapshot.AllocatorSettings)
	conf := strings.Trim(recorded.String()+","+settings, ",")
	cfg, err := allocator.ParseConf(conf)
	if err != nil {
		return 0, fmt.Errorf("settings %q: %w", conf, err)
	}
	rep, err := allocator.ReplaySnapshot(ctx, r.Snapshot, dev, &cfg, allocator.ReplayOptions{})
	if err != nil {
		return 0, err
	}
	if rep.WhatIf.Partial {
		return 0, PartialReplayError(conf, rep.WhatIf.PartialReason())
	}
	return rep.WhatIf.PeakReserved, nil
}

// PartialReplayError is what an AllocatorModel answers for a replay under settings that it could not follow
// everywhere, worded to complete "the allocator replay was not used: …".
func PartialReplayError(settings, reason string) error {
	return fmt.Errorf("it is partial under %s — %s", settings, reason)
}
