package snapshot

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
)

// Dict keys the fast decoder knows. Each interned string carries its field id, so typing a dict costs one
// table lookup per key.
const (
	fNone uint8 = iota
	fSegments
	fDeviceTraces
	fAllocatorSettings
	fExternalAnnotations
	fHostSegments
	fHostTraces
	fDevice
	fAddress
	fTotalSize
	fAllocatedSize
	fActiveSize
	fRequestedSize
	fStream
	fSegmentType
	fSegmentPoolID
	fIsExpandable
	fFrames
	fBlocks
	fSize
	fState
	fHistory
	fAddr
	fRealSize
	fFilename
	fLine
	fName
	fAction
	fDeviceFree
	fTimeUS
	fCompileContext
	fUserMetadata
	fInternalMetadata
	fCategory
	fPoolID
	fStage
	fAllocConf
	fMaxSplitSize
	fGCThreshold
	fExpandableSegments
	fPinnedThreads
	fReleaseLock
	fPinnedHostRegister
	fGraphCaptureReuse
	fRoundup
	fieldCount
)

var fieldOf = map[string]uint8{
	"segments": fSegments, "device_traces": fDeviceTraces, "allocator_settings": fAllocatorSettings,
	"external_annotations": fExternalAnnotations, "host_segments": fHostSegments, "host_traces": fHostTraces,
	"device": fDevice, "address": fAddress, "total_size": fTotalSize, "allocated_size": fAllocatedSize,
	"active_size": fActiveSize, "requested_size": fRequestedSize, "stream": fStream,
	"segment_type": fSegmentType, "segment_pool_id": fSegmentPoolID, "is_expandable": fIsExpandable,
	"frames": fFrames, "blocks": fBlocks, "size": fSize, "state": fState, "history": fHistory,
	"addr": fAddr, "real_size": fRealSize, "filename": fFilename, "line": fLine, "name": fName,
	"action": fAction, "device_free": fDeviceFree, "time_us": fTimeUS, "compile_context": fCompileContext,
	"user_metadata": fUserMetadata, "internal_metadata": fInternalMetadata, "category": fCategory,
	"pool_id": fPoolID, "stage": fStage,
	"PYTORCH_CUDA_ALLOC_CONF": fAllocConf, "max_split_size": fMaxSplitSize,
	"garbage_collection_threshold": fGCThreshold, "expandable_segments": fExpandableSegments,
	"pinned_num_register_threads": fPinnedThreads, "release_lock_on_cudamalloc": fReleaseLock,
	"pinned_use_cuda_host_register":     fPinnedHostRegister,
	"graph_capture_record_stream_reuse": fGraphCaptureReuse, "roundup_power2_divisions": fRoundup,
}

func bit(f uint8) uint64 { return 1 << f }

// The keys that decide what a dict is. A dict matching two of these is not snapshot shape.
const (
	maskEntry    = 1 << fAction
	maskFrame    = 1 << fFilename
	maskBlock    = 1 << fState
	maskHist     = 1 << fRealSize
	maskAnn      = 1 << fStage
	maskSegment  = 1<<fBlocks | 1<<fTotalSize
	maskTop      = 1<<fSegments | 1<<fDeviceTraces
	maskSettings = 1<<fAllocConf | 1<<fMaxSplitSize | 1<<fGCThreshold | 1<<fExpandableSegments |
		1<<fPinnedThreads | 1<<fReleaseLock | 1<<fPinnedHostRegister | 1<<fGraphCaptureReuse | 1<<fRoundup
)

var roleMasks = [...]uint64{maskEntry, maskFrame, maskBlock, maskHist, maskAnn, maskSegment, maskTop, maskSettings}

// Record kinds, as indexes into roleMasks and roleReads.
const (
	roleEntry = iota
	roleFrame
	roleBlock
	roleHist
	roleAnn
	roleSegment
	roleTop
	roleSettings
	roleNone     = -1 // no key of any record kind: a plain dict
	roleConflict = -2 // keys of two record kinds
)

// dictRole returns the record kind that the keys in present make a dict.
func dictRole(present uint64) int {
	role := roleNone
	for i, m := range roleMasks {
		if present&m != 0 {
			if role >= 0 {
				return roleConflict
			}
			role = i
		}
	}
	return role
}

// roleReads are the keys each record kind reads; any other key's value must be harmless (see harmless).
// Annotations and settings account for every key themselves.
var roleReads = [...]uint64{
	1<<fAction | 1<<fAddr | 1<<fSize | 1<<fStream | 1<<fTimeUS | 1<<fDeviceFree | 1<<fFrames | 1<<fCompileContext |
		1<<fUserMetadata | 1<<fInternalMetadata | 1<<fCategory | 1<<fPoolID,
	1<<fFilename | 1<<fLine | 1<<fName,
	1<<fSize | 1<<fRequestedSize | 1<<fState | 1<<fAddress | 1<<fFrames | 1<<fHistory,
	1<<fAddr | 1<<fRealSize | 1<<fFrames,
	^uint64(0),
	1<<fDevice | 1<<fAddress | 1<<fTotalSize | 1<<fAllocatedSize | 1<<fActiveSize | 1<<fStream | 1<<fSegmentType |
		1<<fBlocks | 1<<fRequestedSize | 1<<fSegmentPoolID | 1<<fIsExpandable | 1<<fFrames,
	1<<fSegments | 1<<fDeviceTraces | 1<<fAllocatorSettings | 1<<fExternalAnnotations | 1<<fHostSegments | 1<<fHostTraces,
	^uint64(0),
}

// harmless reports whether a value can be dropped without changing the result: it holds no record. A record
// (or a list of records) under a key the model ignores would still have been counted in the format marks by
// the reference decoder's rules only if it sat where records belong, so it sends the file there instead.
func (d *fastDecoder) harmless(v val) bool {
	switch v.k {
	case vNone, vBool, vInt, vUint, vFloat, vStr, vPair, vTuple, vDict, vGenDict, vFrame:
		return true
	case vList:
		if v.n >= int64(len(d.lists)) {
			// The fresh frames list the flat reader has read but makes only with its dict (flatFrames): not
			// looked at, so the dict goes to the VM, which makes the list first.
			return false
		}
		switch d.lOf(v).kind {
		case lEmpty, lOther, lFrames:
			return true
		}
	}
	return false
}

// convertDict types a dict from its keys and converts it into a record. memoIdx is the memo cell the dict was
// stored in (-1 if none), updated to what the dict became.
func (d *fastDecoder) convertDict(pairs []val, memoIdx int64) (val, error) {
	var present uint64
	unknown := false // a key that is no field: its value must be checked below
	for i := 0; i < len(pairs); i += 2 {
		k := pairs[i]
		if k.k != vStr {
			return val{}, d.unsupported("dict key of type %s", kindWord(k.k))
		}
		if f := d.strKey[k.n]; f != fNone {
			present |= bit(f)
			d.fields[f] = pairs[i+1]
		} else {
			unknown = true
		}
	}
	role := dictRole(present)
	if role == roleConflict {
		return val{}, d.unsupported("dict with the keys of two record kinds")
	}
	// Only keys outside what the record reads can hold a dropped value; most dicts (every trace entry of a real
	// snapshot) have none, and skip the second pass.
	if role >= 0 && roleReads[role] != ^uint64(0) && (unknown || present&^roleReads[role] != 0) {
		for i := 0; i < len(pairs); i += 2 {
			if f := d.strKey[pairs[i].n]; (f == fNone || roleReads[role]&bit(f) == 0) && !d.harmless(pairs[i+1]) {
				return val{}, d.unsupported("key %q holding a %s", d.sOf(pairs[i]), kindWord(pairs[i+1].k))
			}
		}
	}
	var v val
	var err error
	switch role {
	case roleAnn:
		v, err = d.convertAnnotation(pairs, present)
	case roleSettings:
		v, err = d.convertSettings(pairs, present)
	case roleNone:
		if len(pairs) > 2*fastMaxGeneric {
			return val{}, d.unsupported("dict of %d items", len(pairs)/2)
		}
		for i := 1; i < len(pairs); i += 2 {
			if !d.harmless(pairs[i]) {
				return val{}, d.unsupported("an untyped dict holding a %s", kindWord(pairs[i].k))
			}
		}
		l := &listObj{kind: lDictItems}
		l.m().items = append([]val(nil), pairs...)
		v = d.newList(vGenDict, l)
	default:
		v, err = d.convertRecord(role, present)
	}
	if err != nil {
		return val{}, err
	}
	d.converted(memoIdx, v)
	return v, nil
}

// convertRecord converts a dict of a record kind that reads only its fields (not annotations and settings).
func (d *fastDecoder) convertRecord(role int, present uint64) (val, error) {
	switch role {
	case roleEntry:
		return d.convertEntry(present)
	case roleFrame:
		return d.convertFrame(present)
	case roleBlock:
		return d.convertBlock(present)
	case roleHist:
		return d.convertHist(present)
	case roleSegment:
		return d.convertSegment(present)
	case roleTop:
		return d.convertTop(present)
	}
	return val{}, d.unsupported("record kind %d converted from its fields alone", role)
}

// converted updates memo cell memoIdx (-1: none) of a dict that became v.
func (d *fastDecoder) converted(memoIdx int64, v val) {
	if memoIdx >= 0 {
		switch v.k {
		case vFrame:
			d.setMemo(uint64(memoIdx), cellFrame|uint64(v.n))
		case vGenDict:
			d.setMemo(uint64(memoIdx), cellVal|uint64(len(d.memoVals)))
			d.memoVals = append(d.memoVals, v)
		default:
			d.setMemo(uint64(memoIdx), cellGone)
		}
	}
}

// Typed field access. A field of an unexpected type sends the file to the reference decoder, which words the
// error (or knows a fallback).

func (d *fastDecoder) fInt(f uint8) (int64, error) {
	v := d.fields[f]
	if v.k != vInt {
		return 0, d.unsupported("%s of type %s", fieldName(f), kindWord(v.k))
	}
	return v.n, nil
}

// fSize reads a byte count in [0, limit], the reference decoder's bound.
func (d *fastDecoder) fSize(f uint8, limit int64) (int64, error) {
	v := d.fields[f]
	if v.k != vInt || v.n < 0 || v.n > limit {
		return 0, d.unsupported("%s of type %s or out of range", fieldName(f), kindWord(v.k))
	}
	return v.n, nil
}

// fHandle reads a raw handle (a stream): negative values keep their two's-complement bits.
func (d *fastDecoder) fHandle(f uint8) (uint64, error) {
	v := d.fields[f]
	if v.k != vInt && v.k != vUint {
		return 0, d.unsupported("%s of type %s", fieldName(f), kindWord(v.k))
	}
	return uint64(v.n), nil
}

// fDevice reads a device ordinal in [-1, maxDevice].
func (d *fastDecoder) fDevice(f uint8) (int, error) {
	v := d.fields[f]
	if v.k != vInt || v.n < -1 || v.n > maxDevice {
		return 0, d.unsupported("%s of type %s or out of range", fieldName(f), kindWord(v.k))
	}
	return int(v.n), nil
}

func (d *fastDecoder) fUint(f uint8) (uint64, error) {
	v := d.fields[f]
	if v.k == vUint || v.k == vInt && v.n >= 0 {
		return uint64(v.n), nil
	}
	return 0, d.unsupported("%s of type %s (or negative)", fieldName(f), kindWord(v.k))
}

func (d *fastDecoder) fStr(f uint8) (string, error) {
	v := d.fields[f]
	if v.k != vStr {
		return "", d.unsupported("%s of type %s", fieldName(f), kindWord(v.k))
	}
	return d.sOf(v), nil
}

func (d *fastDecoder) fBool(f uint8) (bool, error) {
	v := d.fields[f]
	if v.k != vBool {
		return false, d.unsupported("%s of type %s", fieldName(f), kindWord(v.k))
	}
	return v.n != 0, nil
}

func (d *fastDecoder) fPair(f uint8) (PoolID, error) {
	v := d.fields[f]
	if v.k != vPair {
		return PoolID{}, d.unsupported("%s of type %s", fieldName(f), kindWord(v.k))
	}
	return PoolID{v.n, v.n2}, nil
}

// fList returns the list in field f, sealed, checking that it holds want (or nothing).
func (d *fastDecoder) fList(f uint8, want lkind) (*listObj, error) {
	v := d.fields[f]
	if v.k != vList || d.lOf(v).kind != want && d.lOf(v).kind != lEmpty {
		what := kindWord(v.k)
		if v.k == vList {
			what = "list of " + d.lOf(v).kind.String()
		}
		return nil, d.unsupported("%s of type %s", fieldName(f), what)
	}
	d.lOf(v).sealed = true
	return d.lOf(v), nil
}

// fStack returns the stack in field f. Lists shared through the memo are one listObj and so one *Stack; lists
// that are equal but not shared are interned by content, which keeps stacks='all' snapshots small.
func (d *fastDecoder) fStack(f uint8) (*Stack, error) {
	v := d.fields[f]
	if v.k == vList && v.n2 != 0 {
		return d.stackTab[v.n2-1], nil // sealed already, and of frames
	}
	l, err := d.fList(f, lFrames)
	if err != nil {
		return nil, err
	}
	if l.kind == lEmpty || l.st != nil {
		return l.st, nil
	}
	defer d.stackCell(l, v.n)
	key := d.keyBuf[:0]
	for _, id := range l.idx {
		key = binary.LittleEndian.AppendUint32(key, uint32(id))
	}
	d.keyBuf = key
	st, ok := d.stacks[string(key)]
	if !ok {
		frames := make([]Frame, len(l.idx))
		for i, id := range l.idx {
			frames[i] = d.frames[id]
		}
		st = &Stack{Frames: frames}
		d.stacks[string(key)] = st
	}
	l.st, l.idx = st, nil
	return st, nil
}

// fStackRef returns the index in the trace tables of the stack in field f (an entry's frames).
func (d *fastDecoder) fStackRef(f uint8) (StackRef, error) {
	if v := d.fields[f]; v.k == vList && v.n2 != 0 {
		r := &d.stackTabRef[v.n2-1]
		if *r == 0 {
			*r = d.tables.Stack(d.stackTab[v.n2-1])
		}
		return *r, nil
	}
	st, err := d.fStack(f)
	if err != nil || st == nil {
		return 0, err
	}
	return d.tables.Stack(st), nil
}

// Bits of a cellStack payload.
const (
	stackShift = 28
	stackMask  = 1<<stackShift - 1
)

// stackCell turns the memo cell of frames list l (list id id), just sealed with its stack, into a cellStack, so
// that the entries that share the list through the memo take its stack without reading the list: at millions of
// entries that is a cache miss each. Ids beyond the cell's bits, and cells stored again since, stay as they are.
func (d *fastDecoder) stackCell(l *listObj, id int64) {
	if l.memo == 0 || l.st == nil || id > stackMask || len(d.stackTab) > stackMask {
		return
	}
	idx := l.memo - 1
	if idx >= d.memo.len() || d.memo.at(idx) != cellList|uint64(id) {
		return
	}
	d.forgetKey(idx)
	d.memo.set(idx, cellStack|uint64(id)<<stackShift|uint64(len(d.stackTab)))
	d.stackTab, d.stackTabRef = append(d.stackTab, l.st), append(d.stackTabRef, 0)
}

func has(present uint64, f uint8) bool { return present&bit(f) != 0 }

func (d *fastDecoder) required(present uint64, what string, fs ...uint8) error {
	for _, f := range fs {
		if !has(present, f) {
			return d.unsupported("%s without %s", what, fieldName(f))
		}
	}
	return nil
}

func (d *fastDecoder) convertFrame(present uint64) (val, error) {
	if err := d.required(present, "frame", fFilename, fLine, fName); err != nil {
		return val{}, err
	}
	fv, nv, lv := d.fields[fFilename], d.fields[fName], d.fields[fLine]
	if fv.k != vStr || nv.k != vStr || lv.k != vInt && lv.k != vUint {
		return val{}, d.unsupported("frame with a field of the wrong type")
	}
	key := frameKey{file: int32(fv.n), name: int32(nv.n), line: lv.n}
	id, ok := d.frameID[key]
	if !ok {
		id = int32(len(d.frames))
		d.frames = append(d.frames, Frame{Filename: d.sOf(fv), Line: int(lv.n), Name: d.sOf(nv)})
		d.frameID[key] = id
	}
	return val{k: vFrame, n: int64(id)}, nil
}

// entryStringFields are the trace entry keys entryStrings reads into TraceExtra.
const entryStringFields = 1<<fCompileContext | 1<<fUserMetadata | 1<<fInternalMetadata | 1<<fCategory | 1<<fPoolID

func (d *fastDecoder) convertEntry(present uint64) (val, error) {
	const needs = 1<<fAction | 1<<fSize | 1<<fStream
	if present&needs != needs {
		return val{}, d.required(present, "trace entry", fAction, fSize, fStream)
	}
	var e TraceEntry
	var x TraceExtra
	var err error
	av := d.fields[fAction]
	if av.k != vStr {
		return val{}, d.unsupported("%s of type %s", fieldName(fAction), kindWord(av.k))
	}
	if e.Action = d.strAct[av.n]; e.Action == ActionOther {
		x.OtherAction = d.sOf(av)
	}
	if has(present, fAddr) {
		if e.Addr, err = d.fUint(fAddr); err != nil {
			return val{}, err
		}
	}
	limit := int64(maxBytes)
	if e.Action == ActionOOM {
		limit = math.MaxInt64
	}
	if e.Size, err = d.fSize(fSize, limit); err != nil {
		return val{}, err
	}
	stream, err := d.fHandle(fStream)
	if err != nil {
		return val{}, err
	}
	e.Stream = d.tables.Stream(stream)
	if has(present, fTimeUS) {
		if e.TimeUS, err = d.fInt(fTimeUS); err != nil {
			return val{}, err
		}
		e.HasTime = true
		d.fmt.timeUS = true
	}
	if has(present, fDeviceFree) {
		if x.DeviceFree, err = d.fSize(fDeviceFree, math.MaxInt64); err != nil {
			return val{}, err
		}
	}
	if has(present, fFrames) {
		if e.Stack, err = d.fStackRef(fFrames); err != nil {
			return val{}, err
		}
	}
	// From 2.8 PyTorch writes compile_context (and from 2.10 user_metadata) on every event, the same value
	// nearly always ("N/A" up to 2.11): an entry whose extra fields hold the same values as the last one's shares
	// its extra without building and comparing the strings again.
	if d.lastExtra.same(d, present, e.Action) {
		e.Extra = d.lastExtra.ref
	} else {
		if present&entryStringFields != 0 {
			if err := d.entryStrings(present, &x); err != nil {
				return val{}, err
			}
		}
		e.Extra = d.tables.Extra(x) // 0 for an all-empty extra
		d.lastExtra.keep(d, present, e.Action, e.Extra)
	}
	d.pEntries = append(d.pEntries, e)
	d.live++
	return val{k: vEntry, n: int64(len(d.pEntries) - 1)}, nil
}

// extraFields are the trace entry keys whose values make its TraceExtra (with the action's name, for an action
// the model does not know).
const extraFields = entryStringFields | 1<<fDeviceFree

// lastExtra is the extra of the last trace entry converted and the values it was read from: a field's value is an
// interned string id, a pair or an int, so equal values read equal extras.
type lastExtra struct {
	present uint64          // the entry's extraFields; 0 when none is kept
	vals    [fieldCount]val // indexed like fastDecoder.fields
	ref     ExtraRef
}

// same reports whether the entry being converted, with action a, holds the same extra fields as the kept one.
func (l *lastExtra) same(d *fastDecoder, present uint64, a Action) bool {
	p := present & extraFields
	if p == 0 || p != l.present || a == ActionOther {
		return false
	}
	for m := p; m != 0; m &= m - 1 {
		f := bits.TrailingZeros64(m)
		if d.fields[f] != l.vals[f] {
			return false
		}
	}
	return true
}

// keep remembers the extra fields of the entry just converted, with action a, and its extra ref.
func (l *lastExtra) keep(d *fastDecoder, present uint64, a Action, ref ExtraRef) {
	l.present, l.ref = present&extraFields, ref
	if a == ActionOther {
		l.present = 0
	}
	for m := l.present; m != 0; m &= m - 1 {
		f := bits.TrailingZeros64(m)
		l.vals[f] = d.fields[f]
	}
}

// entryStrings reads a trace entry's rarely-set strings and pool into x.
func (d *fastDecoder) entryStrings(present uint64, x *TraceExtra) error {
	var err error
	if has(present, fCompileContext) {
		if x.CompileContext, err = d.fStr(fCompileContext); err != nil {
			return err
		}
		d.fmt.compileContext = true
	}
	if has(present, fUserMetadata) {
		if x.UserMetadata, err = d.fStr(fUserMetadata); err != nil {
			return err
		}
		d.fmt.userMetadata = true
	}
	if has(present, fInternalMetadata) {
		if x.InternalMetadata, err = d.fStr(fInternalMetadata); err != nil {
			return err
		}
	}
	if has(present, fCategory) {
		if x.Category, err = d.fStr(fCategory); err != nil {
			return err
		}
	}
	if has(present, fPoolID) {
		if x.Pool, err = d.fPair(fPoolID); err != nil {
			return err
		}
	}
	return nil
}

func (d *fastDecoder) convertHist(present uint64) (val, error) {
	if err := d.required(present, "history entry", fRealSize); err != nil {
		return val{}, err
	}
	var h History
	var err error
	if has(present, fAddr) {
		if h.Addr, err = d.fUint(fAddr); err != nil {
			return val{}, err
		}
	}
	if h.RealSize, err = d.fSize(fRealSize, maxBytes); err != nil {
		return val{}, err
	}
	if has(present, fFrames) {
		if h.Stack, err = d.fStack(fFrames); err != nil {
			return val{}, err
		}
	}
	d.pHists = append(d.pHists, h)
	d.live++
	return val{k: vHist, n: int64(len(d.pHists) - 1)}, nil
}

// blockNoAddress marks a pending block whose file entry had no address (before torch 2.1); the segment fills
// it in cumulatively. Real block addresses are never 0 (a null device pointer), and the sentinel is resolved
// before any block leaves the decoder.
const blockNoAddress = math.MaxUint64

func (d *fastDecoder) convertBlock(present uint64) (val, error) {
	if err := d.required(present, "block", fSize, fState); err != nil {
		return val{}, err
	}
	var b Block
	var err error
	if b.Size, err = d.fSize(fSize, maxBytes); err != nil {
		return val{}, err
	}
	state, err := d.fStr(fState)
	if err != nil {
		return val{}, err
	}
	switch state {
	case "active_allocated":
		b.State = BlockActiveAllocated
	case "active_pending_free", "active_awaiting_free":
		b.State = BlockActivePendingFree
	case "inactive":
		b.State = BlockInactive
	default:
		return val{}, d.unsupported("block state %q", state)
	}
	b.Address = blockNoAddress
	if has(present, fAddress) {
		if b.Address, err = d.fUint(fAddress); err != nil {
			return val{}, err
		}
		if b.Address == blockNoAddress {
			return val{}, d.unsupported("block address 2^64-1")
		}
		d.fmt.blockAddress = true
	} else {
		d.fmt.noBlockAddress = true
	}
	if has(present, fHistory) {
		d.fmt.history = true
		l, err := d.fList(fHistory, lHists)
		if err != nil {
			return val{}, err
		}
		if l.more != nil && len(l.more.hists) > 0 {
			b.History = l.more.hists
		}
	}
	switch {
	case has(present, fRequestedSize):
		if b.RequestedSize, err = d.fSize(fRequestedSize, maxBytes); err != nil {
			return val{}, err
		}
	case len(b.History) > 0:
		b.RequestedSize = b.History[0].RealSize
	default:
		b.RequestedSize = b.Size
	}
	switch {
	case has(present, fFrames):
		if b.Stack, err = d.fStack(fFrames); err != nil {
			return val{}, err
		}
	case len(b.History) > 0:
		b.Stack = b.History[0].Stack
	}
	d.pBlocks = append(d.pBlocks, b)
	d.live++
	return val{k: vBlock, n: int64(len(d.pBlocks) - 1)}, nil
}

func (d *fastDecoder) convertSegment(present uint64) (val, error) {
	if err := d.required(present, "segment", fDevice, fAddress, fTotalSize, fAllocatedSize, fActiveSize,
		fStream, fSegmentType, fBlocks); err != nil {
		return val{}, err
	}
	var s Segment
	var err error
	if s.Device, err = d.fDevice(fDevice); err != nil {
		return val{}, err
	}
	if s.Address, err = d.fUint(fAddress); err != nil {
		return val{}, err
	}
	if s.TotalSize, err = d.fSize(fTotalSize, maxBytes); err != nil {
		return val{}, err
	}
	if s.AllocatedSize, err = d.fSize(fAllocatedSize, maxBytes); err != nil {
		return val{}, err
	}
	if s.ActiveSize, err = d.fSize(fActiveSize, maxBytes); err != nil {
		return val{}, err
	}
	if has(present, fRequestedSize) {
		if s.RequestedSize, err = d.fSize(fRequestedSize, maxBytes); err != nil {
			return val{}, err
		}
	}
	if s.Stream, err = d.fHandle(fStream); err != nil {
		return val{}, err
	}
	typ, err := d.fStr(fSegmentType)
	if err != nil {
		return val{}, err
	}
	switch SegmentType(typ) {
	case SegmentLarge, SegmentSmall:
		s.Type = SegmentType(typ)
	default:
		return val{}, d.unsupported("segment_type %q", typ)
	}
	if has(present, fSegmentPoolID) {
		if s.Pool, err = d.fPair(fSegmentPoolID); err != nil {
			return val{}, err
		}
		d.fmt.poolID = true
	}
	if has(present, fIsExpandable) {
		if s.IsExpandable, err = d.fBool(fIsExpandable); err != nil {
			return val{}, err
		}
		d.fmt.expandable = true
	}
	if has(present, fFrames) {
		if s.Stack, err = d.fStack(fFrames); err != nil {
			return val{}, err
		}
		d.fmt.segFrames = true
	}
	bl, err := d.fList(fBlocks, lBlocks)
	if err != nil {
		return val{}, err
	}
	s.Blocks = []Block{}
	if bl.more != nil && bl.more.blocks != nil {
		s.Blocks = bl.more.blocks
	}
	// Before torch 2.1 blocks carry no address: they tile the segment in order.
	off := s.Address
	for i := range s.Blocks {
		if s.Blocks[i].Address == blockNoAddress {
			s.Blocks[i].Address = off
		}
		off += uint64(s.Blocks[i].Size)
	}
	if !slices.Contains(d.segDevices, s.Device) && len(d.segDevices) < maxSegDevices {
		d.segDevices = append(d.segDevices, s.Device)
	}
	d.pSegs = append(d.pSegs, s)
	d.live++
	return val{k: vSegment, n: int64(len(d.pSegs) - 1)}, nil
}

func (d *fastDecoder) convertAnnotation(pairs []val, present uint64) (val, error) {
	if err := d.required(present, "annotation", fStage, fName, fDevice, fTimeUS); err != nil {
		return val{}, err
	}
	var a Annotation
	var err error
	if a.Stage, err = d.fStr(fStage); err != nil {
		return val{}, err
	}
	if a.Name, err = d.fStr(fName); err != nil {
		return val{}, err
	}
	if a.Device, err = d.fDevice(fDevice); err != nil {
		return val{}, err
	}
	if a.TimeUS, err = d.fInt(fTimeUS); err != nil {
		return val{}, err
	}
	for i := 0; i < len(pairs); i += 2 {
		switch d.sOf(pairs[i]) {
		case "stage", "name", "device", "time_us":
			continue
		}
		if pairs[i+1].k != vStr {
			return val{}, d.unsupported("annotation %s of type %s", d.sOf(pairs[i]), kindWord(pairs[i+1].k))
		}
		if a.Extra == nil {
			a.Extra = make(map[string]string)
		}
		a.Extra[d.sOf(pairs[i])] = d.sOf(pairs[i+1])
	}
	d.pAnns = append(d.pAnns, a)
	d.live++
	return val{k: vAnnotation, n: int64(len(d.pAnns) - 1)}, nil
}

func (d *fastDecoder) convertSettings(pairs []val, present uint64) (val, error) {
	for i := 0; i < len(pairs); i += 2 {
		if present&bit(d.strKey[pairs[i].n])&maskSettings == 0 {
			return val{}, d.unsupported("allocator setting %q", d.sOf(pairs[i]))
		}
	}
	if d.settings != nil {
		return val{}, d.unsupported("two allocator_settings dicts")
	}
	s := &AllocatorSettings{}
	var err error
	if has(present, fAllocConf) {
		if s.AllocConf, err = d.fStr(fAllocConf); err != nil {
			return val{}, err
		}
	}
	if has(present, fMaxSplitSize) {
		if s.MaxSplitSize, err = d.fInt(fMaxSplitSize); err != nil {
			return val{}, err
		}
	}
	if has(present, fGCThreshold) {
		v := d.fields[fGCThreshold]
		if v.k != vFloat {
			return val{}, d.unsupported("garbage_collection_threshold of type %s", kindWord(v.k))
		}
		s.GarbageCollectionThreshold = math.Float64frombits(uint64(v.n))
	}
	for _, b := range []struct {
		f   uint8
		dst *bool
	}{
		{fExpandableSegments, &s.ExpandableSegments},
		{fReleaseLock, &s.ReleaseLockOnCudaMalloc},
		{fPinnedHostRegister, &s.PinnedUseCudaHostRegister},
		{fGraphCaptureReuse, &s.GraphCaptureRecordStreamReuse},
	} {
		if has(present, b.f) {
			if *b.dst, err = d.fBool(b.f); err != nil {
				return val{}, err
			}
		}
	}
	if has(present, fPinnedThreads) {
		if s.PinnedNumRegisterThreads, err = d.fInt(fPinnedThreads); err != nil {
			return val{}, err
		}
	}
	if has(present, fRoundup) {
		v := d.fields[fRoundup]
		switch v.k {
		case vDict: // empty
			s.RoundupPower2Divisions = map[string]int64{}
		case vGenDict:
			items := d.lOf(v).more.items
			s.RoundupPower2Divisions = make(map[string]int64, len(items)/2)
			for i := 0; i < len(items); i += 2 {
				if items[i].k != vStr || items[i+1].k != vInt {
					return val{}, d.unsupported("roundup_power2_divisions entry of type %s: %s",
						kindWord(items[i].k), kindWord(items[i+1].k))
				}
				s.RoundupPower2Divisions[d.sOf(items[i])] = items[i+1].n
			}
		default:
			return val{}, d.unsupported("roundup_power2_divisions of type %s", kindWord(v.k))
		}
	}
	d.settings = s
	return val{k: vSettings}, nil
}

func (d *fastDecoder) convertTop(present uint64) (val, error) {
	if d.top != nil {
		return val{}, d.unsupported("two snapshot dicts")
	}
	if !has(present, fSegments) {
		return val{}, d.unsupported("snapshot dict without segments")
	}
	if d.tables.overflow {
		return val{}, d.fail("more than %d distinct trace stacks, streams or extras", maxTableRefs)
	}
	s := &Snapshot{TraceStacks: d.traceTabs.TraceStacks, TraceExtras: d.traceTabs.TraceExtras, TraceStreams: d.traceTabs.TraceStreams}
	var err error
	if s.Segments, err = d.segments(fSegments); err != nil {
		return val{}, err
	}
	if has(present, fDeviceTraces) {
		if s.DeviceTraces, err = d.traces(fDeviceTraces); err != nil {
			return val{}, err
		}
	}
	if has(present, fAllocatorSettings) {
		d.fmt.settings = true
		switch v := d.fields[fAllocatorSettings]; {
		case v.k == vSettings:
			s.AllocatorSettings = d.settings
		case v.k == vDict:
			s.AllocatorSettings = &AllocatorSettings{}
		default:
			return val{}, d.unsupported("allocator_settings of type %s", kindWord(v.k))
		}
	}
	if has(present, fExternalAnnotations) {
		l, err := d.fList(fExternalAnnotations, lAnnotations)
		if err != nil {
			return val{}, err
		}
		s.ExternalAnnotations = []Annotation{}
		if l.more != nil && l.more.anns != nil {
			s.ExternalAnnotations = l.more.anns
		}
		d.fmt.annotations = true
	}
	if has(present, fHostSegments) {
		if s.HostSegments, err = d.segments(fHostSegments); err != nil {
			return val{}, err
		}
	}
	if has(present, fHostTraces) {
		if s.HostTraces, err = d.traces(fHostTraces); err != nil {
			return val{}, err
		}
	}
	d.top = s
	return val{k: vTop}, nil
}

// segments returns the segment list in field f; an empty list is an empty, not a nil, slice.
func (d *fastDecoder) segments(f uint8) ([]Segment, error) {
	l, err := d.fList(f, lSegments)
	if err != nil {
		return nil, err
	}
	if l.more != nil && l.more.segs != nil {
		return l.more.segs, nil
	}
	return []Segment{}, nil
}

func (d *fastDecoder) traces(f uint8) ([][]TraceEntry, error) {
	l, err := d.fList(f, lTraces)
	if err != nil {
		return nil, err
	}
	if l.more != nil && l.more.traces != nil {
		return l.more.traces, nil
	}
	return [][]TraceEntry{}, nil
}

var fieldNames = func() [fieldCount]string {
	var n [fieldCount]string
	for k, f := range fieldOf {
		n[f] = k
	}
	return n
}()

func fieldName(f uint8) string {
	if int(f) < len(fieldNames) {
		return fieldNames[f]
	}
	return "field"
}
