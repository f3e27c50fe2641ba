package report

// TracerView is the analysis of one memory-tracer peak snapshot.
type TracerView struct {
	Rank int `json:"rank" msgpack:"rank"`
	// Device is the primary device: the CUDA device with the highest peak (else the first device). Its numbers
	// are also at the top level of the report (peak_bytes, listed_bytes, phases, modules).
	Device  string             `json:"device" msgpack:"device"`
	Devices []TracerDeviceView `json:"devices" msgpack:"devices"`
}

// Primary returns the view of the primary device, nil when the file had no device.
func (v *TracerView) Primary() *TracerDeviceView {
	for i := range v.Devices {
		if v.Devices[i].Device == v.Device {
			return &v.Devices[i]
		}
	}
	return nil
}

// TracerDeviceView is everything memscan derives from one device entry of a tracer file.
type TracerDeviceView struct {
	Device string `json:"device" msgpack:"device"`
	// PeakBytes is peak_memory_mb in bytes; ListedBytes the sum of the listed tensors; GapBytes the difference
	// (peak − listed), which the file cannot attribute. GapExplanation says why it exists.
	PeakBytes      int64  `json:"peak_bytes" msgpack:"peak_bytes"`
	ListedBytes    int64  `json:"listed_bytes" msgpack:"listed_bytes"`
	GapBytes       int64  `json:"gap_bytes" msgpack:"gap_bytes"`
	GapExplanation string `json:"gap_explanation" msgpack:"gap_explanation"`
	Tensors        int    `json:"tensors" msgpack:"tensors"`
	// SmallestListedBytes is the smallest listed tensor; when it is at least 1 MiB the file was almost
	// certainly saved with min_memory_mb ≥ 1 (the Megatron integration passes 1), so smaller tensors are missing.
	SmallestListedBytes int64 `json:"smallest_listed_bytes" msgpack:"smallest_listed_bytes"`
	// InferredMinMemoryMB is the largest whole MiB filter consistent with the listed sizes (0: no filter seen).
	InferredMinMemoryMB int `json:"inferred_min_memory_mb" msgpack:"inferred_min_memory_mb"`
	// ReleasedTensors counts listed tensors that also carry a release stack (freed later in the run).
	ReleasedTensors int `json:"released_tensors" msgpack:"released_tensors"`

	Phases     []PhaseStat        `json:"phases" msgpack:"phases"`
	Modules    []ModuleStat       `json:"modules" msgpack:"modules"`
	ModuleTree []ModuleNode       `json:"module_tree" msgpack:"module_tree"`
	Categories []CategoryStat     `json:"categories" msgpack:"categories"`
	Sites      []TracerSite       `json:"sites" msgpack:"sites"`
	Stacks     []TracerStackGroup `json:"stacks" msgpack:"stacks"`
	Top        []TracerTensorRow  `json:"top" msgpack:"top"`
}

// PhaseStat is the bytes and tensor count created in one phase (of those alive at the peak).
type PhaseStat struct {
	Name     string  `json:"name" msgpack:"name"`
	Bytes    int64   `json:"bytes" msgpack:"bytes"`
	Count    int     `json:"count" msgpack:"count"`
	SharePct float64 `json:"share_pct" msgpack:"share_pct"` // of listed bytes
}

// ModuleStat is one merged module pattern: module paths that differ only in numeric components
// (layers.0.mlp, layers.1.mlp → layers.*.mlp) are one pattern. Count is tensors; MergedModules the number of
// distinct module paths merged into the pattern. Tensors without a module are the pattern "Unknown".
type ModuleStat struct {
	Pattern       string  `json:"pattern" msgpack:"pattern"`
	Bytes         int64   `json:"bytes" msgpack:"bytes"`
	Count         int     `json:"count" msgpack:"count"`
	MergedModules int     `json:"merged_modules" msgpack:"merged_modules"`
	SharePct      float64 `json:"share_pct" msgpack:"share_pct"` // of listed bytes
}

// ModuleNode is one node of the merged module hierarchy; Bytes and Count include every descendant, OwnBytes only
// tensors attributed to exactly this path. Nodes are in depth-first order, children largest first.
type ModuleNode struct {
	Pattern       string `json:"pattern" msgpack:"pattern"`
	Name          string `json:"name" msgpack:"name"` // the last path component
	Depth         int    `json:"depth" msgpack:"depth"`
	Bytes         int64  `json:"bytes" msgpack:"bytes"`
	OwnBytes      int64  `json:"own_bytes" msgpack:"own_bytes"`
	Count         int    `json:"count" msgpack:"count"`
	MergedModules int    `json:"merged_modules" msgpack:"merged_modules"`
}

// TracerSite is memory grouped by creation site: the innermost frame of user or library code that asked for the
// storage, below the tracer's own frames and torch's op plumbing.
type TracerSite struct {
	Site     string   `json:"site" msgpack:"site"` // file:line:function
	Code     string   `json:"code,omitempty" msgpack:"code,omitempty"`
	Category string   `json:"category" msgpack:"category"`
	Bytes    int64    `json:"bytes" msgpack:"bytes"`
	Count    int      `json:"count" msgpack:"count"`
	Phases   []string `json:"phases" msgpack:"phases"`
}

// TracerStackGroup groups tensors whose whole creation stack (tracer frames removed) is identical.
type TracerStackGroup struct {
	Frames []string `json:"frames" msgpack:"frames"` // innermost first, file:line:function
	Bytes  int64    `json:"bytes" msgpack:"bytes"`
	Count  int      `json:"count" msgpack:"count"`
}

// TracerTensorRow is one of the largest tensors.
type TracerTensorRow struct {
	Bytes     int64   `json:"bytes" msgpack:"bytes"`
	Shape     string  `json:"shape" msgpack:"shape"` // "[4096, 1, 2048]", or the file's text when unparsable
	Dims      []int64 `json:"dims,omitempty" msgpack:"dims,omitempty"`
	ElemBytes int     `json:"elem_bytes,omitempty" msgpack:"elem_bytes,omitempty"` // inferred; 0 unknown
	Module    string  `json:"module" msgpack:"module"`
	Pattern   string  `json:"pattern" msgpack:"pattern"`
	Phase     string  `json:"phase" msgpack:"phase"`
	Category  string  `json:"category" msgpack:"category"`
	Rule      string  `json:"rule,omitempty" msgpack:"rule,omitempty"`
	Site      string  `json:"site" msgpack:"site"`
	Code      string  `json:"code,omitempty" msgpack:"code,omitempty"`
	Released  bool    `json:"released" msgpack:"released"`
}

// UnknownModule is the module group of tensors created outside any module forward.
const UnknownModule = "Unknown"

// TracerCross compares tracer inputs (one file per simulated rank): a per-rank table, per-module and per-phase
// bytes across ranks (which pipeline stage holds what), and the peak imbalance.
type TracerCross struct {
	Ranks   []TracerRankRow      `json:"ranks" msgpack:"ranks"`
	Modules []TracerModuleAcross `json:"modules" msgpack:"modules"`
	Phases  []TracerPhaseAcross  `json:"phases" msgpack:"phases"`
	// Peak statistics over ranks. ImbalancePct is (max/median − 1) × 100 of the peaks.
	MaxPeakBytes    int64   `json:"max_peak_bytes" msgpack:"max_peak_bytes"`
	MinPeakBytes    int64   `json:"min_peak_bytes" msgpack:"min_peak_bytes"`
	MedianPeakBytes int64   `json:"median_peak_bytes" msgpack:"median_peak_bytes"`
	MaxPeakRank     int     `json:"max_peak_rank" msgpack:"max_peak_rank"`
	MaxPeakFile     string  `json:"max_peak_file" msgpack:"max_peak_file"`
	ImbalancePct    float64 `json:"imbalance_pct" msgpack:"imbalance_pct"`
}

// TracerRankRow is one tracer input in the cross-rank table.
type TracerRankRow struct {
	File        string  `json:"file" msgpack:"file"`
	Rank        int     `json:"rank" msgpack:"rank"`
	Device      string  `json:"device" msgpack:"device"`
	PeakBytes   int64   `json:"peak_bytes" msgpack:"peak_bytes"`
	ListedBytes int64   `json:"listed_bytes" msgpack:"listed_bytes"`
	GapBytes    int64   `json:"gap_bytes" msgpack:"gap_bytes"`
	Tensors     int     `json:"tensors" msgpack:"tensors"`
	VsMedianPct float64 `json:"vs_median_pct" msgpack:"vs_median_pct"` // (peak/median − 1) × 100
}

// TracerModuleAcross is one merged module pattern's bytes on every rank, in the order of TracerCross.Ranks.
type TracerModuleAcross struct {
	Pattern     string  `json:"pattern" msgpack:"pattern"`
	Bytes       []int64 `json:"bytes" msgpack:"bytes"`
	MaxBytes    int64   `json:"max_bytes" msgpack:"max_bytes"`
	MinBytes    int64   `json:"min_bytes" msgpack:"min_bytes"`
	SpreadBytes int64   `json:"spread_bytes" msgpack:"spread_bytes"` // max − min
}

// TracerPhaseAcross is one phase's bytes on every rank, in the order of TracerCross.Ranks.
type TracerPhaseAcross struct {
	Name  string  `json:"name" msgpack:"name"`
	Bytes []int64 `json:"bytes" msgpack:"bytes"`
}
