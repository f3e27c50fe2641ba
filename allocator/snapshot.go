package allocator

import (
	"context"
	"fmt"
	"math/bits"
	"strconv"

	"github.com/memscan/memscan/snapshot"
)

// ConfigFromSettings returns the configuration a snapshot recorded in allocator_settings (torch ≥ 2.3): its
// PYTORCH_CUDA_ALLOC_CONF string when that parses, else the individual fields. known is false when the snapshot
// predates allocator_settings (the default is returned). err reports a recorded string this model cannot parse
// (the fields were used instead).
func ConfigFromSettings(s *snapshot.AllocatorSettings) (cfg Config, known bool, err error) {
	if s == nil {
		return Config{}, false, nil
	}
	if s.AllocConf != "" {
		c, perr := ParseConf(s.AllocConf)
		if perr == nil {
			return c, true, nil
		}
		err = fmt.Errorf("recorded PYTORCH_CUDA_ALLOC_CONF: %w", perr)
	}
	cfg.ExpandableSegments = s.ExpandableSegments
	// Unlimited is SIZE_MAX, which the snapshot carries as −1 (or a huge number).
	if s.MaxSplitSize > 0 && s.MaxSplitSize < 1<<50 {
		cfg.MaxSplitSize = s.MaxSplitSize
	}
	if t := s.GarbageCollectionThreshold; t > 0 && t < 1 {
		cfg.GarbageCollectionThreshold = t
	}
	for k, v := range s.RoundupPower2Divisions {
		mb, perr := strconv.ParseUint(k, 10, 64)
		if perr != nil || mb == 0 || mb&(mb-1) != 0 || v < 0 {
			continue
		}
		cfg.RoundupPower2Divisions[min(bits.Len64(mb)-1, roundupIntervals-1)] = v
	}
	return cfg, true, err
}

// SnapshotReplay is a snapshot's device trace replayed under its recorded settings (the baseline) and, when
// asked, under other settings.
type SnapshotReplay struct {
	Device    int
	Recording *Recording
	// RecordedSettings is what the snapshot says it ran under; RecordedKnown is false when it does not say
	// (before torch 2.3), and the default was assumed. SettingsNote carries a recorded string that did not parse.
	RecordedSettings Config
	RecordedKnown    bool
	SettingsNote     string
	Baseline         *Result
	WhatIf           *Result   // nil without a what-if
	Extra            []*Result // the extra configurations' replays, in order
}

// ReplaySnapshot replays device dev's trace of s: the baseline under the recorded settings, a what-if under
// *whatIf when it is not nil, and one replay per extra configuration, all at once and with opt's capacity — except
// that the baseline keeps the capacity of the trace's own oom event when it has one.
func ReplaySnapshot(ctx context.Context, s *snapshot.Snapshot, dev int, whatIf *Config, opt ReplayOptions, extra ...Config) (*SnapshotReplay, error) {
	if dev < 0 || dev >= len(s.DeviceTraces) || len(s.DeviceTraces[dev]) == 0 {
		return nil, fmt.Errorf("device %d has no trace", dev)
	}
	out := &SnapshotReplay{Device: dev}
	var err error
	out.RecordedSettings, out.RecordedKnown, err = ConfigFromSettings(s.AllocatorSettings)
	if err != nil {
		out.SettingsNote = err.Error()
	}
	out.Recording = Record(s.DeviceTraces[dev], RecordOptions{Final: s.Segments, Device: dev, Settings: out.RecordedSettings, Capacity: opt.Capacity,
		Extras: s.TraceExtras, Streams: s.TraceStreams})
	cfgs := []Config{out.RecordedSettings}
	if whatIf != nil {
		cfgs = append(cfgs, *whatIf)
	}
	cfgs = append(cfgs, extra...)
	opts := make([]ReplayOptions, len(cfgs))
	for i := range opts {
		opts[i] = opt
		opts[i].AllocatedSeries = opt.AllocatedSeries && i == 0
	}
	// The baseline replays the recorded run, so an oom event's capacity (the device it ran on) beats a given one,
	// which is for the what-ifs (another GPU, say).
	if out.Recording.Capacity > 0 {
		opts[0].Capacity = 0
	}
	res, err := replayAll(ctx, out.Recording, cfgs, opts)
	if err != nil {
		return nil, err
	}
	out.Baseline = res[0]
	if whatIf != nil {
		out.WhatIf = res[1]
	}
	out.Extra = res[len(cfgs)-len(extra):]
	return out, nil
}
