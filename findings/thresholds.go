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
)

// Severities.
const (
	SeverityCritical = "critical"
	SeverityWarning  = "warning"
	SeverityInfo     = "info"
)

// Units of Finding.Value and Threshold.
const (
	UnitBytes = "bytes"
	UnitRatio = "ratio"
)
