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
	// TraceStacks are the stacks the trace entries name (TraceEntry.Stack), device and host traces alike, each
	// once; TraceExtras their rarely-set fields (TraceEntry.Extra). Index 0 of each stands for none: nil and
	// all empty. Both are nil when no entry names one. TraceStreams are the entries' CUDA streams
	// (TraceEntry.Stream), index 0 the default stream 0; nil when every entry is on stream 0.
	TraceStacks  []*Stack
	TraceExtras  []TraceExtra
	TraceStreams []uint64

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

// TraceEntry is one allocator event from device_traces. It is 40 bytes and holds no pointer: the fields nearly
// every event sets are inline, its stack, its stream and its rarely-set fields are indices into its snapshot's
// TraceStacks, TraceStreams and TraceExtras (Snapshot.EntryStack, EntryStream, EntryExtra), so that the collector
// never traces a trace of millions of events, and a trace takes less than its file.
type TraceEntry struct {
	Addr uint64 // block or segment address; 0 for oom and snapshot
	// Size: requested bytes for alloc/free, segment bytes for segment_*, requested bytes for oom,
	// total allocated for snapshot.
	Size   int64
	TimeUS int64 // Unix epoch microseconds; valid when HasTime
	// Stack indexes the snapshot's TraceStacks; 0 when the event has none.
	Stack StackRef
	// Extra indexes the snapshot's TraceExtras; 0 when the rarely-set fields are all empty.
	Extra ExtraRef
	// Stream indexes the snapshot's TraceStreams; 0 for stream 0. A process uses a handful of streams, each named by
	// a 64-bit handle: an index keeps the entry at 40 bytes.
	Stream  StreamRef
	Action  Action
	HasTime bool
}

// StackRef is a trace entry's stack: an index into Snapshot.TraceStacks, 0 for none.
type StackRef int32

// ExtraRef is a trace entry's rarely-set fields: an index into Snapshot.TraceExtras, 0 for none.
type ExtraRef int32

// StreamRef is a trace entry's CUDA stream: an index into Snapshot.TraceStreams, 0 for stream 0.
type StreamRef int32

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

// empty reports whether every field of x is empty. Extra asks it of every trace entry: field by field it is
// inlined, where a comparison with the zero struct calls the generated equality (7 % of the training loop's decode
// profile).
func (x *TraceExtra) empty() bool {
	return x.OtherAction == "" && x.CompileContext == "" && x.UserMetadata == "" && x.InternalMetadata == "" &&
		x.Category == "" && x.Pool == PoolID{} && x.DeviceFree == 0
}

// noExtra is what EntryExtra returns for an entry without extras: every field empty.
var noExtra TraceExtra

// EntryStack returns the stack of trace entry e of s, nil when it has none.
func (s *Snapshot) EntryStack(e *TraceEntry) *Stack { return StackOf(s.TraceStacks, e) }

// StackOf returns the stack of trace entry e from stacks, its snapshot's TraceStacks (for a caller that holds the
// table, not the snapshot); nil when it has none.
func StackOf(stacks []*Stack, e *TraceEntry) *Stack {
	if i := int(e.Stack); i > 0 && i < len(stacks) {
		return stacks[i]
	}
	return nil
}

// EntryExtra returns the rarely-set fields of trace entry e of s, all empty when it has none. The result is
// shared: do not change it.
func (s *Snapshot) EntryExtra(e *TraceEntry) *TraceExtra { return ExtraOf(s.TraceExtras, e) }

// ExtraOf returns the rarely-set fields of trace entry e from extras, its snapshot's TraceExtras (for a caller
// that holds the table, not the snapshot); all empty when it has none.
func ExtraOf(extras []TraceExtra, e *TraceEntry) *TraceExtra {
	if i := int(e.Extra); i > 0 && i < len(extras) {
		return &extras[i]
	}
	return &noExtra
}

// EntryStream returns the CUDA stream handle of trace entry e of s.
func (s *Snapshot) EntryStream(e *TraceEntry) uint64 { return StreamOf(s.TraceStreams, e) }

// StreamOf returns the stream handle of trace entry e from streams, its snapshot's TraceStreams (for a caller that
// holds the table, not the snapshot); 0 for index 0 or one outside the table.
func StreamOf(streams []uint64, e *TraceEntry) uint64 {
	if i := int(e.Stream); i > 0 && i < len(streams) {
		return streams[i]
	}
	return 0
}

// ActionName returns the name of trace entry e's action as the file wrote it.
func (s *Snapshot) ActionName(e *TraceEntry) string {
	if e.Action == ActionOther {
		return s.EntryExtra(e).OtherAction
	}
	return e.Action.String()
}

// TraceTables adds the stacks, streams and extras that trace entries name to a snapshot's TraceStacks,
// TraceStreams and TraceExtras, each once: a trace of millions of events carries far fewer distinct stacks, and a
// handful of distinct streams and extras.
type TraceTables struct {
	s       *Snapshot
	stacks  refTable[*Stack, StackRef]
	extras  refTable[TraceExtra, ExtraRef]
	streams refTable[uint64, StreamRef]
	// overflow is set when a table was full (maxTableRefs) and an entry got 0 instead: the decoders then fail.
	overflow bool
}

// refTable numbers the distinct values of one of a snapshot's trace tables, whose index 0 stands for the zero
// value. last is the previous result: neighbouring events usually carry the same extras and stream.
type refTable[K comparable, R ~int32] struct {
	index map[K]R
	last  R
}

// NewTraceTables returns the tables of s, knowing what they hold already. A table is created with its first
// entry (after the 0 that stands for none), so a snapshot whose entries name none keeps nil tables.
func NewTraceTables(s *Snapshot) *TraceTables {
	return &TraceTables{s: s, stacks: indexed[*Stack, StackRef](s.TraceStacks), extras: indexed[TraceExtra, ExtraRef](s.TraceExtras),
		streams: indexed[uint64, StreamRef](s.TraceStreams)}
}

// indexed returns the numbering of the values table holds (the first index of each, the zero value left out).
func indexed[K comparable, R ~int32](table []K) refTable[K, R] {
	t := refTable[K, R]{index: make(map[K]R, len(table))}
	var zero K
	for i, k := range table {
		if _, ok := t.index[k]; !ok && i > 0 && k != zero {
			t.index[k] = R(i)
		}
	}
	return t
}

// maxTableRefs bounds each table: its indices are int32.
const maxTableRefs = 1<<31 - 1

// ref returns the index of k in *table, adding it when new; 0 for the zero value, and for a new value once the
// table holds maxTableRefs (no file within memory names as many; the decoders fail on it, told by overflow).
func (t *refTable[K, R]) ref(table *[]K, k K, overflow *bool) R {
	var zero K
	if k == zero {
		return 0
	}
	if t.last > 0 && (*table)[t.last] == k {
		return t.last
	}
	r, ok := t.index[k]
	if !ok {
		if len(*table) >= maxTableRefs {
			*overflow = true
			return 0
		}
		if len(*table) == 0 {
			*table = []K{zero}
		}
		r = R(len(*table))
		*table = append(*table, k)
		t.index[k] = r
	}
	t.last = r
	return r
}

// Stack returns the index of st in TraceStacks, adding it when new; 0 for nil. The stack is kept as it is:
// entries that share a *Stack share its index.
func (t *TraceTables) Stack(st *Stack) StackRef {
	return t.stacks.ref(&t.s.TraceStacks, st, &t.overflow)
}

// Extra returns the index of x in TraceExtras, adding it when new; 0 when x is all empty.
func (t *TraceTables) Extra(x TraceExtra) ExtraRef {
	if x.empty() {
		return 0 // most events: no table lookup, and no generated struct comparison (refTable's zero test)
	}
	return t.extras.ref(&t.s.TraceExtras, x, &t.overflow)
}

// Stream returns the index of stream handle h in TraceStreams, adding it when new; 0 for stream 0.
func (t *TraceTables) Stream(h uint64) StreamRef {
	if h == 0 {
		return 0 // most events: no call into the generic table
	}
	return t.streams.ref(&t.s.TraceStreams, h, &t.overflow)
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
