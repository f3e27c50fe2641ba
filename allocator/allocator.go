package allocator

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"slices"
)

// PoolID names a memory pool: {0, 0} is the default pool, anything else a private pool (CUDA graph or MemPool),
// as in a snapshot's pool_id.
type PoolID [2]int64

// DefaultPool is the pool every allocation uses unless routed to a private pool.
var DefaultPool = PoolID{}

// Options are the device facts a replay needs besides the settings.
type Options struct {
	// Capacity is the usable device memory C in bytes: a cudaMalloc (or page mapping) fails when reserved + A > C.
	// 0 means unlimited.
	Capacity int64
	// TotalMemory is the device's total memory (totalGlobalMem), which per_process_memory_fraction and the
	// expandable segments' virtual ranges are sized from. 0: Capacity, else 80 GiB.
	TotalMemory int64
	// Address, when set, proposes the address of the next new segment (or expandable range, whose first mapping
	// starts at it) of the given kind and bytes; ok false makes the model use a synthetic address below every
	// earlier one, as cudaMalloc usually does. The caller keeps proposed addresses from overlapping live segments.
	Address func(kind EventKind, size int64) (addr uint64, ok bool)
}

// defaultTotalMemory is assumed when neither the capacity nor the total memory is known.
const defaultTotalMemory = 80 << 30

// EventKind is what a segment event did; the names are the trace's actions.
type EventKind uint8

const (
	SegmentAlloc EventKind = iota + 1 // cudaMalloc of a segment
	SegmentFree                       // cudaFree of a segment
	SegmentMap                        // expandable pages mapped
	SegmentUnmap                      // expandable pages unmapped
)

func (k EventKind) String() string {
	switch k {
	case SegmentAlloc:
		return "segment_alloc"
	case SegmentFree:
		return "segment_free"
	case SegmentMap:
		return "segment_map"
	case SegmentUnmap:
		return "segment_unmap"
	}
	return "unknown"
}

// Creates reports whether the event reserves memory.
func (k EventKind) Creates() bool { return k == SegmentAlloc || k == SegmentMap }

// SegmentEvent is one change of reserved memory the model made.
type SegmentEvent struct {
	Kind   EventKind
	Addr   uint64
	Size   int64
	Stream uint64
	Pool   PoolID
	// Reserved is the reserved bytes right after the event.
	Reserved int64
}

// OOMError is a malloc the model could not satisfy: no cached block fits and a new segment would exceed the
// capacity (or the memory fraction) even after releasing cached blocks.
type OOMError struct {
	Size       int64 // requested bytes
	Rounded    int64 // the rounded request
	Alloc      int64 // the segment bytes (or pages) it needed
	Reserved   int64 // reserved bytes when it failed
	Allocated  int64 // allocated block bytes when it failed
	Capacity   int64 // usable capacity; 0 when only a fraction limit applied
	LimitBytes int64 // the memory-fraction limit, 0 when none
}

func (e *OOMError) Error() string {
	return fmt.Sprintf("out of memory: tried to allocate %d bytes (segment %d) with %d reserved, %d allocated, capacity %d",
		e.Size, e.Alloc, e.Reserved, e.Allocated, e.Capacity)
}

// Errors of the event API.
var (
	ErrLive     = errors.New("id is already allocated")
	ErrUnknown  = errors.New("id is not allocated")
	ErrBadSize  = errors.New("size must be positive")
	ErrNotFound = errors.New("no such private pool")
)

// block is a piece of a segment; blocks tile their segment exactly. The fields a tree search reads (the key, the
// links and the priority) come first, so that a search touches one cache line of each block it passes: a treap
// walk is a chain of dependent loads, and a second line per block made it half again as slow.
type block struct {
	stream      uint64
	size        int64
	addr        uint64
	left, right *block
	prio        uint64
	prev        *block
	next        *block

	requested int64
	pool      *pool
	seg       *segment
	// gcBase is the pool's lookup count when the block last entered the free set (its age is counted from it).
	gcBase    int64
	allocated bool
	mapped    bool
	inTree    bool
}

// pool is one of PyTorch's BlockPools: the free blocks of a small or large pool, and its unmapped expandable
// blocks.
type pool struct {
	small    bool
	blocks   tree // free mapped blocks, (stream, size, address)
	unmapped tree // unmapped expandable blocks, (stream, address)
	owner    *privatePool
	lookups  int64 // get_free_blocks_call_count, counted only while GC is active
	segments int
}

// privatePool is a CUDA-graph or MemPool private pool.
type privatePool struct {
	id           PoolID
	small, large pool
	freeable     bool
}

// segment is one cudaMalloc, or one expandable virtual range whose mapped part counts as reserved.
type segment struct {
	addr       uint64
	size       int64 // reserved bytes: the cudaMalloc size, or the mapped bytes of an expandable range
	virt       int64 // an expandable range's virtual size
	page       int64 // an expandable range's page size
	stream     uint64
	pool       *pool
	expandable bool
	allocated  int // allocated blocks
}

// Allocator is one device's caching allocator: the native allocator of torch 2.x under one Config.
// It is not safe for concurrent use.
type Allocator struct {
	cfg         Config
	capacity    int64
	total       int64
	allowed     int64 // the memory-fraction limit; 0 when none
	gcActive    bool
	addressHint func(EventKind, int64) (uint64, bool)

	// retries counts the requests that released every cached segment and tried again (PyTorch's
	// num_alloc_retries): what a device at its capacity costs in synchronizations and cudaFrees.
	retries int

	small, large pool
	private      map[PoolID]*privatePool
	live         map[uint64]*block
	lowest       uint64 // lowest address handed to a segment or range so far
	rng          uint64

	reserved, allocated, requested int64
	emptyBytes                     int64 // reserved bytes of segments without an allocated block
	segments                       int
	created                        int // segment_alloc and segment_map events so far

	peak      int64
	peakDirty bool
	peakFrag  Fragmentation

	events    []SegmentEvent
	keepEvent bool
	spare     *block  // blocks merged away, linked through left, for reuse
	slab      []block // blocks not handed out yet
}

// blockSlab is how many blocks one slab holds.
const blockSlab = 256

// syntheticTop is where synthetic segment addresses start (they descend from it); it is far above the
// addresses a 48-bit GPU virtual address space hands out in traces, so synthetic segments never meet real ones.
const syntheticTop = uint64(1) << 62

// New returns an empty allocator for one device. cfg must pass Validate.
func New(cfg Config, opt Options) (*Allocator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a := &Allocator{
		cfg: cfg, capacity: opt.Capacity, addressHint: opt.Address,
		private: map[PoolID]*privatePool{}, live: map[uint64]*block{},
		lowest: syntheticTop, rng: 0x9e3779b97f4a7c15, keepEvent: true,
	}
	a.total = cmpOr(opt.TotalMemory, cmpOr(opt.Capacity, defaultTotalMemory))
	if f := cfg.PerProcessMemoryFraction; f > 0 && f < 1 {
		a.allowed = int64(math.Round(f * float64(a.total)))
		a.gcActive = cfg.GarbageCollectionThreshold > 0
	}
	a.small = newPool(true, nil)
	a.large = newPool(false, nil)
	return a, nil
}

func newPool(small bool, owner *privatePool) pool {
	return pool{small: small, owner: owner, unmapped: tree{byAddr: true}}
}

// Config returns the settings the allocator runs under.
func (a *Allocator) Config() Config { return a.cfg }

// Reserved is the bytes of all segments and mapped pages (torch.cuda.memory_reserved).
func (a *Allocator) Reserved() int64 { return a.reserved }

// Allocated is the bytes of allocated blocks, rounding and unsplit slack included (torch.cuda.memory_allocated).
func (a *Allocator) Allocated() int64 { return a.allocated }

// Requested is the bytes the live allocations asked for.
func (a *Allocator) Requested() int64 { return a.requested }

// PeakReserved is the highest reserved so far (torch.cuda.max_memory_reserved).
func (a *Allocator) PeakReserved() int64 { return a.peak }

// PeakFragmentation is what reserved memory consisted of right after the request that first reached the peak.
func (a *Allocator) PeakFragmentation() Fragmentation { return a.peakFrag }

// Retries is how many requests released every cached segment and tried again (num_alloc_retries).
func (a *Allocator) Retries() int { return a.retries }

// Segments is the number of segments (expandable ranges count once).
func (a *Allocator) Segments() int { return a.segments }

// AddressOf returns the address of id's block.
func (a *Allocator) AddressOf(id uint64) (uint64, bool) {
	b, ok := a.live[id]
	if !ok {
		return 0, false
	}
	return b.addr, true
}

// Events returns the segment events so far, oldest first. The slice is the allocator's own; do not modify it.
func (a *Allocator) Events() []SegmentEvent { return a.events }

// Fragmentation breaks reserved memory down.
type Fragmentation struct {
	Reserved  int64 `json:"reserved_bytes" msgpack:"reserved_bytes"`
	Allocated int64 `json:"allocated_bytes" msgpack:"allocated_bytes"` // block bytes of live allocations
	Requested int64 `json:"requested_bytes" msgpack:"requested_bytes"` // bytes the live allocations asked for
	// Free is Reserved − Allocated: cached memory no live allocation uses.
	Free int64 `json:"free_bytes" msgpack:"free_bytes"`
	// InternalSlack is Allocated − Requested: rounding and unsplit remainders inside live blocks.
	InternalSlack int64 `json:"internal_slack_bytes" msgpack:"internal_slack_bytes"`
	// CachedSegments is the free bytes in segments (or mapped ranges) that hold no live allocation at all:
	// empty_cache would return them.
	CachedSegments int64 `json:"cached_segment_bytes" msgpack:"cached_segment_bytes"`
	// FreeInUsedSegments is the rest of Free: free blocks in segments that also hold live allocations, which
	// only those allocations' frees can give back.
	FreeInUsedSegments int64 `json:"free_in_used_segments_bytes" msgpack:"free_in_used_segments_bytes"`
	Segments           int   `json:"segments" msgpack:"segments"`
}

// Fragmentation returns the current breakdown.
func (a *Allocator) Fragmentation() Fragmentation {
	return Fragmentation{
		Reserved: a.reserved, Allocated: a.allocated, Requested: a.requested,
		Free: a.reserved - a.allocated, InternalSlack: a.allocated - a.requested,
		CachedSegments: a.emptyBytes, FreeInUsedSegments: a.reserved - a.allocated - a.emptyBytes,
		Segments: a.segments,
	}
}

// RoundSize is the block size the allocator gives a request of n bytes under cfg (round_size).
func RoundSize(cfg Config, n int64) int64 {
	if n < minBlockSize {
		return minBlockSize
	}
	idx := min(max(bits.Len64(uint64(n))-1-20, 0), roundupIntervals-1)
	if d := cfg.RoundupPower2Divisions[idx]; d > 1 && n > minBlockSize*d {
		return roundupPower2Division(n, d)
	}
	return (n + minBlockSize - 1) / minBlockSize * minBlockSize
}

// roundupPower2Division rounds n up to the next of d equal steps between its neighbouring powers of two.
func roundupPower2Division(n, d int64) int64 {
	if n&(n-1) == 0 {
		return n
	}
	floor := int64(1) << (bits.Len64(uint64(n)) - 1)
	step := floor >> (bits.Len64(uint64(d)) - 1)
	if step == 0 {
		return floor << 1
	}
	r := n &^ (step - 1)
	if r == n {
		return n
	}
	return r + step
}

// SegmentSize is the cudaMalloc size for a rounded request s (get_allocation_size).
func SegmentSize(cfg Config, s int64) int64 {
	switch {
	case s <= smallSize:
		return smallBuffer
	case s < minLargeAlloc:
		return cfg.largeSegment()
	default:
		return (s + roundLarge - 1) / roundLarge * roundLarge
	}
}

// Malloc allocates size bytes for id on stream from the default pool.
func (a *Allocator) Malloc(id uint64, size int64, stream uint64) error {
	return a.MallocIn(id, size, stream, DefaultPool)
}

// MallocIn allocates size bytes for id on stream from pool (DefaultPool or a private pool, which is created on
// first use). It returns an *OOMError when the device cannot hold it; nothing is allocated then, but cached
// segments the retry path released stay released.
func (a *Allocator) MallocIn(id uint64, size int64, stream uint64, poolID PoolID) error {
	if size <= 0 {
		return ErrBadSize
	}
	if _, ok := a.live[id]; ok {
		return ErrLive
	}
	b, err := a.malloc(size, stream, poolID)
	if err != nil {
		return err
	}
	a.live[id] = b
	return nil
}

// malloc is MallocIn without the id: it returns the allocated block, which the caller keeps (in the live map, or
// in a trace replay's table of addresses). size must be positive.
func (a *Allocator) malloc(size int64, stream uint64, poolID PoolID) (*block, error) {
	s := RoundSize(a.cfg, size)
	p := a.poolFor(s, poolID)
	alloc := SegmentSize(a.cfg, s)
	b := a.getFreeBlock(p, s, stream)
	if b == nil {
		if a.gcActive {
			a.garbageCollect()
		}
		b = a.allocBlock(p, s, alloc, stream)
		if b == nil && a.releaseAvailable(p, s, stream) {
			b = a.allocBlock(p, s, alloc, stream)
		}
		if b == nil {
			a.releaseCached()
			a.retries++
			b = a.allocBlock(p, s, alloc, stream)
		}
		if b == nil {
			a.notePeak()
			return nil, &OOMError{Size: size, Rounded: s, Alloc: alloc, Reserved: a.reserved, Allocated: a.allocated,
				Capacity: a.capacity, LimitBytes: a.allowed}
		}
	}
	if a.shouldSplit(b, s) {
		a.split(b, s)
	}
	b.allocated, b.requested = true, size
	if b.seg.allocated == 0 {
		a.emptyBytes -= b.seg.size
	}
	b.seg.allocated++
	a.allocated += b.size
	a.requested += size
	a.notePeak()
	return b, nil
}

// notePeak records the breakdown after a request that raised the peak.
func (a *Allocator) notePeak() {
	if a.peakDirty {
		a.peakFrag = a.Fragmentation()
		a.peakFrag.Reserved = a.peak
		a.peakDirty = false
	}
}

func (a *Allocator) poolFor(s int64, id PoolID) *pool {
	if id == DefaultPool {
		if s <= smallSize {
			return &a.small
		}
		return &a.large
	}
	pp := a.private[id]
	if pp == nil {
		pp = &privatePool{id: id}
		pp.small, pp.large = newPool(true, pp), newPool(false, pp)
		a.private[id] = pp
	}
	if s <= smallSize {
		return &pp.small
	}
	return &pp.large
}

// getFreeBlock is PyTorch's get_free_block: the best fit on the stream, with the expandable walk and the
// oversize rules; nil when the pool has no acceptable block.
func (a *Allocator) getFreeBlock(p *pool, s int64, stream uint64) *block {
	if a.gcActive {
		p.lookups++
	}
	b, at := p.blocks.lowerBoundAt(key{stream: stream, size: s})
	if b == nil || b.stream != stream {
		return nil
	}
	if b.seg.expandable {
		at = nil // b may move on below
		if a.cfg.ExpandableSegments {
			for n := p.blocks.next(b); n != nil && b.seg.expandable && n.stream == stream &&
				expandableSize(n) < expandableSize(b); n = p.blocks.next(b) {
				b = n
			}
		} else {
			// Expandable segments were switched off after these blocks were made: skip them.
			for b = p.blocks.next(b); b != nil && b.seg.expandable && b.stream == stream; b = p.blocks.next(b) {
			}
			if b == nil || b.stream != stream {
				return nil
			}
		}
	}
	ms := a.cfg.maxSplit()
	if s < ms && b.size >= ms {
		return nil
	}
	if s >= ms && b.size >= s+a.cfg.nonSplitRounding() {
		return nil
	}
	if at != nil && *at == b {
		p.blocks.removeAt(at) // the common case: no second search
	} else {
		p.blocks.remove(b)
	}
	return b
}

// expandableSize is a block's size plus the unmapped block after it: what it could grow into.
func expandableSize(b *block) int64 {
	if b.next != nil && !b.next.mapped {
		return b.size + b.next.size
	}
	return b.size
}

func (a *Allocator) shouldSplit(b *block, s int64) bool {
	rem := b.size - s
	if b.pool.small || a.cfg.ExpandableSegments {
		return rem >= minBlockSize
	}
	return s < a.cfg.maxSplit() && rem > smallSize
}

// split hands the front s bytes of b out and returns the rest to the pool as a free block.
func (a *Allocator) split(b *block, s int64) {
	rest := a.newBlock(b.addr+uint64(s), b.size-s, b.stream, b.pool, b.seg)
	rest.mapped = true
	rest.prev, rest.next = b, b.next
	if b.next != nil {
		b.next.prev = rest
	}
	b.next = rest
	b.size = s
	a.insertFree(rest)
}

func (a *Allocator) newBlock(addr uint64, size int64, stream uint64, p *pool, seg *segment) *block {
	// xorshift64*: treap priorities, deterministic per allocator.
	a.rng ^= a.rng >> 12
	a.rng ^= a.rng << 25
	a.rng ^= a.rng >> 27
	b := a.spare
	if b != nil {
		a.spare = b.left
	} else {
		// Blocks come from slabs, not one heap allocation each: a replay whose live set keeps growing makes
		// millions of them.
		if len(a.slab) == 0 {
			a.slab = make([]block, blockSlab)
		}
		b, a.slab = &a.slab[0], a.slab[1:]
	}
	*b = block{addr: addr, size: size, stream: stream, pool: p, seg: seg, mapped: true, prio: a.rng * 2685821657736338717}
	return b
}

func (a *Allocator) insertFree(b *block) {
	b.gcBase = b.pool.lookups
	b.pool.blocks.insert(b)
}

// allocBlock is alloc_block: a new segment (or mapped pages) for a rounded request s whose segment size is
// alloc; nil when the fraction limit or the capacity refuses it.
func (a *Allocator) allocBlock(p *pool, s, alloc int64, stream uint64) *block {
	if a.allowed > 0 && a.reserved+alloc > a.allowed {
		return nil
	}
	if a.cfg.ExpandableSegments {
		return a.allocExpandable(p, s, stream)
	}
	if !a.fits(alloc) {
		return nil
	}
	addr := a.segmentAddress(SegmentAlloc, alloc, alloc)
	seg := &segment{addr: addr, stream: stream, pool: p}
	b := a.newBlock(addr, alloc, stream, p, seg)
	a.addSegment(seg)
	a.grow(seg, alloc, SegmentAlloc, addr)
	return b
}

func (a *Allocator) fits(bytes int64) bool { return a.capacity <= 0 || a.reserved+bytes <= a.capacity }

// segmentAddress picks the address of a new segment of span bytes (a range's virtual size), asking the hint
// first (with the event's bytes) and otherwise descending below every address used so far.
func (a *Allocator) segmentAddress(kind EventKind, bytes, span int64) uint64 {
	if a.addressHint != nil {
		if addr, ok := a.addressHint(kind, bytes); ok && addr != 0 {
			a.lowest = min(a.lowest, addr)
			return addr
		}
	}
	span = (span + roundLarge - 1) / roundLarge * roundLarge
	if uint64(span) >= a.lowest {
		a.lowest = syntheticTop // wrapped: start again at the top (only after exabytes of synthetic segments)
	}
	a.lowest -= uint64(span)
	return a.lowest
}

func (a *Allocator) addSegment(seg *segment) {
	a.segments++
	seg.pool.segments++
}

// grow adds bytes of reserved memory to seg and records the event.
func (a *Allocator) grow(seg *segment, bytes int64, kind EventKind, addr uint64) {
	seg.size += bytes
	a.reserved += bytes
	a.created++
	if seg.allocated == 0 {
		a.emptyBytes += bytes
	}
	if a.reserved > a.peak {
		a.peak, a.peakDirty = a.reserved, true
	}
	a.record(kind, addr, bytes, seg)
}

// shrink removes bytes of reserved memory from seg and records the event.
func (a *Allocator) shrink(seg *segment, bytes int64, kind EventKind, addr uint64) {
	seg.size -= bytes
	a.reserved -= bytes
	if seg.allocated == 0 {
		a.emptyBytes -= bytes
	}
	a.record(kind, addr, bytes, seg)
}

func (a *Allocator) record(kind EventKind, addr uint64, bytes int64, seg *segment) {
	if !a.keepEvent {
		return
	}
	var id PoolID
	if seg.pool.owner != nil {
		id = seg.pool.owner.id
	}
	a.events = append(a.events, SegmentEvent{Kind: kind, Addr: addr, Size: bytes, Stream: seg.stream, Pool: id, Reserved: a.reserved})
}

// Free returns id's block to its pool, merging it with free neighbours. Segments are never released by a free.
func (a *Allocator) Free(id uint64) error {
	b, ok := a.live[id]
	if !ok {
		return ErrUnknown
	}
	delete(a.live, id)
	a.release(b)
	return nil
}

// release frees the allocated block b (Free without the id).
func (a *Allocator) release(b *block) {
	a.allocated -= b.size
	a.requested -= b.requested
	b.allocated, b.requested = false, 0
	b.seg.allocated--
	if b.seg.allocated == 0 {
		a.emptyBytes += b.seg.size
	}
	a.freeBlock(b)
}

// freeBlock merges b with its free neighbours and inserts it into its pool.
func (a *Allocator) freeBlock(b *block) {
	a.tryMerge(b, b.prev)
	a.tryMerge(b, b.next)
	a.insertFree(b)
}

// tryMerge absorbs src, a neighbour of dst, into dst when src is free and in the same mapped state.
func (a *Allocator) tryMerge(dst, src *block) {
	if src == nil || src.allocated || src.mapped != dst.mapped {
		return
	}
	if src.mapped {
		src.pool.blocks.remove(src)
	} else {
		src.pool.unmapped.remove(src)
	}
	if dst.prev == src {
		dst.addr = src.addr
		dst.prev = src.prev
		if dst.prev != nil {
			dst.prev.next = dst
		}
	} else {
		dst.next = src.next
		if dst.next != nil {
			dst.next.prev = dst
		}
	}
	dst.size += src.size
	// src is gone: keep it for the next newBlock (a replay merges about as often as it splits).
	*src = block{left: a.spare}
	a.spare = src
}

// EmptyCache is torch.cuda.empty_cache(): release every cached whole segment, unmap every free expandable page,
// and release freeable private pools.
func (a *Allocator) EmptyCache() { a.releaseCached() }

// releaseCached is release_cached_blocks for the default pool (what empty_cache and malloc's last retry do).
func (a *Allocator) releaseCached() {
	a.releaseBlocks(&a.large)
	a.releaseBlocks(&a.small)
	// Pool-id order, so that the segment_free events come out the same on every run.
	for _, id := range slices.SortedFunc(maps.Keys(a.private), func(x, y PoolID) int {
		return cmp.Or(cmp.Compare(x[0], y[0]), cmp.Compare(x[1], y[1]))
	}) {
		pp := a.private[id]
		if !pp.freeable {
			continue
		}
		a.releaseBlocks(&pp.large)
		a.releaseBlocks(&pp.small)
		if pp.large.segments+pp.small.segments == 0 {
			delete(a.private, id)
		}
	}
}

// releaseBlocks frees every free block that is a whole non-expandable segment and unmaps the whole pages of
// every free expandable block, in pool order.
func (a *Allocator) releaseBlocks(p *pool) {
	var unmap []*block
	for _, b := range p.blocks.appendAll(nil) {
		switch {
		case b.seg.expandable:
			unmap = append(unmap, b)
		case b.prev == nil && b.next == nil:
			a.releaseBlock(b)
		}
	}
	for _, b := range unmap {
		a.unmapBlock(b)
		a.releaseExpandable(b)
	}
}

// releaseBlock cudaFrees the segment that b, a free whole segment, is.
func (a *Allocator) releaseBlock(b *block) {
	b.pool.blocks.remove(b)
	a.segments--
	b.pool.segments--
	a.shrink(b.seg, b.size, SegmentFree, b.addr)
}

// ReleasePool marks a private pool freeable (its graph was destroyed or the MemPool released): the next
// empty_cache (or malloc retry) releases its free whole segments.
func (a *Allocator) ReleasePool(id PoolID) error {
	pp := a.private[id]
	if pp == nil {
		return ErrNotFound
	}
	pp.freeable = true
	return nil
}

// releaseAvailable is release_available_cached_blocks: with max_split_size set, free the smallest cached
// non-expandable block on the stream that is at least max(s, max_split_size), or else oversize blocks from
// the largest down until they add up to that; true when enough was freed.
func (a *Allocator) releaseAvailable(p *pool, s int64, stream uint64) bool {
	ms := a.cfg.maxSplit()
	if ms == math.MaxInt64 {
		return false
	}
	k := key{stream: stream, size: max(s, ms)}
	b := p.blocks.lowerBound(k)
	if b != nil && b.stream == stream && !b.seg.expandable {
		if b.prev == nil && b.next == nil {
			a.releaseBlock(b)
			return true
		}
		return false
	}
	// No single block is large enough: free oversize blocks from the one just before the lower bound down.
	var cur *block
	if b != nil {
		cur = p.blocks.prevOf(p.blocks.keyOf(b))
	} else {
		cur = p.blocks.prevOf(key{stream: math.MaxUint64, size: math.MaxInt64, addr: math.MaxUint64})
	}
	var released int64
	for cur != nil && released < k.size && cur.size >= ms && cur.stream == stream {
		prev := p.blocks.prevOf(p.blocks.keyOf(cur))
		if !cur.seg.expandable && cur.prev == nil && cur.next == nil {
			released += cur.size
			a.releaseBlock(cur)
		}
		cur = prev
	}
	return released >= k.size
}

// garbageCollect is garbage_collect_cached_blocks: above threshold·allowed, free whole cached segments of the
// default large pool whose age is at least the mean age, pass after pass, until the excess is freed.
func (a *Allocator) garbageCollect() {
	limit := int64(a.cfg.GarbageCollectionThreshold * float64(a.allowed))
	if a.reserved <= limit {
		return
	}
	target := a.reserved - limit
	p := &a.large
	var totalAge int64
	count := 0
	for _, b := range p.blocks.appendAll(nil) {
		if b.prev == nil && b.next == nil {
			totalAge += p.lookups - b.gcBase
			count++
		}
	}
	var reclaimed int64
	for freed := true; reclaimed < target && freed && count > 0; {
		threshold := float64(totalAge) / float64(count)
		freed = false
		for _, b := range p.blocks.appendAll(nil) {
			age := p.lookups - b.gcBase
			if b.prev == nil && b.next == nil && !b.seg.expandable && float64(age) >= threshold {
				freed = true
				reclaimed += b.size
				totalAge -= age
				count--
				a.releaseBlock(b)
			}
		}
	}
}

// ContextReserve is the device memory assumed to lie outside the caching allocator (CUDA context, loaded kernels,
// library workspaces) when only a device's total memory is known. On the H200 / torch 2.11 / CUDA 13 runs it
// was 0.7–0.8 GB in steady state and 1.37 GB at the 8B run's OOM.
const ContextReserve = 1 << 30

// UsableCapacity is the capacity a replay assumes for a device of total bytes: total minus ContextReserve.
func UsableCapacity(total int64) int64 { return max(total-ContextReserve, 0) }
