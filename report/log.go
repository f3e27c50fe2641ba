package report

// LogView is the analysis of the memory lines of one training log: runtime measurements per rank and iteration.
type LogView struct {
	Dialect string `json:"dialect" msgpack:"dialect"` // "megatron", "deepspeed", "torchtitan"
	Lines   int    `json:"lines" msgpack:"lines"`
	Records int    `json:"records" msgpack:"records"`
	// SkippedLines are lines longer than the reader's limit.
	SkippedLines int          `json:"skipped_lines" msgpack:"skipped_lines"`
	Ranks        []LogRankRow `json:"ranks" msgpack:"ranks"`
	// Peaks over the whole log (bytes, -1 when the dialect does not print the measure), and where they were.
	PeakAllocatedBytes int64 `json:"peak_allocated_bytes" msgpack:"peak_allocated_bytes"`
	PeakReservedBytes  int64 `json:"peak_reserved_bytes" msgpack:"peak_reserved_bytes"`
	PeakRank           int   `json:"peak_rank" msgpack:"peak_rank"`
	PeakIteration      int   `json:"peak_iteration" msgpack:"peak_iteration"`
	// PeakAllocatedRank/Iteration say where allocated memory peaked, which can differ from where reserved did
	// (PeakRank/PeakIteration follow reserved, or allocated when the log prints no reserved measure).
	PeakAllocatedRank      int `json:"peak_allocated_rank" msgpack:"peak_allocated_rank"`
	PeakAllocatedIteration int `json:"peak_allocated_iteration" msgpack:"peak_allocated_iteration"`
	// ReservedImbalancePct is (max/median − 1) × 100 of the per-rank peak reserved bytes (0 for one rank).
	ReservedImbalancePct float64 `json:"reserved_imbalance_pct" msgpack:"reserved_imbalance_pct"`
	// Theoretical is Megatron's last static estimate line; TheoryGapPct compares the measured peak allocated
	// with its total (or with weight and optimizer when no total is printed): (measured/theory − 1) × 100.
	Theoretical  *LogTheoretical `json:"theoretical,omitempty" msgpack:"theoretical,omitempty"`
	TheoryGapPct *float64        `json:"theory_gap_pct,omitempty" msgpack:"theory_gap_pct,omitempty"`
	// CapacityBytes is the device capacity when the log states it (torchtitan).
	CapacityBytes int64  `json:"capacity_bytes,omitempty" msgpack:"capacity_bytes,omitempty"`
	DeviceName    string `json:"device_name,omitempty" msgpack:"device_name,omitempty"`
	// Series holds every record per rank for plotting; not in summary.json.
	Series []LogSeries `json:"-" msgpack:"series,omitempty"`
}

// LogRankRow summarizes one rank's memory lines.
type LogRankRow struct {
	Rank           int   `json:"rank" msgpack:"rank"` // -1: lines without a rank
	Records        int   `json:"records" msgpack:"records"`
	FirstIteration int   `json:"first_iteration" msgpack:"first_iteration"`
	LastIteration  int   `json:"last_iteration" msgpack:"last_iteration"`
	MaxAllocated   int64 `json:"max_allocated_bytes" msgpack:"max_allocated_bytes"`
	MaxReserved    int64 `json:"max_reserved_bytes" msgpack:"max_reserved_bytes"`
	// Byte fields are -1 when the dialect does not print the measure (torchtitan prints only peak reserved).
	LastAllocated int64 `json:"last_allocated_bytes" msgpack:"last_allocated_bytes"`
	LastReserved  int64 `json:"last_reserved_bytes" msgpack:"last_reserved_bytes"`
}

// LogSeries is one rank's records in file order; X is the iteration when every record has one, else the record
// index. Byte slices hold -1 where a record lacks the measure.
type LogSeries struct {
	Rank         int     `msgpack:"rank"`
	X            []int   `msgpack:"x"`
	XIsIteration bool    `msgpack:"x_is_iteration"`
	Allocated    []int64 `msgpack:"allocated"`
	MaxAllocated []int64 `msgpack:"max_allocated"`
	Reserved     []int64 `msgpack:"reserved"`
	MaxReserved  []int64 `msgpack:"max_reserved"`
}

// LogTheoretical is the memory a Megatron log's theoretical-memory line predicted (trainlog.Theoretical, as the
// report's contract keeps it); −1 where the line gave no such figure.
type LogTheoretical struct {
	Line                   int
	Rank                   int
	WeightAndOptimizerByte int64
	ActivationBytes        int64
	TotalBytes             int64
}
