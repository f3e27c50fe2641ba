// Package snapshot holds the CUDA caching-allocator snapshot model (torch.cuda.memory._snapshot()) and its
// decoders: the streaming fast pickle decoder and the reference gopickle decoder side by side with their shared
// pre-scanner, and the JSON rendition of a snapshot. Every snapshot format from torch 1.13/2.0 to today decodes
// to the one model. Which format a file is, is decided by input.Sniff in load, never by the extension.
//
// It imports input (errors, the JSON stream) and gopickle; tracer builds on its Frame and Stack.
package snapshot

// Snapshot is one decoded CUDA caching-allocator snapshot (torch.cuda.memory._snapshot()).
type Snapshot struct {
	// Segments in the order the file lists them (sorted by address across devices in real files).
	Segments []Segment
	// DeviceTraces holds one trace per visible device, index = device ordinal; nil when the file has none
	// (a bare list of segments).
	DeviceTraces [][]TraceEntry
	// AllocatorSettings is nil before torch 2.3.
	AllocatorSettings *AllocatorSettings
	// ExternalAnnotations are record_function START/END marks (torch 2.5+).
	ExternalAnnotations []Annotation
	// HostSegments and HostTraces describe pinned host memory (opt-in, 2026).
	HostSegments []Segment
	HostTraces   [][]TraceEntry

	// BareList is true when the file held a bare list of segments (torch.cuda.memory_snapshot()).
	BareList bool
	// Protocol is the pickle protocol (2..5), 0 for JSON input.
	Protocol int
	// TorchFormat names the format generation inferred from the keys present, e.g. "2.0-history", "2.1+",
	// "2.3+", "2.5+", "2.8+", "2.10+", "list".
	TorchFormat string
}

// SegmentType is the allocator pool a segment came from.
type SegmentType string

const (
	SegmentLarge SegmentType = "large"
	SegmentSmall SegmentType = "small"
)

// PoolID identifies a memory pool; {0, 0} is the default pool, anything else a CUDA-graph or MemPool private pool.
type PoolID [2]int64

// Segment is one cudaMalloc (or one expandable-segment mapping) and the blocks carved out of it.
type Segment struct {
	Device        int
	Address       uint64
	TotalSize     int64 // bytes reserved; equals the sum of Blocks[*].Size in a consistent snapshot
	AllocatedSize int64 // sum of Size over active_allocated blocks, as recorded by the allocator
	ActiveSize    int64 // sum of Size over blocks not inactive
	RequestedSize int64 // sum of requested sizes over active blocks (0 before torch 2.0)
	Stream        uint64
	Type          SegmentType
	Pool          PoolID
	IsExpandable  bool
	// Stack is the stack of the cudaMalloc that created the segment; nil when none was recorded.
	Stack  *Stack
	Blocks []Block
}

// BlockState is the allocator state of a block.
type BlockState uint8

const (
	BlockInactive BlockState = iota
	BlockActiveAllocated
	BlockActivePendingFree
)

// String returns PyTorch's name for the state.
func (s BlockState) String() string {
	switch s {
	case BlockActiveAllocated:
		return "active_allocated"
	case BlockActivePendingFree:
		return "active_pending_free"
	default:
		return "inactive"
	}
}

// Active reports whether the block is in use (allocated or waiting for another stream to release it).
func (s BlockState) Active() bool { return s != BlockInactive }

// Block is a contiguous piece of a segment.
type Block struct {
	Address uint64 // computed cumulatively from the segment address when the file lacks it (before 2.1)
	Size    int64  // rounded bytes
	// RequestedSize is what the user asked for, resolved through PyTorch's fallback chain:
	// requested_size, then history[0].real_size, then size. Stale (meaningless) for inactive blocks.
	RequestedSize int64
	State         BlockState
	// Stack of the allocation that last used the block: frames, else history[0].frames; nil when none.
	Stack *Stack
	// History is the legacy (torch 1.13/2.0) per-block record, most recent first.
	History []History
}

// History is one legacy block-history entry (torch 1.13 and 2.0).
type History struct {
	Addr     uint64
	RealSize int64
	Stack    *Stack
}

// Frame is one stack frame.
type Frame struct {
	Filename string
	Line     int
	Name     string
}

// Stack is a call stack, innermost frame first. Lists that the pickle shares through its memo decode to one
// *Stack, so pointer identity can key caches (categorization, site grouping) without comparing frames.
type Stack struct {
	Frames []Frame
}

// Action is a trace-entry action. It is a small integer so that a TraceEntry stays compact (a trace holds
// millions of them); String returns PyTorch's name.
type Action uint8

const (
	// ActionOther is an action this version of memscan does not know; TraceEntry.ActionName returns the name
	// the file gave (kept in TraceEntry.Extra.OtherAction).
	ActionOther Action = iota
	ActionAlloc
	ActionFreeRequested
	ActionFreeCompleted
	ActionSegmentAlloc
	ActionSegmentFree
	ActionSegmentMap
	ActionSegmentUnmap
	ActionOOM
	ActionSnapshot
	ActionUserDefined
	ActionAnnotate
	numActions
)

var actionNames = [numActions]string{
	ActionOther:         "",
	ActionAlloc:         "alloc",
	ActionFreeRequested: "free_requested",
	ActionFreeCompleted: "free_completed",
	ActionSegmentAlloc:  "segment_alloc",
	ActionSegmentFree:   "segment_free",
	ActionSegmentMap:    "segment_map",
	ActionSegmentUnmap:  "segment_unmap",
	ActionOOM:           "oom",
	ActionSnapshot:      "snapshot",
	ActionUserDefined:   "user_defined",
	ActionAnnotate:      "annotate",
}

// String returns PyTorch's name for a known action and "" for ActionOther (whose name lives in the entry; use
// TraceEntry.ActionName).
func (a Action) String() string {
	if a < numActions {
		return actionNames[a]
	}
	return ""
}

// ParseAction maps PyTorch's name to an Action; ok is false (and the result ActionOther) for a name memscan
// does not know.
func ParseAction(name string) (a Action, ok bool) {
	for i := ActionAlloc; i < numActions; i++ {
		if actionNames[i] == name {
			return i, true
		}
	}
	return ActionOther, false
}

// TraceEntry is one allocator event from device_traces. It is 56 bytes: the fields nearly every event sets are
// inline, the rare ones sit behind Extra, which decoders intern so that equal extras share one allocation.
type TraceEntry struct {
	Addr uint64 // block or segment address; 0 for oom and snapshot
	// Size: requested bytes for alloc/free, segment bytes for segment_*, requested bytes for oom,
	// total allocated for snapshot.
	Size   int64
	Stream uint64
	TimeUS int64 // Unix epoch microseconds; valid when HasTime
	Stack  *Stack
	// Extra holds the rarely-set fields; nil when they are all empty.
	Extra   *TraceExtra
	Action  Action
	HasTime bool
}

// TraceExtra holds the fields of a trace entry that most events leave empty, exactly as the file gave them.
type TraceExtra struct {
	OtherAction      string // the action's name when Action is ActionOther
	CompileContext   string
	UserMetadata     string
	InternalMetadata string
	Category         string // only in snapshots synthesised by profile_plot
	Pool             PoolID
	DeviceFree       int64 // oom only: bytes cudaMemGetInfo reported free
}

// noExtra is what the Extra accessors read when an entry has no Extra: every field empty.
var noExtra TraceExtra

// extra returns e.Extra, or the empty noExtra when it is nil.
func (e TraceEntry) extra() *TraceExtra {
	if e.Extra == nil {
		return &noExtra
	}
	return e.Extra
}

// ActionName returns the action's name as the file wrote it.
func (e TraceEntry) ActionName() string {
	if e.Action == ActionOther {
		return e.extra().OtherAction
	}
	return e.Action.String()
}

// CompileContext returns the entry's compile_context, "" when absent.
func (e TraceEntry) CompileContext() string { return e.extra().CompileContext }

// UserMetadata returns the entry's user_metadata, "" when absent.
func (e TraceEntry) UserMetadata() string { return e.extra().UserMetadata }

// InternalMetadata returns the entry's internal_metadata, "" when absent.
func (e TraceEntry) InternalMetadata() string { return e.extra().InternalMetadata }

// Category returns the entry's category, "" when absent.
func (e TraceEntry) Category() string { return e.extra().Category }

// DeviceFree returns what cudaMemGetInfo reported free at an oom, 0 when absent.
func (e TraceEntry) DeviceFree() int64 { return e.extra().DeviceFree }

// Pool returns the entry's pool_id, {0, 0} when absent.
func (e TraceEntry) Pool() PoolID { return e.extra().Pool }

// SetAction sets Action from a name, keeping an unknown name in Extra (through in, which may be nil).
func (e *TraceEntry) SetAction(name string, in *ExtraInterner) {
	a, ok := ParseAction(name)
	e.Action = a
	if !ok && name != "" {
		x := TraceExtra{}
		if e.Extra != nil {
			x = *e.Extra
		}
		x.OtherAction = name
		e.Extra = in.Intern(x)
	}
}

// ExtraInterner shares one *TraceExtra among entries with equal extras: a trace of millions of events carries
// a handful of distinct compile contexts and metadata strings. The zero value is ready to use; a nil
// *ExtraInterner still works but shares nothing.
type ExtraInterner struct {
	m    map[TraceExtra]*TraceExtra
	last *TraceExtra // the previous result: neighbouring events usually carry the same extras
}

// Intern returns the shared pointer for x, nil when x is all zero.
func (in *ExtraInterner) Intern(x TraceExtra) *TraceExtra {
	if x == (TraceExtra{}) {
		return nil
	}
	if in != nil {
		if in.last != nil && *in.last == x {
			return in.last
		}
		if q, ok := in.m[x]; ok {
			in.last = q
			return q
		}
	}
	// A fresh copy only when one is kept, so that x itself does not escape: entries call this millions of times.
	p := new(TraceExtra)
	*p = x
	if in == nil {
		return p
	}
	if in.m == nil {
		in.m = make(map[TraceExtra]*TraceExtra)
	}
	in.m[x] = p
	in.last = p
	return p
}

// AllocatorSettings is the allocator configuration recorded since torch 2.3.
type AllocatorSettings struct {
	AllocConf                     string            `json:"PYTORCH_CUDA_ALLOC_CONF"`
	MaxSplitSize                  int64             `json:"max_split_size"`
	GarbageCollectionThreshold    float64           `json:"garbage_collection_threshold"`
	ExpandableSegments            bool              `json:"expandable_segments"`
	PinnedNumRegisterThreads      int64             `json:"pinned_num_register_threads"`
	ReleaseLockOnCudaMalloc       bool              `json:"release_lock_on_cudamalloc"`
	PinnedUseCudaHostRegister     bool              `json:"pinned_use_cuda_host_register"`
	GraphCaptureRecordStreamReuse bool              `json:"graph_capture_record_stream_reuse"`
	RoundupPower2Divisions        map[string]int64  `json:"roundup_power2_divisions,omitempty"`
	Other                         map[string]string `json:"other,omitempty"` // unknown keys, rendered as text
}

// Annotation is one external_annotations entry (a record_function START or END mark).
type Annotation struct {
	Stage  string // "START" or "END"
	Name   string
	Device int
	TimeUS int64
	Extra  map[string]string
}
