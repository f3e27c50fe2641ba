package findings

import (
	"fmt"
	"strings"

	"github.com/memscan/memscan/internal/units"
)

// Share is bytes under one name.
type Share struct {
	Name  string `json:"name"`
	Bytes int64  `json:"bytes"`
	Count int    `json:"count"`
}

// LiveSet is what was live after one event, broken down four ways.
type LiveSet struct {
	Device    int    `json:"device"`
	Event     int    `json:"event_index"`
	TimeUS    int64  `json:"time_us,omitempty"`
	Bytes     int64  `json:"bytes"`
	Iteration int    `json:"iteration"` // 1-based; 0 when outside any iteration
	Phase     string `json:"phase"`
	// ByCategory, ByComponent and ByPhase (the phase each block was allocated in) sort by bytes, largest first;
	// BySite holds the largest sites.
	ByCategory  []Share `json:"by_category"`
	ByComponent []Share `json:"by_component"`
	ByPhase     []Share `json:"by_phase"`
	BySite      []Share `json:"by_site"`
	// DecidedByLifetime is the bytes whose category the lifetime chose (the stack was missing or generic).
	DecidedByLifetime int64 `json:"decided_by_lifetime_bytes"`
}

// OOMExplained is what was live at a failing request and where the step was heading: the evidence of an OOM
// finding, kept in the report.
type OOMExplained struct {
	Event          int     `json:"event_index"`
	RequestedBytes int64   `json:"requested_bytes"`
	ReservedBytes  int64   `json:"reserved_bytes"`
	DeviceFree     int64   `json:"device_free_bytes"`
	Live           LiveSet `json:"live"`
	// Layers is the model's repeated-layer count, LayersDone how many had passed the failing allocation's code
	// point; 0 when the trace does not show it. LayersEvidence says what the count was read from.
	Layers, LayersDone int
	LayersEvidence     string `json:"layers_evidence,omitempty" msgpack:"LayersEvidence,omitempty"`
	PerLayerBytes      int64  `json:"per_layer_bytes"`
	// ProjectedBytes is the allocated memory the forward would have reached at the same point of the last layer;
	// CapacityBytes what PyTorch could have had (reserved plus the device's free memory).
	ProjectedBytes int64 `json:"projected_bytes"`
	CapacityBytes  int64 `json:"capacity_bytes"`
}

// What a layer count was read from (LayersEvidence).
const (
	LayersFromSetup      = "the setup's allocations"
	LayersFromLiveBlocks = "the blocks live before the trace began"
)

// LayersEvidence words how a layer count was read: from allocations that repeat a pattern of period tensors,
// bytes in all, reps times.
func LayersEvidence(from string, period, reps int, bytes int64) string {
	return fmt.Sprintf("%s repeat a pattern of %s, %s each, %d times", from, units.Plural(period, "tensor", "tensors"), units.Bytes(bytes), reps)
}

// Projection says where the step was heading: how many layers had passed the failing point, what each added, and
// the allocated memory the forward would hold at the same point of the last layer (the memory already live
// included), against what the device offered. Empty when the trace does not show the layers.
func (x OOMExplained) Projection() string {
	if x.Layers == 0 || x.PerLayerBytes == 0 {
		return ""
	}
	p := fmt.Sprintf("%d of %d layers had passed the failing point, adding %s each: by the last layer the forward alone would hold about %s allocated, %s beyond the %s the device offered",
		x.LayersDone, x.Layers, units.Bytes(x.PerLayerBytes), units.Bytes(x.ProjectedBytes), units.Bytes(x.ProjectedBytes-x.CapacityBytes), units.Bytes(x.CapacityBytes))
	if x.LayersEvidence != "" {
		p += fmt.Sprintf(" (%d layers: %s)", x.Layers, x.LayersEvidence)
	}
	return p
}

// Remedy is one change to a training configuration, or a combination of them, and what the static estimator
// predicts with it.
type Remedy struct {
	// Change says what changed, e.g. "micro_batch_size 8 -> 2 (4 accumulation steps)", the changes of a
	// combination joined by " + ".
	Change string `json:"change"`
	// PeakAllocatedBytes and PeakReservedBytes are the predicted peaks, DeviceBytes the predicted device total
	// (reserved plus the CUDA context).
	PeakAllocatedBytes int64 `json:"peak_allocated_bytes"`
	PeakReservedBytes  int64 `json:"peak_reserved_bytes"`
	DeviceBytes        int64 `json:"device_bytes"`
	Fits               bool  `json:"fits"`
	// AccumulatedGradientBytes is what a smaller micro-batch's gradient accumulation adds to the estimator's
	// peak: the gradients kept across micro-batches, live in the later ones' forward and backward (included in
	// the peaks above).
	AccumulatedGradientBytes int64 `json:"accumulated_gradient_bytes,omitempty"`
}

// Remedy changes, as the estimator tries them.
const (
	RemedyAsConfigured = "as configured"
	RemedyRecompute    = "recompute full (activation checkpointing)"
	RemedyChunkedLoss  = "loss chunked"
	RemedyExpandable   = "expandable_segments:True"
)

// RemedyMicroBatch names the change of the micro-batch from to, the global batch kept by steps accumulation
// steps.
func RemedyMicroBatch(from, to, steps int) string {
	return fmt.Sprintf("micro_batch_size %d -> %d (%d accumulation steps, the same global batch)", from, to, steps)
}

// ShardingMinSharePct: sharding (FSDP, ZeRO) divides the weights, gradients and optimizer state by the number of
// devices; when they are under a quarter of what was live at an OOM, sharding them away entirely saves less than
// the activations of a few layers, so it is not advised.
const ShardingMinSharePct = 25.0

// WithRemedies prefixes an OOM finding's advice with what the remedies tried against capacity say: the changes
// and combinations that fit, smallest change first (Remedies' order), or that none does; remedies[0] is the
// unchanged configuration. The finding then saves what the smallest fitting change saves at the step that failed.
func WithRemedies(f *Finding, remedies []Remedy, capacity int64) {
	var fit []string
	for _, rm := range remedies[1:] {
		if rm.Fits {
			if len(fit) == 0 {
				f.SavedBytes = max(remedies[0].PeakAllocatedBytes-rm.PeakAllocatedBytes, 0)
			}
			fit = append(fit, fmt.Sprintf("%s (predicted peak %s allocated, %s reserved)", rm.Change,
				units.Bytes(rm.PeakAllocatedBytes), units.Bytes(rm.PeakReservedBytes)))
		}
	}
	if len(fit) > 0 {
		f.Advice = "With the static configuration these fit " + units.Bytes(capacity) + ", smallest change first: " + strings.Join(fit, "; or ") + ". " + f.Advice
		return
	}
	f.Advice = "With the static configuration no change tried (expandable segments, a chunked loss, checkpointing, a smaller micro-batch with accumulation), alone or combined, fits " +
		units.Bytes(capacity) + ": shard across more devices or use one with more memory. " + f.Advice
}
