package export

import (
	"context"
	"math"
	"slices"
	"strings"

	"github.com/memscan/memscan/snapshot"
)

// encoder receives the snapshot dict as PyTorch builds it, depth first. Containers announce their length up front
// so the pickle encoder can pick opcodes without buffering.
type encoder interface {
	beginDict(n int)
	key(k string)
	endDict()
	beginList(n int)
	endList()
	str(s string)
	int(v int64)
	uint(v uint64)
	float(v float64)
	bool(v bool)
	none()
	tuple2(a, b int64)
	// frames writes a frames list. Stacks shared in the model may be shared in the output.
	frames(st *snapshot.Stack)
	err() error
}

// frameDict writes one frame with the 2.1+ key order.
func frameDict(e encoder, f snapshot.Frame) {
	e.beginDict(frameKeys)
	frameFields(e, f)
	e.endDict()
}

// frameKeys is how many keys frameFields writes.
const frameKeys = 3

// frameFields writes the keys and values of one frame dict.
func frameFields(e encoder, f snapshot.Frame) {
	e.key("name")
	e.str(f.Name)
	e.key("filename")
	e.str(f.Filename)
	e.key("line")
	e.int(int64(f.Line))
}

// Format generations (Snapshot.TorchFormat) ranked, so the writer emits the keys the source's generation had
// and a decoder infers the same generation again: a 2.0 file gets no block addresses or segment frames, a 2.3+
// file keeps "allocator_settings" even when it was None, and so on.
const (
	gen20  = 20
	gen21  = 21
	gen23  = 23
	gen25  = 25
	gen28  = 28
	gen210 = 210
	genAll = math.MaxInt // a snapshot built in code (no TorchFormat) or a bare list: every key memscan knows
)

func generation(torchFormat string) int {
	switch torchFormat {
	case "2.0", "2.0-history":
		return gen20
	case "2.1+", "2.2+": // 2.2 adds time_us, which each trace entry carries or not (TraceEntry.HasTime)
		return gen21
	case "2.3+":
		return gen23
	case "2.5+":
		return gen25
	case "2.8+":
		return gen28
	case "2.10+":
		return gen210
	}
	return genAll
}

// writeSnapshot walks s in PyTorch's own key names (the dict of torch.cuda.memory._snapshot(), or the bare
// segment list of torch.cuda.memory_snapshot() when s came from one).
func writeSnapshot(ctx context.Context, e encoder, s *snapshot.Snapshot) error {
	gen := generation(s.TorchFormat)
	if s.BareList {
		if err := writeSegments(ctx, e, s.Segments, genAll); err != nil {
			return err
		}
		return e.err()
	}
	// A generation's top-level keys are written even when the model holds nothing for them (the file had None).
	settings := s.AllocatorSettings != nil || (gen >= gen23 && gen != genAll)
	annotations := s.ExternalAnnotations != nil || (gen >= gen25 && gen != genAll)
	n := 2
	if settings {
		n++
	}
	if annotations {
		n++
	}
	if s.HostSegments != nil || s.HostTraces != nil {
		n += 2
	}
	e.beginDict(n)
	e.key("segments")
	if err := writeSegments(ctx, e, s.Segments, gen); err != nil {
		return err
	}
	e.key("device_traces")
	if err := writeTraces(ctx, e, s, s.DeviceTraces, gen); err != nil {
		return err
	}
	if settings {
		e.key("allocator_settings")
		if s.AllocatorSettings == nil {
			e.none()
		} else {
			writeSettings(e, s.AllocatorSettings)
		}
	}
	if annotations && s.ExternalAnnotations == nil {
		e.key("external_annotations")
		e.none()
	} else if annotations {
		e.key("external_annotations")
		e.beginList(len(s.ExternalAnnotations))
		for _, a := range s.ExternalAnnotations {
			keys := make([]string, 0, len(a.Extra))
			for k := range a.Extra {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			e.beginDict(4 + len(keys))
			e.key("stage")
			e.str(a.Stage)
			e.key("name")
			e.str(a.Name)
			e.key("device")
			e.int(int64(a.Device))
			e.key("time_us")
			e.int(a.TimeUS)
			for _, k := range keys {
				e.key(k)
				e.str(a.Extra[k])
			}
			e.endDict()
		}
		e.endList()
	}
	if s.HostSegments != nil || s.HostTraces != nil {
		e.key("host_segments")
		if err := writeSegments(ctx, e, s.HostSegments, gen); err != nil {
			return err
		}
		e.key("host_traces")
		if err := writeTraces(ctx, e, s, s.HostTraces, gen); err != nil {
			return err
		}
	}
	e.endDict()
	return e.err()
}

func writeSegments(ctx context.Context, e encoder, segs []snapshot.Segment, gen int) error {
	e.beginList(len(segs))
	for i := range segs {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		seg := &segs[i]
		// Before 2.1 a segment had no pool id, expandable flag or frames; writing them would date the file 2.1+.
		modern := gen >= gen21 || seg.Pool != (snapshot.PoolID{}) || seg.IsExpandable || seg.Stack != nil
		n := 12
		if !modern {
			n = 9
		}
		e.beginDict(n)
		e.key("device")
		e.int(int64(seg.Device))
		e.key("address")
		e.uint(seg.Address)
		e.key("total_size")
		e.int(seg.TotalSize)
		e.key("allocated_size")
		e.int(seg.AllocatedSize)
		e.key("active_size")
		e.int(seg.ActiveSize)
		e.key("requested_size")
		e.int(seg.RequestedSize)
		e.key("stream")
		e.uint(seg.Stream)
		e.key("segment_type")
		typ := string(seg.Type)
		if typ == "" {
			typ = string(snapshot.SegmentLarge)
		}
		e.str(typ)
		if modern {
			e.key("segment_pool_id")
			e.tuple2(seg.Pool[0], seg.Pool[1])
			e.key("is_expandable")
			e.bool(seg.IsExpandable)
			e.key("frames")
			e.frames(seg.Stack)
		}
		e.key("blocks")
		e.beginList(len(seg.Blocks))
		next := seg.Address // where a reader puts a block that has no address: right after the previous one
		for j := range seg.Blocks {
			b := &seg.Blocks[j]
			writeBlock(e, b, gen >= gen21 || b.Address != next)
			next += uint64(b.Size)
		}
		e.endList()
		e.endDict()
	}
	e.endList()
	return e.err()
}

// writeBlock writes one block; withAddress is false for a pre-2.1 block, whose address readers compute from the
// segment's. Legacy blocks keep their history, and get frames as well only when those say something the
// history does not (a reader takes the stack from history[0] when a block has no frames).
func writeBlock(e encoder, b *snapshot.Block, withAddress bool) {
	frames := len(b.History) == 0 || !sameStack(b.Stack, b.History[0].Stack)
	n := 3
	if withAddress {
		n++
	}
	if len(b.History) > 0 {
		n++
	}
	if frames {
		n++
	}
	e.beginDict(n)
	if withAddress {
		e.key("address")
		e.uint(b.Address)
	}
	e.key("size")
	e.int(b.Size)
	e.key("requested_size")
	e.int(b.RequestedSize)
	e.key("state")
	e.str(b.State.String())
	if len(b.History) > 0 {
		// Legacy blocks keep their history so readers resolve frames and real sizes exactly as from the original.
		e.key("history")
		e.beginList(len(b.History))
		for _, h := range b.History {
			n := 2
			if h.Stack != nil {
				n++
			}
			e.beginDict(n)
			e.key("addr")
			e.uint(h.Addr)
			e.key("real_size")
			e.int(h.RealSize)
			if h.Stack != nil {
				e.key("frames")
				e.frames(h.Stack)
			}
			e.endDict()
		}
		e.endList()
	}
	if frames {
		e.key("frames")
		e.frames(b.Stack)
	}
	e.endDict()
}

// sameStack reports whether two stacks hold the same frames (nil and empty alike, as readers decode them).
func sameStack(a, b *snapshot.Stack) bool {
	if a == b {
		return true
	}
	var fa, fb []snapshot.Frame
	if a != nil {
		fa = a.Frames
	}
	if b != nil {
		fb = b.Frames
	}
	return slices.Equal(fa, fb)
}

func writeTraces(ctx context.Context, e encoder, s *snapshot.Snapshot, traces [][]snapshot.TraceEntry, gen int) error {
	e.beginList(len(traces))
	for _, tr := range traces {
		e.beginList(len(tr))
		for i := range tr {
			if i%(1<<14) == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			writeTraceEntry(e, s, &tr[i], gen)
		}
		e.endList()
	}
	e.endList()
	return e.err()
}

// writeTraceEntry writes one event. From 2.8 PyTorch writes compile_context on every event, from 2.10
// user_metadata too, empty or not; the other optional keys appear only when set.
func writeTraceEntry(e encoder, s *snapshot.Snapshot, t *snapshot.TraceEntry, gen int) {
	always := func(g int) bool { return gen >= g && gen != genAll }
	x, st := s.EntryExtra(t), s.EntryStack(t)
	n := 4
	if t.HasTime {
		n++
	}
	if st != nil {
		n++
	}
	optional := [][2]string{{"compile_context", x.CompileContext}, {"user_metadata", x.UserMetadata},
		{"internal_metadata", x.InternalMetadata}, {"category", x.Category}}
	write := [4]bool{always(gen28), always(gen210)}
	for i, kv := range optional {
		write[i] = write[i] || kv[1] != ""
		if write[i] {
			n++
		}
	}
	if x.Pool != (snapshot.PoolID{}) {
		n++
	}
	e.beginDict(n)
	e.key("action")
	e.str(s.ActionName(t))
	if t.Action == snapshot.ActionOOM {
		e.key("device_free")
		e.int(x.DeviceFree)
	} else {
		e.key("addr")
		e.uint(t.Addr)
	}
	e.key("size")
	e.int(t.Size)
	e.key("stream")
	e.uint(s.EntryStream(t))
	if t.HasTime {
		e.key("time_us")
		e.int(t.TimeUS)
	}
	if st != nil {
		e.key("frames")
		e.frames(st)
	}
	for i, kv := range optional {
		if write[i] {
			e.key(kv[0])
			e.str(kv[1])
		}
	}
	if x.Pool != (snapshot.PoolID{}) {
		e.key("pool_id")
		e.tuple2(x.Pool[0], x.Pool[1])
	}
	e.endDict()
}

func writeSettings(e encoder, a *snapshot.AllocatorSettings) {
	n := 8
	if a.RoundupPower2Divisions != nil {
		n++
	}
	keys := make([]string, 0, len(a.Other))
	for k := range a.Other {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	n += len(keys)
	e.beginDict(n)
	e.key("PYTORCH_CUDA_ALLOC_CONF")
	e.str(a.AllocConf)
	e.key("max_split_size")
	e.int(a.MaxSplitSize)
	e.key("garbage_collection_threshold")
	e.float(a.GarbageCollectionThreshold)
	e.key("expandable_segments")
	e.bool(a.ExpandableSegments)
	e.key("pinned_num_register_threads")
	e.int(a.PinnedNumRegisterThreads)
	e.key("release_lock_on_cudamalloc")
	e.bool(a.ReleaseLockOnCudaMalloc)
	e.key("pinned_use_cuda_host_register")
	e.bool(a.PinnedUseCudaHostRegister)
	e.key("graph_capture_record_stream_reuse")
	e.bool(a.GraphCaptureRecordStreamReuse)
	if a.RoundupPower2Divisions != nil {
		rk := make([]string, 0, len(a.RoundupPower2Divisions))
		for k := range a.RoundupPower2Divisions {
			rk = append(rk, k)
		}
		// PyTorch lists the power-of-two keys numerically: '1', '2', '4', ...
		slices.SortFunc(rk, func(x, y string) int {
			if len(x) != len(y) {
				return len(x) - len(y)
			}
			return strings.Compare(x, y)
		})
		e.key("roundup_power2_divisions")
		e.beginDict(len(rk))
		for _, k := range rk {
			e.key(k)
			e.int(a.RoundupPower2Divisions[k])
		}
		e.endDict()
	}
	for _, k := range keys {
		e.key(k)
		e.str(a.Other[k])
	}
	e.endDict()
}
