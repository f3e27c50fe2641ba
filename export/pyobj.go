package export

import (
	"context"
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
	tuple2(a, b int64)
	// frames writes a frames list. Stacks shared in the model may be shared in the output.
	frames(st *snapshot.Stack)
	err() error
}

// frameDict writes one frame with the 2.1+ key order.
func frameDict(e encoder, f snapshot.Frame) {
	e.beginDict(3)
	e.key("name")
	e.str(f.Name)
	e.key("filename")
	e.str(f.Filename)
	e.key("line")
	e.int(int64(f.Line))
	e.endDict()
}

// writeSnapshot walks s in PyTorch's own key names (the dict of torch.cuda.memory._snapshot()).
func writeSnapshot(ctx context.Context, e encoder, s *snapshot.Snapshot) error {
	n := 2
	if s.AllocatorSettings != nil {
		n++
	}
	if s.ExternalAnnotations != nil {
		n++
	}
	if s.HostSegments != nil || s.HostTraces != nil {
		n += 2
	}
	e.beginDict(n)
	e.key("segments")
	if err := writeSegments(ctx, e, s.Segments); err != nil {
		return err
	}
	e.key("device_traces")
	if err := writeTraces(ctx, e, s.DeviceTraces); err != nil {
		return err
	}
	if s.AllocatorSettings != nil {
		e.key("allocator_settings")
		writeSettings(e, s.AllocatorSettings)
	}
	if s.ExternalAnnotations != nil {
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
		if err := writeSegments(ctx, e, s.HostSegments); err != nil {
			return err
		}
		e.key("host_traces")
		if err := writeTraces(ctx, e, s.HostTraces); err != nil {
			return err
		}
	}
	e.endDict()
	return e.err()
}

func writeSegments(ctx context.Context, e encoder, segs []snapshot.Segment) error {
	e.beginList(len(segs))
	for i := range segs {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		seg := &segs[i]
		e.beginDict(12)
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
		e.key("segment_pool_id")
		e.tuple2(seg.Pool[0], seg.Pool[1])
		e.key("is_expandable")
		e.bool(seg.IsExpandable)
		e.key("frames")
		e.frames(seg.Stack)
		e.key("blocks")
		e.beginList(len(seg.Blocks))
		for j := range seg.Blocks {
			writeBlock(e, &seg.Blocks[j])
		}
		e.endList()
		e.endDict()
	}
	e.endList()
	return e.err()
}

func writeBlock(e encoder, b *snapshot.Block) {
	e.beginDict(5)
	e.key("address")
	e.uint(b.Address)
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
	} else {
		e.key("frames")
		e.frames(b.Stack)
	}
	e.endDict()
}

func writeTraces(ctx context.Context, e encoder, traces [][]snapshot.TraceEntry) error {
	e.beginList(len(traces))
	for _, tr := range traces {
		e.beginList(len(tr))
		for i := range tr {
			if i%(1<<14) == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			writeTraceEntry(e, &tr[i])
		}
		e.endList()
	}
	e.endList()
	return e.err()
}

func writeTraceEntry(e encoder, t *snapshot.TraceEntry) {
	n := 4
	if t.HasTime {
		n++
	}
	if t.Stack != nil {
		n++
	}
	for _, s := range []string{t.CompileContext(), t.UserMetadata(), t.InternalMetadata(), t.Category()} {
		if s != "" {
			n++
		}
	}
	if t.Pool() != (snapshot.PoolID{}) {
		n++
	}
	e.beginDict(n)
	e.key("action")
	e.str(t.ActionName())
	if t.Action == snapshot.ActionOOM {
		e.key("device_free")
		e.int(t.DeviceFree)
	} else {
		e.key("addr")
		e.uint(t.Addr)
	}
	e.key("size")
	e.int(t.Size)
	e.key("stream")
	e.uint(t.Stream)
	if t.HasTime {
		e.key("time_us")
		e.int(t.TimeUS)
	}
	if t.Stack != nil {
		e.key("frames")
		e.frames(t.Stack)
	}
	for _, kv := range [][2]string{{"compile_context", t.CompileContext()}, {"user_metadata", t.UserMetadata()},
		{"internal_metadata", t.InternalMetadata()}, {"category", t.Category()}} {
		if kv[1] != "" {
			e.key(kv[0])
			e.str(kv[1])
		}
	}
	if t.Pool() != (snapshot.PoolID{}) {
		e.key("pool_id")
		e.tuple2(t.Pool()[0], t.Pool()[1])
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
