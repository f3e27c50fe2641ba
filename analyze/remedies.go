package analyze

import (
	"fmt"
	"strings"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/static"
	"github.com/memscan/memscan/units"
)

// AddRemedies answers, for every explained OOM of r, which single change to the static configuration cfg fits the
// memory the allocator could have had there (its reserved bytes plus the free memory the OOM reported): the
// largest smaller micro-batch, activation checkpointing, a chunked loss, each with its predicted peak. The OOM
// finding's advice then names the changes that fit. Only a snapshot's trace records OOMs: other reports are
// left as they are.
func AddRemedies(r *Report, cfg static.Config) error {
	s, ok := r.Part.(*SnapshotReport)
	if !ok {
		return nil
	}
	for i := range s.OOMs {
		o := &s.OOMs[i]
		if o.Explained == nil {
			continue
		}
		rs, err := findings.Remedies(cfg, o.Explained.CapacityBytes)
		if err != nil {
			return fmt.Errorf("%s: oom at event %d: %w", r.File, o.EventIndex, err)
		}
		o.Remedies = rs
		var fit []string
		for _, rm := range rs[1:] {
			if rm.Fits {
				fit = append(fit, fmt.Sprintf("%s (predicted peak %s allocated, %s reserved)", rm.Change,
					units.Bytes(rm.PeakAllocatedBytes), units.Bytes(rm.PeakReservedBytes)))
			}
		}
		for j := range r.Recommendations {
			rec := &r.Recommendations[j]
			if rec.ID != "oom" || rec.Event != o.EventIndex || rec.Device != o.Device {
				continue
			}
			switch {
			case len(fit) > 0:
				rec.Advice = "With the static configuration, one change fits " + units.Bytes(o.Explained.CapacityBytes) + ": " +
					strings.Join(fit, "; or ") + ". " + rec.Advice
			default:
				rec.Advice = "With the static configuration no single change (micro-batch, checkpointing, chunked loss) fits " +
					units.Bytes(o.Explained.CapacityBytes) + "; combine them or shard. " + rec.Advice
			}
		}
	}
	return nil
}
