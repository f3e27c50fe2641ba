package findings

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/memscan/memscan/internal/units"
)

// Titles of the findings judged on a device trace.
const (
	titleOOM           = "Out of memory"
	titleLeak          = "Memory grows every iteration after warm-up"
	titleFragmentation = "Fragmented cache: reserved grows beyond the peak"
	titleCacheOverhead = "Reserved memory exceeds the peak allocated"
	titleIdleCache     = "Cached segments no later peak reuses"
	titleLossLogits    = "The logits and the loss's tensors hold much of the peak"
)

// Bases of a predicted value.
const (
	BasisReplay   = "allocator replay"
	BasisEstimate = "estimate"
	BasisLayers   = "layer extrapolation"
	// BasisTrace is a saving computed from the trace's own tensors (what they would hold under the change).
	BasisTrace = "trace"
)

// EventName names trace event j as reports print it: "event 12", or for −1 (the state the trace starts from,
// when nothing after it was higher) "the state before the first recorded event".
func EventName(j int) string {
	if j < 0 {
		return "the state before the first recorded event"
	}
	return "event " + strconv.Itoa(j)
}

// At is where in a device trace something was judged: the event, its iteration (1-based, 0: none) and phase, and
// how the report words that moment ("iteration 2 backward").
type At struct {
	Device, Event, Iteration int
	Phase, Text              string
}

// NewCacheOverhead words the maximum reserved memory against the peak allocated. fragmentation says whether the
// fragmentation finding explains the excess (this one then only points at it).
func NewCacheOverhead(maxReserved At, reserved int64, peak At, allocated int64, fragmentation bool) Finding {
	f := Finding{ID: CacheOverhead, Severity: Info, Title: titleCacheOverhead,
		Value: float64(reserved) / float64(allocated), Threshold: CacheOverheadRatio, Unit: Ratio,
		Device: maxReserved.Device, Event: maxReserved.Event, Iteration: maxReserved.Iteration, Phase: maxReserved.Phase,
		Evidence: fmt.Sprintf("maximum reserved %s (%s, %s) is %.2fx the peak allocated %s (%s, %s): %s reserved beyond what the peak needed",
			units.Bytes(reserved), EventName(maxReserved.Event), maxReserved.Text, float64(reserved)/float64(allocated), units.Bytes(allocated),
			EventName(peak.Event), peak.Text, units.Bytes(reserved-allocated)),
	}
	if fragmentation {
		f.Advice = "See the fragmentation finding: the excess is cached memory split into pieces the later requests could not use."
	} else {
		f.Advice = "The cache grew beyond the peak without fragmenting the peak itself; check the idle-cache finding, or cap the cache with PYTORCH_CUDA_ALLOC_CONF=garbage_collection_threshold:0.8 if other processes share the device."
	}
	return f
}

// Malloc is one segment a trace created (a cudaMalloc), the request it was made for and the cache just before it.
type Malloc struct {
	Event int
	Size  int64
	// Pool is "small" (2 MiB segments for requests up to 1 MiB) or "large".
	Pool string
	// Request is the bytes of the allocation the segment was made for (0: not seen), Category its category.
	Request  int64
	Category string
	// FreeBefore is reserved minus allocated just before the cudaMalloc; LargestBefore the largest free range
	// then, known (KnownLargest) only for the cudaMallocs that fragmentation caused.
	FreeBefore    int64
	LargestBefore int64
	KnownLargest  bool
	// Pinned is what the live blocks in segments holding free memory then were, by category: what kept the free
	// memory in pieces.
	Pinned []Share
}

// Describe says what the cudaMalloc was for, e.g. "a cudaMalloc of 1.0 GiB for the large pool, for a 1.0 GiB
// KV Cache request, made while the cache held 1.7 GiB free".
func (c Malloc) Describe() string {
	s := fmt.Sprintf("a cudaMalloc of %s for the %s pool", units.Bytes(c.Size), c.Pool)
	if c.Request > 0 {
		s += fmt.Sprintf(", for a %s", units.Bytes(c.Request))
		if c.Category != "" {
			s += " " + c.Category
		}
		s += " request"
	}
	s += fmt.Sprintf(", made while the cache held %s free", units.Bytes(c.FreeBefore))
	if c.KnownLargest {
		s += fmt.Sprintf(", the largest free range %s", units.Bytes(c.LargestBefore))
	}
	if len(c.Pinned) > 0 {
		s += "; the segments holding that free memory also held " + ShareList(c.Pinned, 4)
	}
	return s
}

// CacheState is the cache after one event: its segments, what they reserve, the free bytes between live blocks
// and the largest free range.
type CacheState struct {
	Segments                    int
	Reserved, Free, LargestFree int64
}

// FragmentationFacts is what the fragmentation detector measured.
type FragmentationFacts struct {
	// MaxReserved is where reserved memory peaked, at Reserved bytes; Peak where allocated memory did, at
	// Allocated bytes.
	MaxReserved At
	Reserved    int64
	Peak        At
	Allocated   int64
	// RaisedBy is the cudaMalloc that raised reserved to its maximum (nil when that event is none); LastFragmenting
	// the last large-pool cudaMalloc made while the cache held enough free memory in no range large enough, when
	// it is another event (nil otherwise).
	RaisedBy, LastFragmenting *Malloc
	// AtPeak is the cache at the allocated peak.
	AtPeak CacheState
	// WithExpandable is the peak reserved under expandable segments, obtained by Basis. With the allocator replay,
	// Replayed is the same replay's peak under the recorded settings (the saving is their difference, as the
	// report's replay section states it) and Partial why the replay could not follow the whole trace ("" when it
	// did); NotUsed says why the replay was not used, when it was not.
	WithExpandable, Replayed int64
	Basis, Partial, NotUsed  string
	// KVCache says a KV cache was among what held the free memory in pieces.
	KVCache bool
}

// Saving is what expandable segments would save at the maximum reserved: the allocator replay's two peaks when
// it ran, else the recorded maximum less the estimate.
func (f FragmentationFacts) Saving() int64 {
	if f.Basis == BasisReplay {
		return f.Replayed - f.WithExpandable
	}
	return f.Reserved - f.WithExpandable
}

// NewFragmentation words the fragmentation finding.
func NewFragmentation(f FragmentationFacts) Finding {
	saving := f.Saving()
	var why strings.Builder
	fmt.Fprintf(&why, "reserved reached its maximum of %s at %s (%s)", units.Bytes(f.Reserved), EventName(f.MaxReserved.Event), f.MaxReserved.Text)
	if f.RaisedBy != nil {
		fmt.Fprintf(&why, ": %s", f.RaisedBy.Describe())
	}
	pk := f.AtPeak
	fmt.Fprintf(&why, ". The allocated peak was %s (%s, %s), %s below it; then %s (%s reserved) held %s free, the largest free range %s",
		units.Bytes(f.Allocated), EventName(f.Peak.Event), f.Peak.Text, units.Bytes(f.Reserved-f.Allocated), units.Plural(pk.Segments, "segment", "segments"),
		units.Bytes(pk.Reserved), units.Bytes(pk.Free), units.Bytes(pk.LargestFree))
	if f.LastFragmenting != nil {
		fmt.Fprintf(&why, ". The last large-pool cudaMalloc made while the cache held enough free memory, but in no range large enough, was at event %d: %s",
			f.LastFragmenting.Event, f.LastFragmenting.Describe())
	}
	fmt.Fprintf(&why, ". With expandable segments reserved would peak at about %s (%s), saving %s of the %s", units.Bytes(f.WithExpandable), f.Basis,
		units.Bytes(saving), units.Bytes(f.Reserved-f.Allocated))
	if f.Partial != "" {
		fmt.Fprintf(&why, ". The replay is partial, so the saving covers the recorded part of the run: %s", f.Partial)
	}
	if f.NotUsed != "" {
		fmt.Fprintf(&why, ". The allocator replay was not used: %s", f.NotUsed)
	}
	at := f.MaxReserved
	return Finding{ID: Fragmentation, Severity: Warning, Title: titleFragmentation,
		Value: float64(saving), Threshold: float64(FragmentationMinSavingBytes), Unit: Bytes, Basis: f.Basis,
		Device: at.Device, Event: at.Event, Iteration: at.Iteration, Phase: at.Phase, Evidence: why.String(),
		Advice: fragmentationAdvice(f.KVCache, saving, f.Basis), SavedBytes: saving,
	}
}

// fragmentationAdvice fits the fix to what split the cache: a KV cache that grows by concatenation leaves its
// blocks among the transients' free memory, and preallocating it (once, for the longest sequence) keeps them out;
// otherwise the pieces come from shapes that change, which fixed shapes avoid. saving is what expandable segments
// would save, and basis how that was obtained.
func fragmentationAdvice(kvCache bool, saving int64, basis string) string {
	by := "by estimate"
	if basis == BasisReplay {
		by = "in the allocator replay"
	}
	exp := fmt.Sprintf("PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True, which saves %s %s: segments then grow in place, so blocks freed by one shape serve the next",
		units.Bytes(saving), by)
	if kvCache {
		return "Preallocate the KV cache for the longest sequence (a static cache, e.g. generate(..., cache_implementation=\"static\") in transformers): a dynamic cache grows by torch.cat at every step, leaving its blocks among the free memory larger requests need. Or set " + exp + "."
	}
	return "Set " + exp + "; or keep shapes fixed (pad or bucket sequence lengths)."
}

// NewIdleCache words segments still reserved at the end whose last use, at lastUse, was in a one-off phase: the
// memory is idle across iterations, so the finding names no iteration.
func NewIdleCache(lastUse At, segments int, idle int64) Finding {
	return Finding{ID: IdleCache, Severity: Info, Title: titleIdleCache,
		Value: float64(idle), Threshold: float64(IdleCacheMinBytes), Unit: Bytes, Device: lastUse.Device, Event: lastUse.Event,
		Phase: lastUse.Phase,
		Evidence: fmt.Sprintf("%s (%s) last used in the %s, up to event %d, stayed reserved and unused through every training iteration after it",
			units.Plural(segments, "segment", "segments"), units.Bytes(idle), lastUse.Text, lastUse.Event),
		Advice: fmt.Sprintf("Call torch.cuda.empty_cache() once after that one-off phase (checkpoint loading, evaluation), not every step: it returns %s that every later peak held reserved.",
			units.Bytes(idle)),
		SavedBytes: idle,
	}
}

// LeakSite is one site whose live bytes grew at the end of every iteration after the first.
type LeakSite struct {
	Site     string `json:"site"`
	Category string `json:"category"`
	// Iterations is how many complete iterations were compared; FirstBytes the site's live bytes at the end of
	// iteration 1 (after warm-up), LastBytes at the end of the last one, PerIteration the mean growth.
	Iterations   int   `json:"iterations"`
	FirstBytes   int64 `json:"first_bytes"`
	LastBytes    int64 `json:"last_bytes"`
	PerIteration int64 `json:"per_iteration_bytes"`
}

// NewLeak words the fastest-growing site l, judged at the end of the last complete iteration (at); warm is what
// iteration 1 created and every later iteration kept (not growth), sites how many sites grow, atPeak what the
// growing sites had gained since iteration 1 at the allocated peak (what a fix frees there).
func NewLeak(at At, l LeakSite, warm int64, sites int, atPeak int64) Finding {
	// A site without a stack is named "(no stack: category, lifetime)" already; a second parenthesis would nest.
	name := l.Site + " (" + l.Category + ")"
	if strings.HasPrefix(l.Site, "(") {
		name = "memory allocated without a stack " + l.Site
	}
	ev := fmt.Sprintf("%s holds %s more at the end of each iteration: %s after iteration 1, %s after iteration %d. Iteration 1's warm-up is not growth: %s created then and kept, such as optimizer state",
		name, units.Bytes(l.PerIteration), units.Bytes(l.FirstBytes), units.Bytes(l.LastBytes), l.Iterations, units.Bytes(warm))
	if sites > 1 {
		ev += fmt.Sprintf(". %d sites grow; this one fastest", sites)
	}
	return Finding{ID: Leak, Severity: Warning, Title: titleLeak,
		Value: float64(l.PerIteration), Threshold: float64(LeakMinGrowthBytes), Unit: Bytes, Device: at.Device,
		Event: at.Event, Iteration: at.Iteration, Phase: at.Phase, Evidence: ev,
		Advice: "Something keeps a reference to tensors from this site across steps: a list they are appended to, an attribute, a metric accumulated without .item()/.detach(), or outputs kept with their graph." +
			fmt.Sprintf(" Fixing it frees %s at the peak, what the growing sites had gained since iteration 1, and more the longer the run.", units.Bytes(atPeak)),
		SavedBytes: atPeak,
	}
}

// NewOOM words an out-of-memory event at at: a request of request bytes failed with deviceFree bytes free on the
// device; x is what was live and where the step was heading. expandableOn says the run already uses expandable
// segments (then they are not advised).
func NewOOM(at At, request, deviceFree int64, x OOMExplained, expandableOn bool) Finding {
	var ev strings.Builder
	fmt.Fprintf(&ev, "a request of %s failed in %s (event %d) with %s allocated, %s reserved and %s free on the device. Live by phase: %s; by category: %s",
		units.PyTorchBytes(request), at.Text, at.Event, units.Bytes(x.Live.Bytes), units.Bytes(x.ReservedBytes), units.PyTorchBytes(deviceFree),
		ShareList(x.Live.ByPhase, 4), ShareList(x.Live.ByCategory, 4))
	if x.Layers > 0 && x.PerLayerBytes > 0 {
		fmt.Fprintf(&ev, ". %s", x.Projection())
	}
	advice := "Cut what grows with the layers: activation checkpointing, a smaller micro-batch or sequence length."
	// Sharding divides only the model's state; where that is a small part of the failing step it cannot help.
	var state int64
	for _, c := range x.Live.ByComponent {
		if c.Name == "weights" || c.Name == "gradients" || c.Name == "optimizer" {
			state += c.Bytes
		}
	}
	if x.Live.Bytes > 0 && float64(state) >= ShardingMinSharePct/100*float64(x.Live.Bytes) {
		advice = "Cut what grows with the layers (activation checkpointing, a smaller micro-batch or sequence length), or shard the weights, gradients and optimizer state (FSDP/ZeRO): they hold " +
			units.Percent(state, x.Live.Bytes) + " of what was live."
	}
	if cached := x.ReservedBytes - x.Live.Bytes; cached >= request {
		fmt.Fprintf(&ev, ". The cache held %s free, more than the request, but in pieces too small", units.Bytes(cached))
		if !expandableOn {
			advice = "Set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True so the cached pieces can serve the request; " + advice
		}
	}
	return Finding{ID: OOM, Severity: Critical, Title: titleOOM,
		Value: float64(x.ProjectedBytes - x.CapacityBytes), Unit: Bytes, Device: at.Device, Event: at.Event, Iteration: at.Iteration,
		Phase: at.Phase, Evidence: ev.String(), Advice: advice, Basis: BasisLayers}
}

// ShareList renders the first n shares as "Activation 1.0 GiB, Weights 512.0 MiB", or "nothing".
func ShareList(ss []Share, n int) string {
	var parts []string
	for i, s := range ss {
		if i == n {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s", s.Name, units.Bytes(s.Bytes)))
	}
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

// LossFacts is what the loss-logits detector measured at the allocated peak.
type LossFacts struct {
	Peak      At
	PeakBytes int64
	// HeldBytes is what the Loss/Logits blocks held at the peak: the logits (LogitsBytes, made at LogitsSite), the
	// loss's own forward tensors (ForwardBytes: upcast, log-probabilities) and its gradients (GradientBytes).
	HeldBytes, LogitsBytes, ForwardBytes, GradientBytes int64
	LogitsSite                                          string
	// Tokens is how many tokens the loss ran over in the peak's iteration (0: the trace does not show it).
	Tokens int
	// NewPeakBytes is the highest allocated memory with those blocks held one chunk at a time.
	NewPeakBytes int64
}

// Saving is what the chunked loss saves at the peak.
func (f LossFacts) Saving() int64 { return f.PeakBytes - f.NewPeakBytes }

// NewLossLogits words the loss-logits finding: what the logits and the cross-entropy's tensors held at the peak,
// and what computing the loss a chunk at a time would save there.
func NewLossLogits(f LossFacts) Finding {
	var ev strings.Builder
	fmt.Fprintf(&ev, "at the peak (%s, %s) the logits and the cross-entropy's tensors held %s of the %s allocated (%s)",
		EventName(f.Peak.Event), f.Peak.Text, units.Bytes(f.HeldBytes), units.Bytes(f.PeakBytes), units.Percent(f.HeldBytes, f.PeakBytes))
	var parts []string
	if f.LogitsBytes > 0 {
		parts = append(parts, fmt.Sprintf("the logits %s (%s)", units.Bytes(f.LogitsBytes), f.LogitsSite))
	}
	if f.ForwardBytes > 0 {
		parts = append(parts, fmt.Sprintf("the loss's upcast and log-probabilities %s", units.Bytes(f.ForwardBytes)))
	}
	if f.GradientBytes > 0 {
		parts = append(parts, fmt.Sprintf("the loss's gradients %s", units.Bytes(f.GradientBytes)))
	}
	if len(parts) > 0 {
		ev.WriteString(": " + strings.Join(parts, ", "))
	}
	chunk := fmt.Sprintf("one of %d chunks", LossChunksUnknownTokens)
	if f.Tokens > 0 {
		chunk = fmt.Sprintf("%d of the %d tokens", min(f.Tokens, LossChunkTokens), f.Tokens)
	}
	fmt.Fprintf(&ev, ". A cross-entropy computed over %s at a time holds only that share of these tensors at once: the peak would be %s, %s lower",
		chunk, units.Bytes(f.NewPeakBytes), units.Bytes(f.Saving()))
	return Finding{ID: LossLogits, Severity: Warning, Title: titleLossLogits,
		Value: float64(f.Saving()), Threshold: float64(LossLogitsMinSavingBytes), Unit: Bytes, Basis: BasisTrace,
		Device: f.Peak.Device, Event: f.Peak.Event, Iteration: f.Peak.Iteration, Phase: f.Peak.Phase, Evidence: ev.String(),
		Advice: fmt.Sprintf("Compute the loss without materializing the full logits: a fused linear cross-entropy (Liger Kernel's LigerFusedLinearCrossEntropyLoss; for transformers models liger_kernel.transformers.apply_liger_kernel_to_llama and its kin, or TrainingArguments(use_liger_kernel=True)) or a chunked one (torchtune's CEWithChunkedOutputLoss). It saves about %s at the peak.",
			units.Bytes(f.Saving())),
		SavedBytes: f.Saving(),
	}
}

// WithLossEstimate adds to a loss-logits finding what the static estimator predicts the same change saves on the
// configuration given with --static: the peak allocated as configured less with training.loss chunked.
func WithLossEstimate(f *Finding, asConfigured, chunked int64) {
	f.Evidence += fmt.Sprintf(". With the static configuration the estimator predicts a peak of %s as configured and %s with training.loss: chunked, %s lower",
		units.Bytes(asConfigured), units.Bytes(chunked), units.Bytes(asConfigured-chunked))
}
