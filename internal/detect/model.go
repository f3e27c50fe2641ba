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

// PeakReserved replays device dev's trace under the recorded settings and under settings. A replay the model
// could not follow everywhere (a trace that starts late, frees it never saw allocated) still answers, saying why
// in Partial: its figure is the one the report's replay section shows, and the finding states it with the reason.
func (r Replayer) PeakReserved(ctx context.Context, dev int, settings string) (Replayed, error) {
	recorded, _, _ := allocator.ConfigFromSettings(r.Snapshot.AllocatorSettings)
	conf := strings.Trim(recorded.String()+","+settings, ",")
	cfg, err := allocator.ParseConf(conf)
	if err != nil {
		return Replayed{}, fmt.Errorf("settings %q: %w", conf, err)
	}
	rep, err := allocator.ReplaySnapshot(ctx, r.Snapshot, dev, &cfg, allocator.ReplayOptions{})
	if err != nil {
		return Replayed{}, err
	}
	return Replayed{Baseline: rep.Baseline.PeakReserved, Peak: rep.WhatIf.PeakReserved, Partial: rep.WhatIf.PartialReason()}, nil
}
