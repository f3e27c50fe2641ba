package snapshot

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"slices"
	"unicode/utf8"
	"unsafe"

	"github.com/memscan/memscan/internal/input"
	"github.com/memscan/memscan/internal/sysmem"
)

// The fast decoder is a pickle VM specialised for allocator snapshots. It streams the file through a small
// buffer and builds the model directly: no generic value tree exists at any time. Dicts are typed when their
// items arrive (a dict with an 'action' key is a trace entry, one with 'filename' a frame, ...), lists are typed
// by their items, strings and frames are interned, and the memo holds 8-byte cells instead of values, so a
// multi-gigabyte snapshot decodes in memory proportional to the model, not to the pickle's object graph.
//
// Anything outside the shapes that PyTorch writes (an unusual opcode, an unexpected key type, a memo reference
// to a converted record, ...) makes it give up with errFastUnsupported, and Decode falls back to the reference
// decoder, which handles every pickle and produces the precise error for bad input. The fast decoder itself only
// reports errors that no decoder could get past: truncation, an unknown opcode, a class or global opcode, and
// cancellation.

// errFastUnsupported means the fast decoder met a construct it does not handle; the input is not necessarily
// malformed.
var errFastUnsupported = errors.New("construct not handled by the fast snapshot decoder")

// fastUnsupported records where and why the fast decoder gave up (for debugging and tests).
type fastUnsupported struct {
	Offset int64
	Why    string
}

func (e *fastUnsupported) Error() string {
	return fmt.Sprintf("byte %d: %s: %v", e.Offset, e.Why, errFastUnsupported)
}
func (e *fastUnsupported) Unwrap() error { return errFastUnsupported }

// Limits that keep hostile input from exhausting memory. Real snapshots stay far below them.
const (
	fastMaxStack     = maxStackValues // values on the VM stack at once; the pre-scan refuses more too
	fastMaxMarks     = 1 << 16        // open MARKs
	fastMaxMemoGap   = 1 << 10        // BINPUT indexes further past the memo's end go to the sparse memo
	fastMaxGeneric   = 1 << 12        // items kept for a dict or tuple the model does not type
	fastCheckEvery   = 1 << 16        // opcodes between context checks
	fastInitialBuf   = 64 << 10
	fastMaxLongBytes = 9 // LONG1/LONG4 payloads beyond 64 bits are not snapshot data
)

// vkind is the type of a VM value.
type vkind uint8

const (
	vNone       vkind = iota
	vBool             // n: 0 or 1
	vInt              // n
	vUint             // n: bit pattern of a value above math.MaxInt64
	vFloat            // n: float64 bits
	vStr              // n: interned string id
	vPair             // a 2-tuple of ints: n, n2
	vTuple            // any other tuple (l.items), only ever ignored
	vDict             // a dict not filled yet; n: its memo index or -1
	vList             // l
	vFrame            // n: index into the frame table
	vEntry            // n: index into the pending trace entries
	vSegment          // n: index into the pending segments
	vBlock            // n: index into the pending blocks
	vHist             // n: index into the pending history entries
	vAnnotation       // n: index into the pending annotations
	vSettings         // the decoder's settings record
	vTop              // the decoder's top-level snapshot
	vGenDict          // a dict of no known shape; l.items holds key, value pairs
)

// val is one VM value. It holds no pointers (strings and lists are ids into the decoder's tables), so the
// stack is copied without write barriers and never scanned by the garbage collector.
type val struct {
	k  vkind
	n  int64 // the int, bool or float bits; the string id (vStr); the list id (vList, vTuple, vGenDict); ...
	n2 int64 // vPair: the second int; vList: 1 + the stackTab index of a sealed frames list read from the memo
}

// sOf returns the string of a vStr value.
func (d *fastDecoder) sOf(v val) string { return d.strs[v.n] }

// lOf returns the list behind a vList, vTuple or vGenDict value.
func (d *fastDecoder) lOf(v val) *listObj { return d.lists[v.n] }

// newList registers a list object and returns its value.
func (d *fastDecoder) newList(k vkind, l *listObj) val {
	d.lists = append(d.lists, l)
	return val{k: k, n: int64(len(d.lists) - 1)}
}

// lkind is what a list turned out to hold.
type lkind uint8

const (
	lEmpty lkind = iota
	lFrames
	lEntries
	lSegments
	lBlocks
	lHists
	lTraces
	lAnnotations
	lOther // items the model does not use (cpp_frames strings, ...); only counted
	lTupleItems
	lDictItems
)

// listObj is a list (or the item store of a generic tuple or dict). Frame lists, the most numerous, only use
// the first fields; the typed slices of the rarer lists live in more.
type listObj struct {
	kind   lkind
	sealed bool    // consumed by a parent: later appends are not snapshot shape
	memo   uint64  // 1 + the memo index the list was last stored at (0: none), see fastDecoder.stackCell
	idx    []int32 // frame ids of a frames list until sealed
	st     *Stack  // the frames list once sealed (nil when empty)
	more   *listMore
}

type listMore struct {
	// Trace entries go into entries, sized from a refined estimate when the input size is known (see
	// addEntries), and otherwise into chunks of entryChunk joined once when the list is used: growing one slice
	// by append would copy every entry several times, a fifth of the decode time on large traces.
	entries []TraceEntry
	chunks  [][]TraceEntry
	batches int
	mark    int64 // file offset at the last estimate checkpoint
	start   int64 // file offset after the first batch
	markLen int   // entries at the last checkpoint
	segs    []Segment
	blocks  []Block
	hists   []History
	traces  [][]TraceEntry
	anns    []Annotation
	items   []val
	count   int
}

const entryChunk = 8192

// maxSegDevices bounds the devices counted for the trace-length estimate; a hostile file naming millions of
// devices only makes the estimate smaller.
const maxSegDevices = 1024

// entryEstimateSlack is how much room the estimated trace length gets beyond the projection. Room never
// written is not free: the allocation is zeroed when the runtime reuses memory (every file after the first in
// a multi-file run), which costs time and resident memory, so the projection is refined as the trace streams
// instead of guessing large once.
const entryEstimateSlack = 1.25

// firstReserveSlack is the slack of the list's full reservation at batch 32: the projection there was within 5%
// of a generated training-like trace's length and 6% short of a Python-stack trace's, whose first entries write
// their stacks out in full.
const firstReserveSlack = 1.10

// hintedRestFactor bounds the rest of a list projected from a claimed size by what the list has read so far.
const hintedRestFactor = 16

// minEntryBytes is a lower bound on the pickle bytes of one trace entry: an empty dict, a mark, three keys and
// three values fetched from the memo or written inline, and SETITEMS take at least 15.
const minEntryBytes = 8

// addEntries appends the pending entries of one APPENDS batch. With the input size known, the list is sized
// from the bytes per entry measured so far and re-projected at checkpoints (batches 2, 8, 32, 128, 512): the
// first entries carry the stacks written out in full and later ones mostly refer to the memo, so an early
// projection undershoots. Early checkpoints may grow or shrink the list (copying few entries); later ones only
// grow it, and entries past the capacity go to chunks joined at the end.
func (d *fastDecoder) addEntries(m *listMore, items []val) {
	if m != d.openEntries {
		// A new trace list has begun, so the previous one (the previous device's) is complete: give back the
		// room reserved for the rest of the file, which a multi-device snapshot holds for every device at once
		// otherwise (2.9× the file in RSS at four devices).
		if d.openEntries != nil {
			d.prefault.stop() // no backing still under way in the room trim gives back
			d.openEntries.trim()
		}
		d.openEntries = m
		d.traceLists++
	}
	if d.size > 0 {
		m.batches++
		cur := d.base + int64(d.pos)
		switch b := m.batches; {
		case b == 1:
			m.mark, m.markLen, m.start = cur, len(items), cur
		case b == 2 || b == 8 || b == 32 || b == 128 || b == 512:
			have := len(m.entries) + len(items)
			for _, c := range m.chunks {
				have += len(c)
			}
			// Bytes per entry over the window since the last checkpoint, which reflects the rest of the file
			// better than the average from the start. No entry takes fewer than minEntryBytes of pickle (three
			// keys and their values), which bounds the reservation by the file size whatever the input.
			per := max(minEntryBytes, (cur-m.mark)/int64(max(1, have-m.markLen)))
			// The rest of the file holds the rest of this list and the lists of the devices still to come:
			// PyTorch writes the segments first, so their devices say how many lists share it. Each list is taken
			// to be as long as this one will be, so this list's rest is its share of what it has read and the
			// rest of the file, less what it has read (without that, the first of two lists projected its rest as
			// half the file at every checkpoint and was regrown twice and trimmed by a third).
			lists := int64(max(1, len(d.segDevices)-d.traceLists+1))
			read := cur - m.start
			rest := max(0, (max(0, d.size-cur)+read)/lists-read)
			if d.hinted {
				// A claimed size is believed only as far as the list has shown itself: a false claim reserves at
				// most sixteen times what was read, and a true one of a few hundred megabytes is reached by batch
				// 512 (a longer list goes on in chunks).
				rest = min(rest, hintedRestFactor*read)
			}
			proj := have + int(rest/per) + entryChunk
			slack := entryEstimateSlack
			if b == 32 {
				slack = firstReserveSlack
			}
			est := have + int(float64(rest/per)*slack) + entryChunk
			if b <= 8 {
				// Eight batches still measure the bytes per entry poorly, and a list sized on them and replaced
				// later held both lists at once: the peak of a single-device decode, and a live heap the memory
				// governor then keeps room for. Room for 32 times the entries so far defers the full reservation
				// to batch 32, when copying the entries so far costs little.
				est = min(est, 32*have+entryChunk)
				proj = min(proj, est)
			}
			m.mark, m.markLen = cur, have
			// Grow only when even the bare projection no longer fits: every reallocation leaves the old list
			// to the collector, and the slack absorbs the usual drift.
			if m.entries == nil || proj > cap(m.entries) || b <= 8 && est < cap(m.entries)*3/4 {
				grown := make([]TraceEntry, 0, est)
				grown = append(grown, m.entries...)
				for _, c := range m.chunks {
					grown = append(grown, c...)
				}
				m.entries, m.chunks = grown, nil
			}
			if b >= 32 && !d.hinted {
				// From batch 32 the list holds its full reservation; the projection is backed ahead, less a
				// sixteenth, since the projection may overshoot by a few percent and a backed page is resident
				// whether it is written or not (the rest faults in as it is written).
				d.prefault.extend(m.entries, proj-proj/16)
			}
		}
	}
	// A batch is nearly always a run of consecutive pending entries that fits the reserved room: it is copied in
	// one piece.
	if n := len(items); n > 0 && m.entries != nil && m.chunks == nil && len(m.entries)+n <= cap(m.entries) {
		first := items[0].n
		run := true
		for k := range items {
			run = run && items[k].n == first+int64(k)
		}
		if run {
			m.entries = append(m.entries, d.pEntries[first:first+int64(n)]...)
			return
		}
	}
	for _, it := range items {
		e := &d.pEntries[it.n]
		if m.entries != nil && len(m.entries) < cap(m.entries) && m.chunks == nil {
			m.entries = append(m.entries, *e)
			continue
		}
		m.addEntry(e)
	}
}

func (m *listMore) addEntry(e *TraceEntry) {
	n := len(m.chunks)
	if n == 0 || len(m.chunks[n-1]) == entryChunk {
		m.chunks = append(m.chunks, make([]TraceEntry, 0, entryChunk))
		n++
	}
	m.chunks[n-1] = append(m.chunks[n-1], *e)
}

// trim gives back the reserved room of the entries when much of it is unused: its pages go back to the kernel
// (sysmem.Release) and the list is cut at its length, or, where that cannot be done, the entries are copied into
// an allocation of their length. The copy left the list twice in memory until a collection, which ran in the
// middle of a two-device file's decode. Entries that arrive later still land in chunks.
func (m *listMore) trim() {
	if n := len(m.entries); m.chunks == nil && cap(m.entries)-n > n/16+entryChunk {
		if sysmem.Release(entryBytes(m.entries[n:cap(m.entries)])) {
			m.entries = m.entries[:n:n]
			return
		}
		m.entries = append(make([]TraceEntry, 0, n), m.entries...)
	}
}

// traceEntries returns the list's entries as one slice, joining the chunks if any.
func (m *listMore) traceEntries() []TraceEntry {
	if m.chunks != nil {
		total := len(m.entries)
		for _, c := range m.chunks {
			total += len(c)
		}
		joined := make([]TraceEntry, 0, total)
		joined = append(joined, m.entries...)
		for _, c := range m.chunks {
			joined = append(joined, c...)
		}
		m.entries, m.chunks = joined, nil
	}
	if m.entries == nil {
		return []TraceEntry{}
	}
	return m.entries
}

func (l *listObj) m() *listMore {
	if l.more == nil {
		l.more = &listMore{}
	}
	return l.more
}

// Memo cells: the kind in the top byte, a table index below.
const (
	cellEmpty   uint64 = 0
	cellStr     uint64 = 1 << 56
	cellFrame   uint64 = 2 << 56
	cellList    uint64 = 3 << 56
	cellVal     uint64 = 4 << 56 // any other value, in memoVals
	cellPending uint64 = 5 << 56 // a dict that is still being filled
	cellGone    uint64 = 6 << 56 // a dict already converted into a record
	cellStack   uint64 = 7 << 56 // a sealed frames list: its list id << stackShift | its stackTab index
	cellKind    uint64 = 0xff << 56
)

// frameKey identifies a frame by interned string ids.
type frameKey struct {
	file, name int32
	line       int64
}

// fastDecoder holds the state of one decode.
type fastDecoder struct {
	ctx  context.Context
	name string

	// input buffer: buf[pos:end] is unread; base is the file offset of buf[0]; lim is end, or the end of the
	// current FRAME when that comes first, so the fast paths need a single bounds check.
	r    io.Reader
	buf  []byte
	pos  int
	end  int
	lim  int
	base int64
	eof  bool

	opStart  int64
	size     int64 // input size when known (0 otherwise), to size trace lists up front
	hinted   bool  // size is only claimed (PickleSource.SizeHint): trusted within what has been read
	proto    int
	frameEnd int64 // file offset where the current FRAME ends; 0 outside frames

	stack []val
	marks []int

	memo     memoCells
	sparse   map[uint64]uint64 // memo cells far beyond len(memo) (only hand-made pickles have them)
	memoN    uint64            // cells set, which MEMOIZE uses as its index (Python's len(memo))
	memoVals []val
	lists    []*listObj

	strs    []string
	strID   map[string]int32
	strKey  []uint8  // field id of each interned string used as a dict key
	strAct  []Action // the action each interned string names (ActionOther when none), parsed once per string
	frames  []Frame
	frameID map[frameKey]int32
	stacks  map[string]*Stack
	// stackTab holds the stacks of the frames lists that a memo cell refers to (see stackCell).
	stackTab []*Stack
	// traceTabs holds the tables the trace entries index, tables adds to them, and stackTabRef[i] is
	// stackTab[i]'s index there (0: not yet named by an entry), so that the entries sharing a list through the memo
	// find it without a map.
	traceTabs   Snapshot
	tables      *TraceTables
	lastExtra   lastExtra // the last trace entry's extra (convertEntry)
	stackTabRef []StackRef
	// keyField remembers the field of the string in a memo cell that flatDict read as a key: a record's keys are
	// the same few strings, memoized where they first appear, so the flat reader finds their field without
	// reading the memo. A direct-mapped table by cell (few keys, few collisions); every memo write clears the
	// cell's slot if it holds that cell.
	keyField [keySlots]keySlot
	keyBuf   []byte

	// Records converted from dicts wait here until a list takes them; live counts those still on the stack so
	// the buffers can be reused once all have been taken.
	pEntries []TraceEntry
	pSegs    []Segment
	pBlocks  []Block
	pHists   []History
	pAnns    []Annotation
	live     int

	settings *AllocatorSettings
	top      *Snapshot
	fmt      formatFlags

	shape topShape // the outermost value, when it is not a snapshot's shape
	// openEntries is the trace list that received entries last, traceLists how many lists have received
	// entries, and segDevices the devices of the segments decoded so far (see addEntries).
	openEntries *listMore
	traceLists  int
	segDevices  []int

	fields  [fieldCount]val
	extra   []int
	scratch []int32

	// noFlat turns the flat-dict shortcut off (see flatDict), so that tests can hold it to the VM alone.
	noFlat   bool
	flat     flatState
	flatRead int // dicts the shortcut read

	prefault prefaulter

	// consumed, for a pickle mapped in memory, is told what the decoder has read (MappedPickle.Consumed) when it
	// reaches consumedAt.
	consumed   func(off int64)
	consumedAt int64
}

// formatFlags collects the keys that tell format generations apart.
type formatFlags struct {
	history, noBlockAddress, blockAddress, expandable, segFrames, poolID, timeUS, settings, annotations,
	compileContext, userMetadata bool
}

// decodeFastPickle decodes a snapshot pickle from r with the fast decoder.
func decodeFastPickle(ctx context.Context, name string, r io.Reader) (*Snapshot, error) {
	return decodeFastPickleSized(ctx, name, r, 0)
}

// decodeFastPickleSized is decodeFastPickle with the input's size in bytes (0 if unknown).
func decodeFastPickleSized(ctx context.Context, name string, r io.Reader, size int64) (*Snapshot, error) {
	return decodeFastPickleSource(ctx, name, r, size, false)
}

// decodeFastPickleSource is decodeFastPickleSized with a size that may be only claimed (hinted, see
// PickleSource.SizeHint).
func decodeFastPickleSource(ctx context.Context, name string, r io.Reader, size int64, hinted bool) (*Snapshot, error) {
	d := newFastDecoder(ctx, name, r, size)
	d.hinted = hinted
	defer d.prefault.stop()
	return d.run()
}

// decodeFastMapped decodes the pickle m holds in memory, reading its bytes in place and telling m every
// mappedStep bytes what it has read.
func decodeFastMapped(ctx context.Context, name string, m MappedPickle) (snap *Snapshot, err error) {
	b := m.Bytes()
	d := newFastDecoder(ctx, name, nil, int64(len(b)))
	d.buf, d.end, d.eof = b, len(b), true
	d.consumed, d.consumedAt = m.Consumed, mappedStep
	defer d.prefault.stop()
	// A mapped page that the file no longer holds (it was truncated while being read) faults: that is an error of
	// this input, not a crash.
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if f, ok := r.(interface{ Addr() uintptr }); ok {
				if at, in := offsetIn(b, f.Addr()); in {
					snap, err = nil, &input.Error{File: name, Offset: at, Msg: "cannot read the file's bytes: it changed while being read"}
					return
				}
			}
			panic(r)
		}
	}()
	return d.run()
}

// offsetIn returns the offset in b of the byte at address a; false when a lies outside b.
func offsetIn(b []byte, a uintptr) (int64, bool) {
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	return int64(a - p), a >= p && a-p < uintptr(len(b))
}

// mappedStep is how often the decoder of a mapped pickle tells what it has read (MappedPickle.Consumed), so that
// the pages behind it can leave the resident set: the file's bytes add a few such steps to it at most.
const mappedStep = 4 << 20

func newFastDecoder(ctx context.Context, name string, r io.Reader, size int64) *fastDecoder {
	d := &fastDecoder{
		size:    size,
		ctx:     ctx,
		name:    name,
		r:       r,
		buf:     make([]byte, fastInitialBuf),
		strID:   make(map[string]int32, 1024),
		frameID: make(map[frameKey]int32, 1024),
		stacks:  make(map[string]*Stack, 1024),
	}
	d.tables = NewTraceTables(&d.traceTabs)
	return d
}

func (d *fastDecoder) fail(msg string, args ...any) error {
	return &input.Error{File: d.name, Offset: d.opStart, Msg: fmt.Sprintf(msg, args...)}
}

func (d *fastDecoder) unsupported(why string, args ...any) error {
	if d.shape.set {
		// The reference decoder would refuse the input too (see topShape); reading it again would only cost.
		return d.shapeErr()
	}
	return &fastUnsupported{Offset: d.opStart, Why: fmt.Sprintf(why, args...)}
}

func (d *fastDecoder) shapeErr() error {
	return &input.Error{File: d.name, Offset: d.shape.at, Msg: d.shape.msg()}
}

// need returns the next n bytes. The slice is valid until the next call.
func (d *fastDecoder) need(n int) ([]byte, error) {
	if d.lim-d.pos >= n {
		b := d.buf[d.pos : d.pos+n]
		d.pos += n
		return b, nil
	}
	return d.needSlow(n)
}

func (d *fastDecoder) setLim() {
	d.lim = d.end
	if d.frameEnd != 0 {
		if fe := d.frameEnd - d.base; fe < int64(d.lim) {
			d.lim = int(fe)
		}
	}
	if d.consumed != nil {
		// A mapped pickle: the fast paths stop at the next step too, which lands here.
		at := d.base + int64(d.pos)
		if at >= d.consumedAt {
			d.consumed(at)
			d.consumedAt = at + mappedStep
		}
		if c := d.consumedAt - d.base; c < int64(d.lim) {
			d.lim = int(c)
		}
	}
}

// needSlow handles frame ends and refills the buffer. Reads may not cross the end of a FRAME, as in Python's
// unpickler. The buffer grows only by doubling while real data keeps arriving, so a length prefix larger than
// the rest of the file costs at most twice the bytes actually present before it fails.
func (d *fastDecoder) needSlow(n int) ([]byte, error) {
	if n < 0 {
		return nil, d.fail("length prefix %d is negative", n)
	}
	if d.frameEnd != 0 {
		cur := d.base + int64(d.pos)
		if cur == d.frameEnd {
			d.frameEnd = 0
		} else if cur+int64(n) > d.frameEnd {
			return nil, d.unsupported("%d bytes crossing the end of a frame", n)
		}
	}
	if d.end-d.pos >= n {
		b := d.buf[d.pos : d.pos+n]
		d.pos += n
		d.setLim()
		return b, nil
	}
	if d.eof {
		return nil, &input.Error{File: d.name, Offset: d.opStart,
			Msg: fmt.Sprintf("truncated: an opcode needs %d more bytes but only %d are left", n, d.end-d.pos)}
	}
	if d.pos > 0 {
		// (Never a mapped pickle's bytes, which are read-only: its decoder has eof set from the start.)
		copy(d.buf, d.buf[d.pos:d.end])
		d.base += int64(d.pos)
		d.end -= d.pos
		d.pos = 0
	}
	for d.end < n {
		if d.eof {
			return nil, &input.Error{File: d.name, Offset: d.opStart,
				Msg: fmt.Sprintf("truncated: an opcode needs %d more bytes but only %d are left", n, d.end)}
		}
		if d.end == len(d.buf) {
			nb := make([]byte, 2*len(d.buf))
			copy(nb, d.buf[:d.end])
			d.buf = nb
		}
		k, err := d.r.Read(d.buf[d.end:])
		d.end += k
		if err == io.EOF {
			d.eof = true
		} else if err != nil {
			return nil, &input.Error{File: d.name, Offset: d.base + int64(d.end), Msg: "cannot read", Err: err}
		}
		if err := d.ctx.Err(); err != nil {
			return nil, err
		}
	}
	b := d.buf[:n]
	d.pos = n
	d.setLim()
	return b, nil
}

// byte1 reads one byte; the fast path inlines into the opcode loop, which calls it tens of millions of times.
func (d *fastDecoder) byte1() (byte, error) {
	if d.pos < d.lim {
		c := d.buf[d.pos]
		d.pos++
		return c, nil
	}
	return d.byte1Slow()
}

func (d *fastDecoder) byte1Slow() (byte, error) {
	b, err := d.needSlow(1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

// push pushes v; the fast path (a value above the stack's first, with room) inlines. The stack's capacity
// never exceeds fastMaxStack (see pushSlow), so room below the capacity is within the limit.
func (d *fastDecoder) push(v val) error {
	if n := len(d.stack); n > 0 && n < cap(d.stack) {
		d.stack = d.stack[:n+1]
		d.stack[n] = v
		return nil
	}
	return d.pushSlow(v)
}

func (d *fastDecoder) pushSlow(v val) error {
	if len(d.stack) >= fastMaxStack || len(d.stack) == 0 {
		if len(d.stack) == 0 && len(d.marks) == 0 && v.k != vDict && v.k != vList {
			d.shape.wrong(d.opStart, withArticle(kindWord(v.k)))
		}
		if len(d.stack) >= fastMaxStack {
			return d.fail("%s", stackOverflowMsg)
		}
	}
	if len(d.stack) == cap(d.stack) {
		d.stack = slices.Grow(d.stack, min(max(2*cap(d.stack), 64), fastMaxStack)-len(d.stack))
	}
	d.stack = append(d.stack, v)
	return nil
}

// popMark removes the innermost MARK and returns its stack position.
func (d *fastDecoder) popMark() (int, error) {
	if len(d.marks) == 0 {
		return 0, d.unsupported("no MARK on the stack")
	}
	m := d.marks[len(d.marks)-1]
	d.marks = d.marks[:len(d.marks)-1]
	return m, nil
}

// stackFloor is the lowest stack position the current opcode may pop (nothing below the innermost MARK).
func (d *fastDecoder) stackFloor() int {
	if len(d.marks) == 0 {
		return 0
	}
	return d.marks[len(d.marks)-1]
}

func (d *fastDecoder) run() (*Snapshot, error) {
	ops := 0
	for {
		// ops counts the opcodes read since the last check, those the flat-dict shortcut reads included.
		if ops++; ops >= fastCheckEvery {
			ops = 0
			if err := d.ctx.Err(); err != nil {
				return nil, err
			}
		}
		if d.shape.set && d.shape.due(len(d.stack)) {
			return nil, d.shapeErr()
		}
		d.opStart = d.base + int64(d.pos)
		op, err := d.byte1()
		if err != nil {
			return nil, d.truncatedAtOp(err)
		}
		switch op {
		case opProto:
			b, err := d.need(1)
			if err != nil {
				return nil, err
			}
			if b[0] < 2 || b[0] > 5 {
				return nil, d.unsupported("pickle protocol %d", b[0])
			}
			d.proto = int(b[0])
		case opFrame:
			if d.frameEnd != 0 {
				return nil, d.unsupported("a FRAME inside a frame")
			}
			b, err := d.need(8)
			if err != nil {
				return nil, err
			}
			// That the frame is no longer than the rest of the file is checked at STOP (the file is streamed).
			if n := binary.LittleEndian.Uint64(b); n > 0 {
				if n > math.MaxInt64/2 {
					return nil, d.unsupported("FRAME of %d bytes", n)
				}
				d.frameEnd = d.base + int64(d.pos) + int64(n)
				d.setLim()
			}
		case opEmptyDict:
			var n int
			if n, err = d.flatDict(); n == 0 && err == nil {
				err = d.push(val{k: vDict, n: -1})
			}
			ops += n
		case opEmptyList:
			err = d.push(d.newList(vList, &listObj{}))
		case opEmptyTuple:
			err = d.push(d.newList(vTuple, &listObj{kind: lTupleItems}))
		case opMark:
			if len(d.stack) == 0 {
				d.shape.wrong(d.opStart, underMark)
			}
			if len(d.marks) >= fastMaxMarks {
				return nil, d.unsupported("more than %d nested MARKs", fastMaxMarks)
			}
			d.marks = append(d.marks, len(d.stack))
		case opMemoize:
			err = d.memoStore(d.memoN)
		case opBinPut:
			var b []byte
			if b, err = d.need(1); err == nil {
				err = d.memoStore(uint64(b[0]))
			}
		case opLongBinPut:
			var b []byte
			if b, err = d.need(4); err == nil {
				err = d.memoStore(uint64(binary.LittleEndian.Uint32(b)))
			}
		case opBinGet:
			var b []byte
			if b, err = d.need(1); err == nil {
				err = d.memoGet(uint64(b[0]))
			}
		case opLongBinGet:
			var b []byte
			if b, err = d.need(4); err == nil {
				err = d.memoGet(uint64(binary.LittleEndian.Uint32(b)))
			}
		case opBinInt:
			var b []byte
			if b, err = d.need(4); err == nil {
				err = d.push(val{k: vInt, n: int64(int32(binary.LittleEndian.Uint32(b)))})
			}
		case opBinInt1:
			var c byte
			if c, err = d.byte1(); err == nil {
				err = d.push(val{k: vInt, n: int64(c)})
			}
		case opBinInt2:
			var b []byte
			if b, err = d.need(2); err == nil {
				err = d.push(val{k: vInt, n: int64(binary.LittleEndian.Uint16(b))})
			}
		case opLong1:
			var c byte
			if c, err = d.byte1(); err == nil {
				err = d.long(int(c))
			}
		case opLong4:
			var b []byte
			if b, err = d.need(4); err == nil {
				n := int32(binary.LittleEndian.Uint32(b))
				if n < 0 {
					return nil, d.fail("LONG4 with negative length %d", n)
				}
				err = d.long(int(n))
			}
		case opBinFloat:
			var b []byte
			if b, err = d.need(8); err == nil {
				err = d.push(val{k: vFloat, n: int64(binary.BigEndian.Uint64(b))})
			}
		case opShortBinUni:
			var c byte
			if c, err = d.byte1(); err == nil {
				err = d.str(int(c))
			}
		case opBinUnicode:
			var b []byte
			if b, err = d.need(4); err == nil {
				err = d.strLen(uint64(binary.LittleEndian.Uint32(b)))
			}
		case opBinUnicode8:
			var b []byte
			if b, err = d.need(8); err == nil {
				err = d.strLen(binary.LittleEndian.Uint64(b))
			}
		case opNewTrue:
			err = d.push(val{k: vBool, n: 1})
		case opNewFalse:
			err = d.push(val{k: vBool})
		case opNone:
			err = d.push(val{k: vNone})
		case opTuple1, opTuple2, opTuple3:
			err = d.tupleN(int(op-opTuple1) + 1)
		case opTuple:
			var m int
			if m, err = d.popMark(); err == nil {
				err = d.tupleN(len(d.stack) - m)
			}
		case opSetItems:
			var m int
			if m, err = d.popMark(); err == nil {
				err = d.setItems(m)
			}
		case opSetItem:
			if len(d.stack)-d.stackFloor() < 3 {
				return nil, d.unsupported("SETITEM needs a dict, a key and a value")
			}
			err = d.setItems(len(d.stack) - 2)
		case opAppends:
			var m int
			if m, err = d.popMark(); err == nil {
				err = d.appends(m)
			}
		case opAppend:
			if len(d.stack)-d.stackFloor() < 2 {
				return nil, d.unsupported("APPEND needs a list and an item")
			}
			err = d.appends(len(d.stack) - 1)
		case opStop:
			if d.frameEnd != 0 {
				if err := d.frameFits(); err != nil {
					return nil, err
				}
			}
			return d.stop()
		case opGlobal, opStackGlobal, opReduce, opBuild, opInst, opObj, opNewObj, opNewObjEx,
			opExt1, opExt2, opExt4, opPersID, opBinPersID:
			return nil, d.fail("opcode 0x%02x (%s) would load a Python object; snapshots hold only plain data", op, fastOpName(op))
		default:
			if fastKnownOpcode(op) {
				return nil, d.unsupported("opcode 0x%02x (%s)", op, fastOpName(op))
			}
			return nil, d.fail("unknown pickle opcode 0x%02x", op)
		}
		if err != nil {
			return nil, err
		}
	}
}

// truncatedAtOp words a missing opcode as a missing STOP.
func (d *fastDecoder) truncatedAtOp(err error) error {
	var e *input.Error
	if errors.As(err, &e) && d.eof {
		return &input.Error{File: d.name, Offset: d.opStart, Msg: "truncated: the pickle ends without a STOP opcode"}
	}
	return err
}

// frameFits checks at STOP that the current frame's claimed length does not run past the end of the file,
// reading (and discarding) the rest of the frame.
func (d *fastDecoder) frameFits() error {
	rest := d.frameEnd - (d.base + int64(d.pos))
	d.frameEnd = 0
	d.setLim()
	for rest > 0 {
		chunk := int(min(rest, int64(fastInitialBuf)))
		if _, err := d.need(chunk); err != nil {
			var e *input.Error
			if errors.As(err, &e) {
				return d.unsupported("a FRAME longer than the file")
			}
			return err
		}
		rest -= int64(chunk)
	}
	return nil
}

func (d *fastDecoder) long(n int) error {
	if n > fastMaxLongBytes {
		return d.unsupported("integer of %d bytes", n)
	}
	b, err := d.need(n)
	if err != nil {
		return err
	}
	v, ok := longVal(b)
	if !ok {
		return d.unsupported("integer beyond 64 bits")
	}
	return d.push(v)
}

// longVal decodes the payload of a LONG1 or LONG4 of at most fastMaxLongBytes bytes (little-endian two's
// complement); false when the value needs more than 64 bits.
func longVal(b []byte) (val, bool) {
	n := len(b)
	if n == 0 {
		return val{k: vInt}, true
	}
	var u uint64
	for i := min(n, 8) - 1; i >= 0; i-- {
		u = u<<8 | uint64(b[i])
	}
	neg := b[n-1]&0x80 != 0
	if n == 9 {
		if b[8] != 0 {
			return val{}, false
		}
		if u > math.MaxInt64 {
			return val{k: vUint, n: int64(u)}, true
		}
		return val{k: vInt, n: int64(u)}, true
	}
	if neg && n < 8 {
		u |= ^uint64(0) << (8 * uint(n)) // sign-extend
	}
	return val{k: vInt, n: int64(u)}, true
}

// strLen pushes a string of a 4- or 8-byte length prefix, refusing one longer than any snapshot string as the
// pre-scan does.
func (d *fastDecoder) strLen(n uint64) error {
	if n > maxStringBytes {
		return d.fail("%s", longStringMsg(n))
	}
	return d.str(int(n))
}

// str pushes a string, interned: snapshots repeat the same few thousand file and function names millions of
// times, and the memo often cannot share them because each frame dict was built with fresh str objects.
func (d *fastDecoder) str(n int) error {
	b, err := d.need(n)
	if err != nil {
		return err
	}
	id, ok := d.intern(b)
	if !ok {
		return d.unsupported("string that is not valid UTF-8")
	}
	return d.push(val{k: vStr, n: int64(id)})
}

// intern returns the id of string b, adding it to the string table when new; false when b is not valid UTF-8.
func (d *fastDecoder) intern(b []byte) (int32, bool) {
	id, ok := d.strID[string(b)]
	if !ok {
		if !utf8.Valid(b) {
			return 0, false
		}
		s := string(b)
		id = int32(len(d.strs))
		d.strs = append(d.strs, s)
		d.strKey = append(d.strKey, fieldOf[s])
		a, _ := ParseAction(s)
		d.strAct = append(d.strAct, a)
		d.strID[s] = id
	}
	return id, true
}

func (d *fastDecoder) tupleN(n int) error {
	if n > len(d.stack)-d.stackFloor() {
		return d.unsupported("tuple of %d items with fewer on the stack", n)
	}
	items := d.stack[len(d.stack)-n:]
	var v val
	if n == 2 && items[0].k == vInt && items[1].k == vInt {
		v = val{k: vPair, n: items[0].n, n2: items[1].n}
	} else {
		if n > fastMaxGeneric {
			return d.unsupported("tuple of %d items", n)
		}
		for _, it := range items {
			if !d.harmless(it) {
				return d.unsupported("a tuple holding a %s", kindWord(it.k))
			}
		}
		l := &listObj{kind: lTupleItems}
		l.m().items = append([]val(nil), items...)
		v = d.newList(vTuple, l)
	}
	d.stack = d.stack[:len(d.stack)-n]
	return d.push(v)
}

func (d *fastDecoder) memoStore(idx uint64) error {
	if len(d.stack) == d.stackFloor() {
		return d.unsupported("memo store with an empty stack")
	}
	top := &d.stack[len(d.stack)-1]
	var c uint64
	switch top.k {
	case vStr:
		c = cellStr | uint64(top.n)
	case vFrame:
		c = cellFrame | uint64(top.n)
	case vList:
		c = cellList | uint64(top.n)
		d.lists[top.n].memo = idx + 1
	case vDict:
		if top.n >= 0 {
			return d.unsupported("a dict stored twice in the memo")
		}
		top.n = int64(idx)
		c = cellPending
	case vEntry, vSegment, vBlock, vHist, vAnnotation, vSettings, vTop:
		c = cellGone
	default:
		c = cellVal | uint64(len(d.memoVals))
		d.memoVals = append(d.memoVals, *top)
	}
	d.setMemo(idx, c)
	return nil
}

// setMemo stores a memo cell. Indexes are dense in every real pickle; one far past the end goes to a map so
// that a hostile index cannot make the memo allocate gigabytes.
func (d *fastDecoder) setMemo(idx, c uint64) {
	d.forgetKey(idx)
	if d.getMemo(idx) == cellEmpty {
		d.memoN++
	}
	if idx < d.memo.len() {
		d.memo.set(idx, c)
		return
	}
	if idx > d.memo.len()+fastMaxMemoGap {
		if d.sparse == nil {
			d.sparse = make(map[uint64]uint64)
		}
		d.sparse[idx] = c
		return
	}
	for d.memo.len() < idx {
		d.memo.push(cellEmpty)
	}
	d.memo.push(c)
}

func (d *fastDecoder) getMemo(idx uint64) uint64 {
	if idx < d.memo.len() {
		return d.memo.at(idx)
	}
	if d.sparse == nil {
		return cellEmpty // every record's own memo store asks for the next cell: no map call for it
	}
	return d.sparse[idx]
}

func (d *fastDecoder) memoGet(idx uint64) error {
	c := d.getMemo(idx)
	v, ok := d.cellValue(c)
	if !ok {
		switch c & cellKind {
		case cellPending:
			return d.unsupported("reference to a dict that is still being built")
		case cellGone:
			return d.unsupported("a record referenced twice through the memo")
		default:
			return d.unsupported("memo key %d was never stored", idx)
		}
	}
	return d.push(v)
}

// cellValue returns the value a memo cell holds; false for a cell that no value can be read from (empty, a dict
// being built, a record already converted).
func (d *fastDecoder) cellValue(c uint64) (val, bool) {
	p := c &^ cellKind
	switch c & cellKind {
	case cellStr:
		return val{k: vStr, n: int64(p)}, true
	case cellFrame:
		return val{k: vFrame, n: int64(p)}, true
	case cellList:
		return val{k: vList, n: int64(p)}, true
	case cellStack:
		return val{k: vList, n: int64(p >> stackShift), n2: int64(p&stackMask) + 1}, true
	case cellVal:
		return d.memoVals[p], true
	}
	return val{}, false
}

// setItems fills the dict at stack[m-1] with the key/value pairs stack[m:].
func (d *fastDecoder) setItems(m int) error {
	if m < 1 {
		return d.unsupported("SETITEMS without a dict")
	}
	pairs := d.stack[m:]
	if len(pairs)%2 != 0 {
		return d.unsupported("SETITEMS with an odd number of items")
	}
	target := &d.stack[m-1]
	switch target.k {
	case vDict:
		v, err := d.convertDict(pairs, target.n)
		if err != nil {
			return err
		}
		*target = v
	case vGenDict:
		if len(d.lOf(*target).more.items)+len(pairs) > 2*fastMaxGeneric {
			return d.unsupported("dict of more than %d items", fastMaxGeneric)
		}
		d.lOf(*target).more.items = append(d.lOf(*target).more.items, pairs...)
	default:
		return d.unsupported("SETITEMS on a %s (a dict filled twice, or not a dict)", kindWord(target.k))
	}
	d.stack = d.stack[:m]
	return nil
}

// appends adds stack[m:] to the list at stack[m-1].
func (d *fastDecoder) appends(m int) error {
	if m < 1 || d.stack[m-1].k != vList {
		return d.unsupported("APPENDS without a list")
	}
	l := d.lOf(d.stack[m-1])
	if l.sealed {
		return d.unsupported("a list grown after it was used")
	}
	items := d.stack[m:]
	if len(items) == 0 {
		d.stack = d.stack[:m]
		return nil
	}
	want := itemListKind(items[0])
	if l.kind == lEmpty {
		l.kind = want
	} else if l.kind != want {
		return d.unsupported("a list mixing %s and %s", l.kind, want)
	}
	var err error
	switch l.kind {
	case lFrames:
		// One APPENDS carries a whole frames list (pickle batches a thousand items): grown once, not by doubling
		// from one frame (16 % of the analysis of a real 31 MB inference snapshot whose every event has its own
		// list).
		l.idx = slices.Grow(l.idx, len(items))
		for _, it := range items {
			if it.k != vFrame {
				return d.unsupported("a frames list holding a %s", kindWord(it.k))
			}
			l.idx = append(l.idx, int32(it.n))
		}
	case lEntries:
		for _, it := range items {
			if it.k != vEntry {
				return d.unsupported("a trace holding a %s", kindWord(it.k))
			}
		}
		d.addEntries(l.m(), items)
		d.taken(len(items))
	case lSegments:
		err = takeRecords(d, items, vSegment, "a segment list", d.pSegs, &l.m().segs)
	case lBlocks:
		err = takeRecords(d, items, vBlock, "a block list", d.pBlocks, &l.m().blocks)
	case lHists:
		err = takeRecords(d, items, vHist, "a history list", d.pHists, &l.m().hists)
	case lAnnotations:
		err = takeRecords(d, items, vAnnotation, "an annotation list", d.pAnns, &l.m().anns)
	case lTraces:
		mm := l.m()
		for _, it := range items {
			if it.k != vList {
				return d.unsupported("device_traces holding a %s", kindWord(it.k))
			}
			tl := d.lOf(it)
			switch tl.kind {
			case lEmpty:
				mm.traces = append(mm.traces, []TraceEntry{})
			case lEntries:
				mm.traces = append(mm.traces, tl.more.traceEntries())
			default:
				return d.unsupported("device_traces holding a list of %s", tl.kind)
			}
			tl.sealed = true
		}
	case lOther:
		mm := l.m()
		for _, it := range items {
			switch it.k {
			case vNone, vBool, vInt, vUint, vFloat, vStr, vPair:
			default:
				return d.unsupported("a list mixing records and plain values")
			}
		}
		mm.count += len(items)
	default:
		return d.unsupported("a list of %s", l.kind)
	}
	if err != nil {
		return err
	}
	d.stack = d.stack[:m]
	return nil
}

// takeRecords appends the pending records that items refer to onto dst; every item must be of kind k, and
// what names the list in the error.
func takeRecords[T any](d *fastDecoder, items []val, k vkind, what string, pending []T, dst *[]T) error {
	*dst = slices.Grow(*dst, len(items)) // a segment's block list arrives whole
	for _, it := range items {
		if it.k != k {
			return d.unsupported("%s holding a %s", what, kindWord(it.k))
		}
		*dst = append(*dst, pending[it.n])
	}
	d.taken(len(items))
	return nil
}

// taken notes that n pending records left the stack; once none is left the buffers are reused.
func (d *fastDecoder) taken(n int) {
	d.live -= n
	if d.live == 0 {
		d.pEntries = d.pEntries[:0]
		d.pSegs = d.pSegs[:0]
		d.pBlocks = d.pBlocks[:0]
		d.pHists = d.pHists[:0]
		d.pAnns = d.pAnns[:0]
	}
}

// itemListKind says what kind of list an item makes.
func itemListKind(v val) lkind {
	switch v.k {
	case vFrame:
		return lFrames
	case vEntry:
		return lEntries
	case vSegment:
		return lSegments
	case vBlock:
		return lBlocks
	case vHist:
		return lHists
	case vAnnotation:
		return lAnnotations
	case vList:
		return lTraces
	}
	return lOther
}

func (d *fastDecoder) stop() (*Snapshot, error) {
	if len(d.stack) != 1 || len(d.marks) != 0 {
		return nil, d.unsupported("STOP with %d values and %d marks on the stack", len(d.stack), len(d.marks))
	}
	if d.live != 0 {
		return nil, d.unsupported("records left outside any list")
	}
	v := d.stack[0]
	var s *Snapshot
	switch v.k {
	case vTop:
		s = d.top
	case vList:
		switch d.lOf(v).kind {
		case lSegments:
			s = &Snapshot{Segments: d.lOf(v).more.segs}
		case lEmpty:
			s = &Snapshot{Segments: []Segment{}}
		default:
			return nil, d.unsupported("top-level list of %s", d.lOf(v).kind)
		}
		s.BareList = true
	default:
		return nil, d.unsupported("top-level %s", kindWord(v.k))
	}
	s.Protocol = d.proto
	s.TorchFormat = d.fmt.torchFormat(s)
	return s, nil
}

// torchFormat names the generation from the keys seen, newest evidence first, by the reference decoder's rule
// (formatMarks.torchFormat).
func (f formatFlags) torchFormat(s *Snapshot) string {
	switch {
	case s.BareList:
		return "list"
	case f.userMetadata:
		return "2.10+"
	case f.compileContext:
		return "2.8+"
	case f.annotations:
		return "2.5+"
	case f.settings:
		return "2.3+"
	case f.timeUS:
		return "2.2+"
	case f.blockAddress || f.expandable || f.segFrames || f.poolID:
		return "2.1+"
	case f.history || f.noBlockAddress:
		return "2.0-history"
	}
	return "2.0"
}

func (k lkind) String() string {
	switch k {
	case lEmpty:
		return "nothing"
	case lFrames:
		return "frames"
	case lEntries:
		return "trace entries"
	case lSegments:
		return "segments"
	case lBlocks:
		return "blocks"
	case lHists:
		return "history entries"
	case lTraces:
		return "lists"
	case lAnnotations:
		return "annotations"
	case lTupleItems:
		return "tuple items"
	case lDictItems:
		return "dict items"
	}
	return "plain values"
}

func kindWord(k vkind) string {
	switch k {
	case vNone:
		return "None"
	case vBool:
		return "bool"
	case vInt, vUint:
		return "int"
	case vFloat:
		return "float"
	case vStr:
		return "str"
	case vPair, vTuple:
		return "tuple"
	case vDict, vGenDict:
		return "dict"
	case vList:
		return "list"
	case vFrame:
		return "frame"
	case vEntry:
		return "trace entry"
	case vSegment:
		return "segment"
	case vBlock:
		return "block"
	case vHist:
		return "history entry"
	case vAnnotation:
		return "annotation"
	case vSettings:
		return "allocator settings"
	case vTop:
		return "snapshot dict"
	}
	return "value"
}

// fastKnownOpcode reports whether op is a valid pickle opcode (protocols 0 to 5).
func fastKnownOpcode(op byte) bool {
	switch op {
	case opMark, opStop, opPop, opPopMark, opDup, opFloat, opInt, opBinInt, opBinInt1, opLong, opBinInt2,
		opNone, opPersID, opBinPersID, opReduce, opString, opBinString, opShortBinString, opUnicode,
		opBinUnicode, opAppend, opBuild, opGlobal, opDict, opEmptyDict, opAppends, opGet, opBinGet, opInst,
		opLongBinGet, opList, opEmptyList, opObj, opPut, opBinPut, opLongBinPut, opSetItem, opTuple,
		opEmptyTuple, opSetItems, opBinFloat, opProto, opNewObj, opExt1, opExt2, opExt4, opTuple1, opTuple2,
		opTuple3, opNewTrue, opNewFalse, opLong1, opLong4, opBinBytes, opShortBinBytes, opShortBinUni,
		opBinUnicode8, opBinBytes8, opEmptySet, opAddItems, opFrozenSet, opNewObjEx, opStackGlobal, opMemoize,
		opFrame, opByteArray8, opNextBuffer, opReadOnlyBuffer:
		return true
	}
	return false
}

func fastOpName(op byte) string {
	switch op {
	case opGlobal:
		return "GLOBAL"
	case opStackGlobal:
		return "STACK_GLOBAL"
	case opReduce:
		return "REDUCE"
	case opBuild:
		return "BUILD"
	case opInst:
		return "INST"
	case opObj:
		return "OBJ"
	case opNewObj:
		return "NEWOBJ"
	case opNewObjEx:
		return "NEWOBJ_EX"
	case opExt1, opExt2, opExt4:
		return "EXT"
	case opPersID, opBinPersID:
		return "PERSID"
	}
	return fmt.Sprintf("opcode %q", rune(op))
}
