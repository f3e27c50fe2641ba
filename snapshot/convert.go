package snapshot

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/memscan/memscan/internal/input"
	"github.com/nlpodyssey/gopickle/types"
)

// This file is the single place where a decoded snapshot value (from a pickle or from its JSON rendition) becomes
// the typed model. Every fallback of the format notes lives here:
//   - block requested_size -> history[0].real_size -> size
//   - block address -> computed cumulatively from the segment address
//   - block frames -> history[0].frames -> nil
//   - trace time_us optional (HasTime), segment_pool_id default (0, 0), is_expandable default false
// Other decoders of the same data (such as a streaming one) must produce exactly what this code produces.

// maxBytes bounds every size field: 8 PiB is far beyond any device, and keeps sums of millions of blocks far from
// overflowing int64. oom trace entries may carry an absurd request (that is why they failed), so they get the
// whole int64 range.
const maxBytes = 1 << 53

// maxDevice bounds device ordinals.
const maxDevice = 1 << 16

// ctxCheckEvery is how many trace entries or blocks pass between context checks.
const ctxCheckEvery = 1024

// pathElem is one step of a field path: a key, or an index when key is empty.
type pathElem struct {
	key string
	idx int
}

// formatMarks records which format generations' keys were seen.
type formatMarks struct {
	history, noBlockAddr, gen21, timeUS, allocSettings, extAnn, compileCtx, userMeta bool
}

// converter turns one generic value tree into a Snapshot.
type converter struct {
	ctx    context.Context
	name   string
	path   []pathElem
	stacks map[any]*Stack // converted frame lists, keyed by the identity of the decoded list object
	// frames caches converted frame dicts of a pickle by identity: real snapshots memoize each distinct frame
	// dict once and reference it from many lists that are not themselves shared.
	frames map[*types.Dict]Frame
	marks  formatMarks
	// traceTabs holds the tables the trace entries index, tables adds to them, and byFrames finds a trace stack's
	// index by its frames (the fast decoder gives equal lists one stack even when the pickle does not share
	// them); traceRefs remembers it by the converted list, so that a list shared through the memo is keyed once.
	traceTabs Snapshot
	tables    *TraceTables
	byFrames  map[string]StackRef
	traceRefs map[*Stack]StackRef
	ticks     int
	// budget is how many more model objects (segments, blocks, history entries, trace entries, annotations,
	// frames) the conversion may create; negative means unlimited. A pickle can reference one large dict or list
	// from many places through its memo, so without a bound a small file could expand into a huge model.
	budget int64
}

// convertSnapshot converts the decoded top-level value of a snapshot file: a dict with "segments", or a bare
// list of segments.
//
// budget bounds the number of model objects created (negative: unlimited). The pickle path passes a bound
// proportional to the file size: every object of a genuine snapshot takes at least a few bytes of the file,
// since frame lists, the only thing PyTorch's snapshots share, convert once however often they are referenced.
func convertSnapshot(ctx context.Context, name string, v any, budget int64) (*Snapshot, error) {
	c := &converter{ctx: ctx, name: name, stacks: make(map[any]*Stack), frames: make(map[*types.Dict]Frame), budget: budget,
		byFrames: map[string]StackRef{}, traceRefs: map[*Stack]StackRef{}}
	c.tables = NewTraceTables(&c.traceTabs)
	s, err := c.snapshot(v)
	if err == nil && c.tables.overflow {
		return nil, c.errf("", "more than %d distinct trace stacks, streams or extras", maxTableRefs)
	}
	if s != nil {
		s.TraceStacks, s.TraceExtras, s.TraceStreams = c.traceTabs.TraceStacks, c.traceTabs.TraceExtras, c.traceTabs.TraceStreams
	}
	return s, err
}

// spend charges n new model objects against the budget.
func (c *converter) spend(field string, n int) error {
	if c.budget < 0 {
		return nil
	}
	c.budget -= int64(n)
	if c.budget < 0 {
		return c.errf(field, "the file expands to more objects than its size allows (shared references repeated too often); refusing to build it")
	}
	return nil
}

// decodeSnapshotJSON converts an already-parsed JSON value (encoding/json with UseNumber) of a snapshot dict or a
// bare segment list into the model, with the same semantics as the pickle path.
func decodeSnapshotJSON(name string, v any) (*Snapshot, error) {
	// JSON has no shared references, so its size already bounds the model.
	return convertSnapshot(context.Background(), name, v, -1)
}

func (c *converter) push(key string) { c.path = append(c.path, pathElem{key: key}) }
func (c *converter) pushIdx(i int)   { c.path = append(c.path, pathElem{idx: i}) }
func (c *converter) pop()            { c.path = c.path[:len(c.path)-1] }

func (c *converter) pathString(field string) string {
	var b strings.Builder
	for _, e := range c.path {
		if e.key == "" {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(e.idx))
			b.WriteByte(']')
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(e.key)
	}
	if field != "" {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(field)
	}
	return b.String()
}

// errf reports a problem with field (relative to the current path; "" for the current value itself).
func (c *converter) errf(field, format string, args ...any) error {
	return &input.Error{File: c.name, Offset: -1, Field: c.pathString(field), Msg: fmt.Sprintf(format, args...)}
}

func (c *converter) badKey(k, _ any) error {
	return c.errf("", "dict key of type %s, want str", typeName(k))
}

// tick checks for cancellation every ctxCheckEvery calls.
func (c *converter) tick() error {
	c.ticks++
	if c.ticks%ctxCheckEvery == 0 {
		return c.ctx.Err()
	}
	return nil
}

// convertList converts the items of the list at field into a new slice, charging them against the budget and
// reporting errors under field[i]. check, when not nil, runs before each item (for cancellation).
func convertList[T any](c *converter, field string, items []any, check func() error, fn func(*T, any) error) ([]T, error) {
	if err := c.spend(field, len(items)); err != nil {
		return nil, err
	}
	c.push(field)
	defer c.pop()
	return convertItems(c, items, check, fn)
}

// convertItems is convertList for a list whose path is already current and whose cost is already charged.
func convertItems[T any](c *converter, items []any, check func() error, fn func(*T, any) error) ([]T, error) {
	out := make([]T, len(items))
	for i, it := range items {
		if check != nil {
			if err := check(); err != nil {
				return nil, err
			}
		}
		c.pushIdx(i)
		err := fn(&out[i], it)
		c.pop()
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (c *converter) dict(field string, v any) (dictView, error) {
	d, ok := asDict(v)
	if !ok {
		return d, c.errf(field, "got %s, want dict", typeName(v))
	}
	return d, nil
}

func (c *converter) list(field string, v any) ([]any, any, error) {
	items, id, ok := asList(v)
	if !ok {
		return nil, nil, c.errf(field, "got %s, want list", typeName(v))
	}
	return items, id, nil
}

func (c *converter) str(field string, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", c.errf(field, "got %s, want str", typeName(v))
	}
	return s, nil
}

// text accepts any value for a free-form string field, rendering non-strings; None is empty.
func (c *converter) text(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	}
	return renderValue(v)
}

func (c *converter) boolean(field string, v any) (bool, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case nil:
		return false, nil
	}
	// Python bools are ints; a C++ writer could emit 0/1.
	if n, _, cl := intOf(v); cl == intSigned && (n == 0 || n == 1) {
		return n == 1, nil
	}
	return false, c.errf(field, "got %s, want bool", typeName(v))
}

// size reads a byte count in [0, limit].
func (c *converter) size(field string, v any, limit int64) (int64, error) {
	n, _, cl := intOf(v)
	switch cl {
	case notInt:
		return 0, c.errf(field, "got %s, want int", typeName(v))
	case intUnsigned, intHuge:
		return 0, c.errf(field, "absurd size (%s bytes)", renderValue(v))
	}
	if n < 0 {
		return 0, c.errf(field, "negative (%d)", n)
	}
	if n > limit {
		return 0, c.errf(field, "absurd size (%d bytes, limit %d)", n, limit)
	}
	return n, nil
}

// signed reads an int64 in [min, max].
func (c *converter) signed(field string, v any, min, max int64) (int64, error) {
	n, _, cl := intOf(v)
	switch cl {
	case notInt:
		return 0, c.errf(field, "got %s, want int", typeName(v))
	case intUnsigned, intHuge:
		return 0, c.errf(field, "out of range (%s)", renderValue(v))
	}
	if n < min || n > max {
		return 0, c.errf(field, "out of range (%d, want %d..%d)", n, min, max)
	}
	return n, nil
}

// device reads a device ordinal in [-1, maxDevice].
func (c *converter) device(field string, v any) (int, error) {
	n, err := c.signed(field, v, -1, maxDevice)
	return int(n), err
}

// address reads a device address: any value in [0, 2^64).
func (c *converter) address(field string, v any) (uint64, error) {
	n, u, cl := intOf(v)
	switch cl {
	case notInt:
		return 0, c.errf(field, "got %s, want int", typeName(v))
	case intHuge:
		return 0, c.errf(field, "address beyond 64 bits (%s)", renderValue(v))
	case intSigned:
		if n < 0 {
			return 0, c.errf(field, "negative address (%d)", n)
		}
	}
	return u, nil
}

// handle reads a raw handle such as a cudaStream_t; negative values keep their two's-complement bits, since
// writers differ in whether they print the pointer signed.
func (c *converter) handle(field string, v any) (uint64, error) {
	n, u, cl := intOf(v)
	switch cl {
	case notInt:
		return 0, c.errf(field, "got %s, want int", typeName(v))
	case intHuge:
		return 0, c.errf(field, "beyond 64 bits (%s)", renderValue(v))
	case intSigned:
		return uint64(n), nil
	}
	return u, nil
}

func (c *converter) poolID(field string, v any) (PoolID, error) {
	items, ok := asSequence(v)
	if !ok || len(items) != 2 {
		if ok {
			return PoolID{}, c.errf(field, "%d items, want a pair of ints", len(items))
		}
		return PoolID{}, c.errf(field, "got %s, want a pair of ints", typeName(v))
	}
	var p PoolID
	for i, it := range items {
		n, u, cl := intOf(it)
		switch cl {
		case intSigned:
			p[i] = n
		case intUnsigned:
			p[i] = int64(u) // keep the bits of an unsigned 64-bit id
		default:
			return PoolID{}, c.errf(field, "item %d: got %s, want int", i, typeName(it))
		}
	}
	return p, nil
}

// stack converts a frames list. Lists shared through the pickle memo convert once and share one *Stack.
func (c *converter) stack(field string, v any) (*Stack, error) {
	if v == nil {
		return nil, nil
	}
	items, id, err := c.list(field, v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, nil
	}
	if st, ok := c.stacks[id]; ok {
		return st, nil
	}
	frames, err := convertList(c, field, items, nil, func(f *Frame, it any) (err error) {
		*f, err = c.frame(it)
		return err
	})
	if err != nil {
		return nil, err
	}
	st := &Stack{Frames: frames}
	c.stacks[id] = st
	return st, nil
}

// traceStack returns the index in the trace tables of a trace entry's frames list v.
func (c *converter) traceStack(field string, v any) (StackRef, error) {
	st, err := c.stack(field, v)
	if err != nil || st == nil {
		return 0, err
	}
	if r, ok := c.traceRefs[st]; ok {
		return r, nil
	}
	var key strings.Builder
	for _, f := range st.Frames {
		fmt.Fprintf(&key, "%d\x00%s\x00%s\x00", f.Line, f.Filename, f.Name)
	}
	r, ok := c.byFrames[key.String()]
	if !ok {
		r = c.tables.Stack(st)
		c.byFrames[key.String()] = r
	}
	c.traceRefs[st] = r
	return r, nil
}

func (c *converter) frame(v any) (Frame, error) {
	pd, shared := v.(*types.Dict)
	if shared {
		if f, ok := c.frames[pd]; ok {
			return f, nil
		}
	}
	var f Frame
	d, err := c.dict("", v)
	if err != nil {
		return f, err
	}
	err = d.each(func(k string, v any) error {
		var err error
		switch k {
		case "filename":
			f.Filename, err = c.str(k, v)
		case "name":
			f.Name, err = c.str(k, v)
		case "line":
			// Unknown lines are written as -1 through an unsigned type (2^64-1 in real files); keeping the
			// two's-complement bits turns them back into -1.
			var u uint64
			u, err = c.handle(k, v)
			f.Line = int(int64(u))
		}
		return err
	}, c.badKey)
	if err != nil {
		return Frame{}, err
	}
	if shared {
		c.frames[pd] = f
	}
	return f, nil
}

func (c *converter) snapshot(v any) (*Snapshot, error) {
	s := &Snapshot{}
	if items, _, ok := asList(v); ok {
		s.BareList = true
		s.TorchFormat = "list"
		if len(items) > 0 {
			if _, isDict := asDict(items[0]); !isDict {
				return nil, c.errf("", "not a snapshot: a list of %s, want a dict with 'segments' or a list of segment dicts", typeName(items[0]))
			}
		}
		segs, err := c.segments("segments", v)
		if err != nil {
			return nil, err
		}
		s.Segments = segs
		return s, nil
	}
	d, ok := asDict(v)
	if !ok {
		return nil, c.errf("", "not a snapshot: the top-level value is %s, want a dict with 'segments' or a list of segment dicts", typeName(v))
	}
	if _, ok := d.get("segments"); !ok {
		return nil, c.errf("", "not a snapshot: the top-level dict has no 'segments' key (keys: %s)", strings.Join(d.keys(8), ", "))
	}
	err := d.each(func(k string, v any) error {
		var err error
		switch k {
		case "segments":
			s.Segments, err = c.segments(k, v)
		case "device_traces":
			s.DeviceTraces, err = c.traces(k, v)
		case "allocator_settings":
			c.marks.allocSettings = true
			if v != nil {
				s.AllocatorSettings, err = c.allocatorSettings(k, v)
			}
		case "external_annotations":
			c.marks.extAnn = true
			s.ExternalAnnotations, err = c.annotations(k, v)
		case "host_segments":
			s.HostSegments, err = c.segments(k, v)
		case "host_traces":
			s.HostTraces, err = c.traces(k, v)
		}
		return err
	}, c.badKey)
	if err != nil {
		return nil, err
	}
	s.TorchFormat = c.marks.torchFormat()
	return s, nil
}

// torchFormat names the newest format generation whose keys were seen.
func (m formatMarks) torchFormat() string {
	switch {
	case m.userMeta:
		return "2.10+"
	case m.compileCtx:
		return "2.8+"
	case m.extAnn:
		return "2.5+"
	case m.allocSettings:
		return "2.3+"
	case m.timeUS:
		return "2.2+"
	case m.gen21:
		return "2.1+"
	case m.history || m.noBlockAddr:
		return "2.0-history"
	}
	return "2.0"
}

func (c *converter) segments(field string, v any) ([]Segment, error) {
	items, _, err := c.list(field, v)
	if err != nil {
		return nil, err
	}
	// Segments are few and large: check the context before each one.
	return convertList(c, field, items, c.ctx.Err, c.segment)
}

// Segment keys that every dict-form version writes.
var requiredSegmentKeys = []string{"device", "address", "total_size", "allocated_size", "active_size", "stream", "segment_type", "blocks"}

func (c *converter) segment(seg *Segment, v any) error {
	d, err := c.dict("", v)
	if err != nil {
		return err
	}
	var blocks any
	var seen uint8 // bit i set when requiredSegmentKeys[i] was present
	err = d.each(func(k string, v any) error {
		var err error
		switch k {
		case "device":
			seen |= 1 << 0
			seg.Device, err = c.device(k, v)
		case "address":
			seen |= 1 << 1
			seg.Address, err = c.address(k, v)
		case "total_size":
			seen |= 1 << 2
			seg.TotalSize, err = c.size(k, v, maxBytes)
		case "allocated_size":
			seen |= 1 << 3
			seg.AllocatedSize, err = c.size(k, v, maxBytes)
		case "active_size":
			seen |= 1 << 4
			seg.ActiveSize, err = c.size(k, v, maxBytes)
		case "stream":
			seen |= 1 << 5
			seg.Stream, err = c.handle(k, v)
		case "segment_type":
			seen |= 1 << 6
			var s string
			s, err = c.str(k, v)
			seg.Type = SegmentType(s)
		case "blocks":
			seen |= 1 << 7
			blocks = v
		case "requested_size":
			seg.RequestedSize, err = c.size(k, v, maxBytes)
		case "segment_pool_id":
			c.marks.gen21 = true
			seg.Pool, err = c.poolID(k, v)
		case "is_expandable":
			c.marks.gen21 = true
			seg.IsExpandable, err = c.boolean(k, v)
		case "frames":
			c.marks.gen21 = true
			seg.Stack, err = c.stack(k, v)
		}
		return err
	}, c.badKey)
	if err != nil {
		return err
	}
	for i, k := range requiredSegmentKeys {
		if seen&(1<<i) == 0 {
			return c.errf(k, "missing")
		}
	}
	return c.blocks(seg, blocks)
}

func (c *converter) blocks(seg *Segment, v any) error {
	items, _, err := c.list("blocks", v)
	if err != nil {
		return err
	}
	next := seg.Address // cumulative address of the next block
	seg.Blocks, err = convertList(c, "blocks", items, c.tick, func(b *Block, it any) error {
		err := c.block(b, it, next)
		next += uint64(b.Size)
		return err
	})
	return err
}

func (c *converter) block(b *Block, v any, cumulative uint64) error {
	d, err := c.dict("", v)
	if err != nil {
		return err
	}
	var (
		hasSize, hasState, hasAddr, hasRequested, hasFrames bool
	)
	err = d.each(func(k string, v any) error {
		var err error
		switch k {
		case "size":
			hasSize = true
			b.Size, err = c.size(k, v, maxBytes)
		case "requested_size":
			hasRequested = true
			b.RequestedSize, err = c.size(k, v, maxBytes)
		case "state":
			hasState = true
			b.State, err = c.blockState(k, v)
		case "address":
			hasAddr = true
			b.Address, err = c.address(k, v)
		case "frames":
			hasFrames = true
			b.Stack, err = c.stack(k, v)
		case "history":
			c.marks.history = true
			b.History, err = c.history(k, v)
		}
		return err
	}, c.badKey)
	if err != nil {
		return err
	}
	if !hasSize {
		return c.errf("size", "missing")
	}
	if !hasState {
		return c.errf("state", "missing")
	}
	if hasAddr {
		c.marks.gen21 = true
	} else {
		c.marks.noBlockAddr = true
		b.Address = cumulative
	}
	if !hasRequested {
		b.RequestedSize = b.Size
		if len(b.History) > 0 {
			b.RequestedSize = b.History[0].RealSize
		}
	}
	if !hasFrames && len(b.History) > 0 {
		b.Stack = b.History[0].Stack
	}
	return nil
}

func (c *converter) blockState(field string, v any) (BlockState, error) {
	s, err := c.str(field, v)
	if err != nil {
		return 0, err
	}
	switch s {
	case "active_allocated":
		return BlockActiveAllocated, nil
	case "active_pending_free", "active_awaiting_free":
		// The newest TypedDict docstring spells it "active_awaiting_free"; accept both spellings.
		return BlockActivePendingFree, nil
	case "inactive":
		return BlockInactive, nil
	}
	return 0, c.errf(field, "unknown block state %q", s)
}

func (c *converter) history(field string, v any) ([]History, error) {
	items, _, err := c.list(field, v)
	if err != nil {
		return nil, err
	}
	if len(items) == 0 {
		return nil, nil
	}
	return convertList(c, field, items, nil, c.historyEntry)
}

func (c *converter) historyEntry(h *History, v any) error {
	d, err := c.dict("", v)
	if err != nil {
		return err
	}
	var hasSize bool
	err = d.each(func(k string, v any) error {
		var err error
		switch k {
		case "addr":
			h.Addr, err = c.address(k, v)
		case "real_size":
			hasSize = true
			h.RealSize, err = c.size(k, v, maxBytes)
		case "frames":
			h.Stack, err = c.stack(k, v)
		}
		return err
	}, c.badKey)
	if err != nil {
		return err
	}
	if !hasSize {
		return c.errf("real_size", "missing")
	}
	return nil
}

func (c *converter) traces(field string, v any) ([][]TraceEntry, error) {
	if v == nil {
		return nil, nil
	}
	devs, _, err := c.list(field, v)
	if err != nil {
		return nil, err
	}
	if len(devs) > maxDevice {
		return nil, c.errf(field, "%d device traces (limit %d)", len(devs), maxDevice)
	}
	c.push(field)
	defer c.pop()
	out := make([][]TraceEntry, len(devs))
	for dev, dv := range devs {
		c.pushIdx(dev)
		tr, err := c.trace(dv)
		c.pop()
		if err != nil {
			return nil, err
		}
		out[dev] = tr
	}
	return out, nil
}

// trace converts one device's trace; the path already ends at its index.
func (c *converter) trace(v any) ([]TraceEntry, error) {
	entries, _, err := c.list("", v)
	if err != nil {
		return nil, err
	}
	if err := c.spend("", len(entries)+1); err != nil {
		return nil, err
	}
	return convertItems(c, entries, c.tick, c.traceEntry)
}

func (c *converter) traceEntry(e *TraceEntry, v any) error {
	d, err := c.dict("", v)
	if err != nil {
		return err
	}
	var hasAction, hasSize, hasStream bool
	var size any
	var action string
	var x TraceExtra
	err = d.each(func(k string, v any) error {
		var err error
		switch k {
		case "action":
			hasAction = true
			action, err = c.str(k, v)
		case "addr":
			e.Addr, err = c.address(k, v)
		case "size":
			hasSize = true
			size = v // its limit depends on the action
		case "stream":
			hasStream = true
			var h uint64
			h, err = c.handle(k, v)
			e.Stream = c.tables.Stream(h)
		case "time_us":
			c.marks.timeUS = true
			e.HasTime = true
			e.TimeUS, err = c.signed(k, v, math.MinInt64, math.MaxInt64)
		case "device_free":
			x.DeviceFree, err = c.size(k, v, math.MaxInt64)
		case "frames":
			e.Stack, err = c.traceStack(k, v)
		case "compile_context":
			c.marks.compileCtx = true
			x.CompileContext = c.text(v)
		case "user_metadata":
			c.marks.userMeta = true
			x.UserMetadata = c.text(v)
		case "internal_metadata":
			x.InternalMetadata = c.text(v)
		case "category":
			x.Category = c.text(v)
		case "pool_id":
			x.Pool, err = c.poolID(k, v)
		}
		return err
	}, c.badKey)
	if err != nil {
		return err
	}
	if !hasAction {
		return c.errf("action", "missing")
	}
	if !hasSize {
		return c.errf("size", "missing")
	}
	if !hasStream {
		return c.errf("stream", "missing")
	}
	var known bool
	if e.Action, known = ParseAction(action); !known {
		x.OtherAction = action
	}
	e.Extra = c.tables.Extra(x)
	limit := int64(maxBytes)
	if e.Action == ActionOOM {
		limit = math.MaxInt64
	}
	e.Size, err = c.size("size", size, limit)
	return err
}

func (c *converter) annotations(field string, v any) ([]Annotation, error) {
	if v == nil {
		return nil, nil
	}
	items, _, err := c.list(field, v)
	if err != nil {
		return nil, err
	}
	return convertList(c, field, items, c.tick, c.annotation)
}

func (c *converter) annotation(a *Annotation, v any) error {
	d, err := c.dict("", v)
	if err != nil {
		return err
	}
	return d.each(func(k string, v any) error {
		var err error
		switch k {
		case "stage":
			a.Stage = c.text(v)
		case "name":
			a.Name = c.text(v)
		case "device":
			a.Device, err = c.device(k, v)
		case "time_us":
			a.TimeUS, err = c.signed(k, v, math.MinInt64, math.MaxInt64)
		default:
			if a.Extra == nil {
				a.Extra = make(map[string]string)
			}
			a.Extra[k] = c.text(v)
		}
		return err
	}, c.badKey)
}

func (c *converter) allocatorSettings(field string, v any) (*AllocatorSettings, error) {
	d, err := c.dict(field, v)
	if err != nil {
		return nil, err
	}
	c.push(field)
	defer c.pop()
	as := &AllocatorSettings{}
	err = d.each(func(k string, v any) error {
		var err error
		switch k {
		case "PYTORCH_CUDA_ALLOC_CONF":
			if v != nil {
				as.AllocConf, err = c.str(k, v)
			}
		case "max_split_size":
			n, u, cl := intOf(v)
			switch cl {
			case intSigned:
				as.MaxSplitSize = n
			case intUnsigned:
				// SIZE_MAX written unsigned means "no limit", which the signed writers spell -1.
				if u == math.MaxUint64 {
					as.MaxSplitSize = -1
				} else {
					as.MaxSplitSize = math.MaxInt64
				}
			default:
				err = c.errf(k, "got %s, want int", typeName(v))
			}
		case "garbage_collection_threshold":
			f, ok := floatOf(v)
			if !ok {
				err = c.errf(k, "got %s, want float", typeName(v))
			}
			as.GarbageCollectionThreshold = f
		case "expandable_segments":
			as.ExpandableSegments, err = c.boolean(k, v)
		case "pinned_num_register_threads":
			as.PinnedNumRegisterThreads, err = c.signed(k, v, math.MinInt64, math.MaxInt64)
		case "release_lock_on_cudamalloc":
			as.ReleaseLockOnCudaMalloc, err = c.boolean(k, v)
		case "pinned_use_cuda_host_register":
			as.PinnedUseCudaHostRegister, err = c.boolean(k, v)
		case "graph_capture_record_stream_reuse":
			as.GraphCaptureRecordStreamReuse, err = c.boolean(k, v)
		case "roundup_power2_divisions":
			rd, ok := asDict(v)
			if !ok {
				as.setOther(k, renderValue(v))
				return nil
			}
			as.RoundupPower2Divisions = make(map[string]int64, rd.len())
			c.push(k)
			err = rd.each(func(rk string, rv any) error {
				n, err := c.signed(rk, rv, math.MinInt64, math.MaxInt64)
				as.RoundupPower2Divisions[rk] = n
				return err
			}, func(rk, rv any) error {
				// Integer keys are a plausible writer variant; keep them as their decimal text.
				n, _, cl := intOf(rk)
				if cl != intSigned {
					return c.badKey(rk, rv)
				}
				m, err := c.signed(strconv.FormatInt(n, 10), rv, math.MinInt64, math.MaxInt64)
				as.RoundupPower2Divisions[strconv.FormatInt(n, 10)] = m
				return err
			})
			c.pop()
		default:
			as.setOther(k, renderValue(v))
		}
		return err
	}, c.badKey)
	if err != nil {
		return nil, err
	}
	return as, nil
}

func (as *AllocatorSettings) setOther(k, v string) {
	if as.Other == nil {
		as.Other = make(map[string]string)
	}
	as.Other[k] = v
}
