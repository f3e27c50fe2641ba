package findings

// Thresholds of every detector, in one place, each with the reason for its value.
const (
	// CacheOverheadRatio: reserved memory up to 10 % above the peak allocated is the caching allocator doing its
	// job (block rounding, 2 MiB small-pool segments, 20 MiB large-pool segments, the split remainders of the
	// peak's own allocations); a healthy fixed-shape training run on an H200 reserves 1.10x its peak. Beyond that
	// the cache holds memory the peak never needed, so cache-overhead, fragmentation and empty_cache advice start
	// here and never below.
	CacheOverheadRatio = 1.10
	// CacheOverheadMinBytes: below 256 MiB beyond the peak no setting is worth changing, whatever the ratio
	// (small models reserve a few segments more than they need).
	CacheOverheadMinBytes int64 = 256 << 20

	// FragmentationMinSavingBytes: expandable segments are only advised when they would save at least 512 MiB at
	// the peak, about one large activation of a 1B-parameter model; less is within what the next run's shapes move.
	FragmentationMinSavingBytes int64 = 512 << 20

	// IdleCacheMinBytes: torch.cuda.empty_cache() costs a device synchronisation and a cudaMalloc for every segment
	// needed again; it is only advised for at least 1 GiB of segments that no allocation touched during at least
	// IdleCacheMinIterations whole iterations before the trace ended.
	IdleCacheMinBytes      int64 = 1 << 30
	IdleCacheMinIterations       = 1

	// LeakMinIterations: iteration 1 is warm-up (optimizer state, lazy buffers, cuDNN/cuBLAS workspaces and
	// caches appear there and stay); growth must then continue over at least two more iterations, so three
	// complete iterations are needed before anything is called a leak.
	LeakMinIterations = 3
	// LeakMinGrowthBytes: a site must grow by at least 1 MiB in every iteration after the warm-up; allocator-level
	// noise (a few KiB of scalars, RNG state) never does.
	LeakMinGrowthBytes int64 = 1 << 20

	// OOMExtrapolateMinLayers: projecting the step's peak needs the per-layer growth between two completed layers.
	OOMExtrapolateMinLayers = 2

	// LossLogitsMinSavingBytes: a chunked or fused linear cross-entropy is advised when it would lower the peak by
	// at least 512 MiB, the bar expandable segments meet (FragmentationMinSavingBytes): the change costs a
	// dependency or a loss rewrite.
	LossLogitsMinSavingBytes = FragmentationMinSavingBytes
	// LossChunkTokens: the chunk a chunked loss computes at a time, as the estimator's chunked loss assumes
	// (memscan static, training.loss_chunk_tokens' default); LossChunksUnknownTokens the chunks assumed when the
	// trace does not show the number of tokens (torchtune's CEWithChunkedOutputLoss default of 8).
	LossChunkTokens         = 1024
	LossChunksUnknownTokens = 8
)

// Thresholds of the checks made on the state at the dump: only a snapshot without allocation history is judged
// on the cache there (overhead, large unused blocks, fragmentation); the layout checks run on every snapshot.
const (
	// DumpCacheOverheadPct: reserved memory not holding requested bytes, % of reserved (fires above); a healthy
	// cache holds rounding and a segment's split remainders, about a tenth.
	DumpCacheOverheadPct = 10.0
	// LargeFreeBlockBytes: a cached free block from 100 MiB is a large unused block (about one activation of a
	// 1B-parameter model); fires with any.
	LargeFreeBlockBytes int64 = 100 << 20
	// DumpFragmentationPct: cached free memory outside the largest free block, % of cached free (fires above),
	// considered only when cached free memory is at least DumpFragmentationMinCachedPct of reserved.
	DumpFragmentationPct          = 50.0
	DumpFragmentationMinCachedPct = 10.0
	// PendingFreePct: bytes in active_pending_free blocks, % of reserved (fires at or above): record_stream holds
	// them until the other stream's work ends, and a percent is already a large buffer.
	PendingFreePct = 1.0
	// SmallPoolSegmentsMax: number of 2 MiB small-pool segments (fires above); 100 is 200 MiB of tensors under 1 MiB.
	SmallPoolSegmentsMax = 100
	// RoundingWastePct: size − requested of live blocks, % of reserved (fires above).
	RoundingWastePct = 5.0
	// PrivatePoolPct: reserved bytes in non-default pools (CUDA graphs, MemPool), % of reserved (fires above).
	PrivatePoolPct = 10.0
	// MinHistoryEvents: a device trace needs an allocation and its free, two events, to hold any history; with
	// fewer on every device the detectors judge the dump instead of the peak, and no-allocation-history fires
	// (below) to say how to record one.
	MinHistoryEvents = 2
)

// Thresholds of the comparisons across inputs and ranks.
const (
	// OutlierPct: an input (or rank) reserving more than this % above the median of its iteration is an outlier,
	// and the largest such gap is a rank imbalance; 10 % is beyond what the same program's ranks differ by.
	OutlierPct = 10.0
	// LeakAcrossIterationsMinSnapshots and LeakAcrossIterationsMinGrowthBytes: a rank's allocated memory must rise
	// without dropping over at least as many snapshots, and by at least as much, as the trace's own leak detector
	// asks of iterations and of a site.
	LeakAcrossIterationsMinSnapshots         = LeakMinIterations
	LeakAcrossIterationsMinGrowthBytes int64 = LeakMinGrowthBytes
	// MixedIterationsMax: summaries of more than one iteration are not ranks of one step.
	MixedIterationsMax = 1
	// PipelineStageSkewRatio: the first stage's mean reserved above 1.25x the last stage's; 1F1B keeps up to
	// (stages) micro-batches in flight on the first stage and one on the last.
	PipelineStageSkewRatio = 1.25
	// RankOOMMin: any rank with an OOM event.
	RankOOMMin = 0
	// MixedRunsMax: one rank of one iteration from more than one run is two jobs merged as one.
	MixedRunsMax = 1
	// DuplicateRanksMin, MissingRanksMin: any rank given twice is counted twice in every statistic; any rank
	// missing is a rank the statistics do not cover.
	DuplicateRanksMin = 0
	MissingRanksMin   = 0
)

// Thresholds of the checks on training-log memory lines.
const (
	// LogNearCapacityPct: peak reserved at or above 90 % of the device: a few percent more batch or sequence length
	// is an OOM.
	LogNearCapacityPct = 90.0
	// LogReservedSlackPct: cache at or above 20 % of peak reserved.
	LogReservedSlackPct = 20.0
	// LogRankImbalancePct: max reserved at or above 10 % over the median of the ranks (as OutlierPct).
	LogRankImbalancePct = 10.0
)

// Thresholds of the checks on memory-tracer files.
const (
	// TracerUnlistedPeakPct: the peak not in the tensor list, at or above 10 % of the peak.
	TracerUnlistedPeakPct = 10.0
	// TracerUnknownModulePct: listed memory created outside any module forward, at or above 50 % of listed.
	TracerUnknownModulePct = 50.0
)
