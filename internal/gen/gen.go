// Package gen writes realistic synthetic PyTorch CUDA allocator snapshots (and sets of per-rank snapshots) for
// benchmarks and tests.
//
// A snapshot comes from simulating a caching allocator: per device, allocations of log-uniform sizes are
// carved out of 2 MiB small-pool and larger large-pool segments (segment_alloc, or segment_map for expandable
// segments), and freed in bursts (free_requested then free_completed), so the trace replays to the final
// segments exactly: every live allocation is an active_allocated block, dead runs and tails are inactive
// blocks, and block sizes sum to total_size. Stacks come from a pool of Python-only or Python+C++ call
// stacks; like PyTorch, the writer can share identical frame lists through the pickle memo, or write every list
// fresh. The keys follow the chosen torch generation (2.0 history blocks through 2.10 user_metadata, or a bare
// list of segments). The pickle itself is written as CPython's pickle.dump would (protocol 4, framed).
package gen

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
)

// Stacks is what call stacks the snapshot records (torch's _record_memory_history(stacks=...)).
type Stacks string

const (
	StacksNone   Stacks = "none"   // context=None: every frames list is empty
	StacksPython Stacks = "python" // Python frames only, depth 8 to 40
	StacksAll    Stacks = "all"    // Python and C++ frames interleaved, depth 60 to 150
)

// Generation is the torch version whose snapshot keys are written.
type Generation string

const (
	Gen20   Generation = "2.0"  // blocks carry history, no addresses, no time_us
	Gen21   Generation = "2.1"  // block address/frames, segment pool/expandable/frames
	Gen22   Generation = "2.2"  // + time_us
	Gen23   Generation = "2.3"  // + allocator_settings
	Gen25   Generation = "2.5"  // + external_annotations
	Gen28   Generation = "2.8"  // + compile_context
	Gen210  Generation = "2.10" // + user_metadata
	GenList Generation = "list" // torch.cuda.memory_snapshot(): a bare list of segments
)

// Generations lists every generation, oldest first.
func Generations() []Generation {
	return []Generation{Gen20, Gen21, Gen22, Gen23, Gen25, Gen28, Gen210, GenList}
}

func (g Generation) atLeast(o Generation) bool {
	order := Generations()
	gi, oi := slices.Index(order, g), slices.Index(order, o)
	if g == GenList {
		gi = slices.Index(order, Gen21)
	}
	return gi >= oi
}

// Config says what to generate.
type Config struct {
	Name       string
	Seed       int64
	Generation Generation // default Gen210
	Devices    int        // default 1
	// Entries is the number of trace entries over all devices; when TargetBytes is set it is derived instead.
	Entries     int
	TargetBytes int64
	Stacks      Stacks // default StacksPython
	ShareStack  bool   // share identical frame lists through the memo, as PyTorch does
	Expandable  bool   // expandable segments (segment_map instead of segment_alloc)
	OOM         bool   // end device 0's trace with an OOM
	// LiveScale scales how much stays allocated (1 = default); rank sets use it to make pipeline stages differ.
	LiveScale float64
	// Grow is the share of allocations never freed (0 = none): the live set, and the segments those
	// allocations pin, keep growing through the trace, as in a leaking run.
	Grow float64
}

// Stats describes what was written.
type Stats struct {
	Bytes    int64
	Segments int
	Blocks   int
	Entries  int
	// ReservedBytes and AllocatedBytes are the snapshot's totals (sum of segment sizes; sum of active_allocated
	// block sizes), for tests that check an analysis against the generator.
	ReservedBytes  int64
	AllocatedBytes int64
	RequestedBytes int64
}

func (c Config) withDefaults() Config {
	if c.Generation == "" {
		c.Generation = Gen210
	}
	if c.Devices <= 0 {
		c.Devices = 1
	}
	if c.Stacks == "" {
		c.Stacks = StacksPython
	}
	if c.LiveScale <= 0 {
		c.LiveScale = 1
	}
	if c.Entries <= 0 && c.TargetBytes <= 0 {
		c.Entries = 1000
	}
	return c
}

// Write generates one snapshot into w.
func Write(w io.Writer, cfg Config) (Stats, error) {
	cfg = cfg.withDefaults()
	if cfg.TargetBytes > 0 {
		// Bytes grow linearly in the entries for a given stack pool: a fixed part (the first writing of each
		// frame list) plus a per-entry part. Two samples fit both; the pool grows with the trace, so the fit is
		// repeated with the first estimate's pool.
		sample := cfg
		sample.TargetBytes = 0
		pool := 20000
		for range 2 {
			var size [2]float64
			ns := [2]int{10000, 40000}
			for i, n := range ns {
				sample.Entries = n
				var cw countWriter
				if st, err := write(&cw, sample, pool); err != nil {
					return st, err
				}
				size[i] = float64(cw.n)
			}
			per := max(1, (size[1]-size[0])/float64(ns[1]-ns[0]))
			fixed := size[0] - per*float64(ns[0])
			cfg.Entries = max(100, int((float64(cfg.TargetBytes)-fixed)/per))
			pool = cfg.Entries
		}
	}
	return write(w, cfg, cfg.Entries)
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(b []byte) (int, error) { c.n += int64(len(b)); return len(b), nil }

// Simulation state.

type event struct {
	action  uint8
	addr    uint64
	size    int64
	stream  uint64
	time    int64
	stack   int32 // -1: none
	devFree int64
}

const (
	aAlloc uint8 = iota
	aFreeRequested
	aFreeCompleted
	aSegmentAlloc
	aSegmentMap
	aSnapshot
	aOOM
)

var actionNames = [...]string{"alloc", "free_requested", "free_completed", "segment_alloc", "segment_map", "snapshot", "oom"}

type allocation struct {
	seg       *segment
	addr      uint64
	size, req int64
	stack     int32
	live      bool
}

type segment struct {
	dev    int
	addr   uint64
	size   int64
	used   int64
	stream uint64
	small  bool
	stack  int32
	allocs []int32 // indexes into sim.allocs, in address order
	liveN  int
}

type sim struct {
	cfg    Config
	rng    *rand.Rand
	stacks [][]frame
	allocs []allocation
	segs   []*segment
	traces [][]event
	clock  int64
}

type frame struct {
	file, name string
	line       uint64
}

// write generates the snapshot; poolEntries sizes the stack pool (as for a trace of that length).
func write(w io.Writer, cfg Config, poolEntries int) (Stats, error) {
	s := &sim{cfg: cfg, rng: rand.New(rand.NewPCG(uint64(cfg.Seed), 0x6d656d7363616e)), clock: 1_748_000_000_000_000}
	s.makeStacks(max(poolEntries, cfg.Entries))
	s.run()
	return s.emit(w)
}

// makeStacks builds the pool of call stacks allocations are attributed to.
func (s *sim) makeStacks(poolEntries int) {
	if s.cfg.Stacks == StacksNone {
		return
	}
	files := []string{
		"/opt/conda/lib/python3.11/site-packages/torch/nn/modules/module.py",
		"/opt/conda/lib/python3.11/site-packages/torch/nn/modules/linear.py",
		"/opt/conda/lib/python3.11/site-packages/torch/nn/functional.py",
		"/opt/conda/lib/python3.11/site-packages/torch/optim/adamw.py",
		"/opt/conda/lib/python3.11/site-packages/torch/_tensor.py",
		"/opt/conda/lib/python3.11/site-packages/torch/autograd/graph.py",
		"/opt/conda/lib/python3.11/site-packages/transformers/models/llama/modeling_llama.py",
		"/workspace/train.py", "/workspace/model/attention.py", "/workspace/model/mlp.py", "/workspace/data.py",
	}
	names := []string{"forward", "_call_impl", "_wrapped_call_impl", "backward", "step", "linear", "attention",
		"scaled_dot_product_attention", "rms_norm", "apply_rotary_pos_emb", "train_step", "main", "_init_group",
		"_multi_tensor_adamw", "<module>", "run_backward", "__call__", "embed", "cross_entropy"}
	cpp := []string{"torch::unwind::unwind()", "torch::CapturedTraceback::gather(bool, bool, bool)",
		"torch::cuda::(anonymous namespace)::gather_with_cpp()",
		"c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)",
		"at::native::empty_cuda(c10::ArrayRef<long>, std::optional<c10::ScalarType>)", "at::empty_strided",
		"at::native::addmm_out_cuda_impl", "torch::autograd::Engine::evaluate_function", "_PyEval_EvalFrameDefault",
		"PyObject_Call", "_PyFunction_Vectorcall", "at::_ops::mm::call", "c10::impl::BoxedKernelWrapper::call"}
	// A program has a few hundred distinct call sites; stacks are paths through them. Outer frames (the
	// training loop) come from a small set, inner ones from the wider pool.
	var pyPool []frame
	for range 400 {
		pyPool = append(pyPool, frame{file: files[s.rng.IntN(len(files))], name: names[s.rng.IntN(len(names))],
			line: uint64(1 + s.rng.IntN(2000))})
	}
	var cppPool []frame
	for i, c := range cpp {
		cppPool = append(cppPool, frame{file: "??", name: c})
		if i >= 3 {
			cppPool = append(cppPool, frame{file: "/pytorch/aten/src/ATen/native/cuda/Blas.cpp", name: c, line: uint64(100 + s.rng.IntN(900))},
				frame{file: "??", name: c, line: math.MaxUint64}) // an unknown line, written as -1 through size_t
		}
	}
	n := 64 + poolEntries/200
	n = min(n, 4000)
	for range n {
		var st []frame
		depth := 8 + s.rng.IntN(33)
		if s.cfg.Stacks == StacksAll {
			depth = 60 + s.rng.IntN(91)
		}
		for i := range depth {
			if s.cfg.Stacks == StacksAll && (i < 4 || s.rng.IntN(3) > 0) {
				if i < 3 {
					st = append(st, cppPool[i])
				} else {
					st = append(st, cppPool[3+s.rng.IntN(len(cppPool)-3)])
				}
				continue
			}
			outer := depth - i
			if outer <= 4 {
				st = append(st, pyPool[outer*3+s.rng.IntN(3)])
			} else {
				st = append(st, pyPool[15+s.rng.IntN(len(pyPool)-15)])
			}
		}
		s.stacks = append(s.stacks, st)
	}
}

func (s *sim) pickStack() int32 {
	if len(s.stacks) == 0 {
		return -1
	}
	// Skewed: a few sites make most allocations, as in real training loops.
	i := int(float64(len(s.stacks)) * math.Pow(s.rng.Float64(), 3))
	return int32(min(i, len(s.stacks)-1))
}

func (s *sim) tick() int64 {
	s.clock += int64(1 + s.rng.IntN(40))
	return s.clock
}

// run simulates every device's trace.
func (s *sim) run() {
	s.traces = make([][]event, s.cfg.Devices)
	per := make([]int, s.cfg.Devices)
	for i := range s.cfg.Entries {
		per[i%s.cfg.Devices]++
	}
	for dev := range s.cfg.Devices {
		s.runDevice(dev, per[dev])
	}
	slices.SortFunc(s.segs, func(a, b *segment) int {
		switch {
		case a.addr < b.addr:
			return -1
		case a.addr > b.addr:
			return 1
		}
		return 0
	})
}

func (s *sim) runDevice(dev, budget int) {
	tr := make([]event, 0, budget)
	base := uint64(0x7f00_0000_0000) + uint64(dev)<<36
	next := base
	streams := []uint64{0, 0, 0, 0x5600_0000_1000 + uint64(dev)<<8}
	var open [2]*segment // current small and large segment
	var live []int32     // freeable allocations
	var keptBytes int64  // bytes of the allocations never freed (Config.Grow)
	var idle []*segment
	peak := int(float64(200+s.rng.IntN(300)) * s.cfg.LiveScale)
	keep := int(float64(peak) * 0.3)
	growing := true
	target := budget - 1 // the closing snapshot entry
	if s.cfg.OOM && dev == 0 {
		target--
	}
	for len(tr) < target {
		if growing && len(live) >= peak {
			growing = false
		} else if !growing && len(live) <= keep {
			growing = true
		}
		if !growing && len(live) > 0 {
			// Free a recent allocation (activations die roughly in reverse order).
			j := len(live) - 1 - s.rng.IntN(min(len(live), 8))
			ai := live[j]
			live = append(live[:j], live[j+1:]...)
			a := &s.allocs[ai]
			a.live = false
			a.seg.liveN--
			if a.seg.liveN == 0 && a.seg != open[0] && a.seg != open[1] {
				// The whole segment is cached free again: later requests reuse it from the start.
				idle = append(idle, a.seg)
			}
			st := int32(-1)
			if s.cfg.Stacks != StacksNone {
				st = a.stack
			}
			tr = append(tr, event{action: aFreeRequested, addr: a.addr, size: a.req, time: s.tick(), stack: st},
				event{action: aFreeCompleted, addr: a.addr, size: a.req, time: s.tick(), stack: st})
			continue
		}
		// Allocate: sizes log-uniform from 512 B to 256 MiB, rounded to 512 B.
		req := int64(math.Exp(math.Log(512) + s.rng.Float64()*(math.Log(256<<20)-math.Log(512))))
		size := (req + 511) / 512 * 512
		small := size <= 1<<20
		pool := 1
		if small {
			pool = 0
		}
		seg := open[pool]
		if seg != nil && seg.size-seg.used < size {
			if seg.liveN == 0 {
				idle = append(idle, seg)
			}
			open[pool], seg = nil, nil
			for i, c := range idle {
				if c.small == small && c.size >= size && c.liveN == 0 {
					idle = append(idle[:i], idle[i+1:]...)
					c.allocs, c.used = c.allocs[:0], 0
					open[pool], seg = c, c
					break
				}
			}
		}
		if seg == nil {
			segSize := int64(2 << 20)
			if !small {
				segSize = max(20<<20, (size+(2<<20)-1)/(2<<20)*(2<<20))
			}
			stack := s.pickStack()
			seg = &segment{dev: dev, addr: next, size: segSize, small: small, stack: stack,
				stream: streams[s.rng.IntN(len(streams))]}
			next += uint64(segSize) + 2<<20
			s.segs = append(s.segs, seg)
			open[pool] = seg
			act := aSegmentAlloc
			if s.cfg.Expandable && !small {
				act = aSegmentMap
			}
			tr = append(tr, event{action: act, addr: seg.addr, size: segSize, stream: seg.stream, time: s.tick(), stack: stack})
		}
		stack := s.pickStack()
		ai := int32(len(s.allocs))
		s.allocs = append(s.allocs, allocation{seg: seg, addr: seg.addr + uint64(seg.used), size: size, req: req, stack: stack, live: true})
		seg.allocs = append(seg.allocs, ai)
		seg.used += size
		seg.liveN++
		if s.cfg.Grow > 0 && s.rng.Float64() < s.cfg.Grow {
			keptBytes += size
		} else {
			live = append(live, ai)
		}
		tr = append(tr, event{action: aAlloc, addr: s.allocs[ai].addr, size: req, stream: seg.stream, time: s.tick(), stack: stack})
	}
	allocated := keptBytes
	for _, ai := range live {
		allocated += s.allocs[ai].size
	}
	if s.cfg.OOM && dev == 0 {
		tr = append(tr, event{action: aOOM, size: 8 << 30, time: s.tick(), stack: s.pickStack(), devFree: 300 << 20})
	}
	tr = append(tr, event{action: aSnapshot, size: allocated, time: s.tick(), stack: -1})
	s.traces[dev] = tr
}

// emit writes the simulated final state and traces as a snapshot pickle.
func (s *sim) emit(w io.Writer) (Stats, error) {
	var st Stats
	g := s.cfg.Generation
	p := newPickler(w)
	w2 := &writer{p: p, sim: s, frameMemo: map[frame]int{}, listMemo: map[int32]int{}}
	if g == GenList {
		w2.segments(&st)
	} else {
		keys := []string{"segments", "device_traces"}
		if g.atLeast(Gen23) {
			keys = append(keys, "allocator_settings")
		}
		if g.atLeast(Gen25) {
			keys = append(keys, "external_annotations")
		}
		p.dict(keys, func(i int) {
			switch keys[i] {
			case "segments":
				w2.segments(&st)
			case "device_traces":
				w2.traces(&st)
			case "allocator_settings":
				w2.settings()
			case "external_annotations":
				w2.annotations()
			}
		})
	}
	err := p.stop()
	st.Bytes = p.n
	if err != nil {
		return st, fmt.Errorf("writing snapshot: %w", err)
	}
	return st, nil
}

type writer struct {
	p         *pickler
	sim       *sim
	frameMemo map[frame]int // frame dict -> memo index, when shared
	listMemo  map[int32]int // stack -> memo index of its frames list, when shared
}

func (w *writer) frames(stack int32) {
	p, s := w.p, w.sim
	if stack < 0 {
		w.list(0, false, nil)
		return
	}
	// The memo maps are filled only when stacks are shared.
	if idx, ok := w.listMemo[stack]; ok {
		p.get(idx)
		return
	}
	fr := s.stacks[stack]
	idx := p.begin(len(fr), false)
	if s.cfg.ShareStack {
		w.listMemo[stack] = idx
	}
	keys := []string{"name", "filename", "line"}
	if !s.cfg.Generation.atLeast(Gen21) {
		keys = []string{"filename", "name", "line"}
	}
	for _, f := range fr {
		p.item()
		if m, ok := w.frameMemo[f]; ok {
			p.get(m)
		} else {
			m := p.dict(keys, func(i int) {
				switch keys[i] {
				case "name":
					p.str(f.name)
				case "filename":
					p.str(f.file)
				case "line":
					p.uint(f.line)
				}
			})
			if s.cfg.ShareStack {
				w.frameMemo[f] = m
			}
		}
		p.done()
	}
	p.end()
}

// list writes a list of n items; fn writes item i. commit ends the pickle frame, when due, after each item.
func (w *writer) list(n int, commit bool, fn func(i int)) {
	p := w.p
	p.begin(n, false)
	for i := range n {
		p.item()
		fn(i)
		p.done()
		if commit {
			p.commit(false)
		}
	}
	p.end()
}

func (w *writer) segments(st *Stats) {
	segs := w.sim.segs
	w.list(len(segs), true, func(i int) { w.segment(segs[i], st) })
}

type block struct {
	addr      uint64
	size, req int64
	active    bool
	stack     int32
}

func (w *writer) segment(seg *segment, st *Stats) {
	p, s := w.p, w.sim
	g := s.cfg.Generation
	// Blocks: live allocations are active_allocated; dead runs and the tail coalesce into inactive blocks.
	var blocks []block
	off := seg.addr
	for _, ai := range seg.allocs {
		a := s.allocs[ai]
		if a.live {
			blocks = append(blocks, block{addr: a.addr, size: a.size, req: a.req, active: true, stack: a.stack})
		} else if n := len(blocks); n > 0 && !blocks[n-1].active {
			blocks[n-1].size += a.size
			blocks[n-1].req = a.req // stale, as PyTorch leaves it
		} else {
			blocks = append(blocks, block{addr: a.addr, size: a.size, req: a.req, stack: -1})
		}
		off += uint64(a.size)
	}
	if tail := seg.size - seg.used; tail > 0 {
		if n := len(blocks); n > 0 && !blocks[n-1].active {
			blocks[n-1].size += tail
		} else {
			blocks = append(blocks, block{addr: off, size: tail, req: tail, stack: -1})
		}
	}
	var alloc, req int64
	for _, b := range blocks {
		if b.active {
			alloc += b.size
			req += b.req
		}
	}
	st.Segments++
	st.Blocks += len(blocks)
	st.ReservedBytes += seg.size
	st.AllocatedBytes += alloc
	st.RequestedBytes += req

	keys := []string{"device", "address", "total_size", "allocated_size", "active_size", "requested_size", "stream", "segment_type"}
	if g.atLeast(Gen21) {
		keys = append(keys, "segment_pool_id", "is_expandable")
	}
	keys = append(keys, "blocks")
	if g.atLeast(Gen21) && seg.stack >= 0 && s.cfg.Stacks != StacksNone {
		keys = append(keys, "frames")
	}
	p.dict(keys, func(i int) {
		switch keys[i] {
		case "device":
			p.int(int64(seg.dev))
		case "address":
			p.uint(seg.addr)
		case "total_size":
			p.int(seg.size)
		case "allocated_size", "active_size":
			p.int(alloc)
		case "requested_size":
			p.int(req)
		case "stream":
			p.uint(seg.stream)
		case "segment_type":
			if seg.small {
				p.str("small")
			} else {
				p.str("large")
			}
		case "segment_pool_id":
			p.pair(0, 0)
		case "is_expandable":
			p.boolean(s.cfg.Expandable && !seg.small)
		case "frames":
			w.frames(seg.stack)
		case "blocks":
			w.list(len(blocks), false, func(j int) { w.block(seg, blocks[j]) })
		}
	})
}

func (w *writer) block(seg *segment, b block) {
	p, s := w.p, w.sim
	g := s.cfg.Generation
	state := "inactive"
	if b.active {
		state = "active_allocated"
	}
	var keys []string
	if g.atLeast(Gen21) {
		keys = []string{"address", "size", "requested_size", "state", "frames"}
	} else {
		keys = []string{"size", "requested_size", "state"}
		if b.active && s.cfg.Stacks != StacksNone {
			keys = append(keys, "history")
		}
	}
	p.dict(keys, func(i int) {
		switch keys[i] {
		case "address":
			p.uint(b.addr)
		case "size":
			p.int(b.size)
		case "requested_size":
			p.int(b.req)
		case "state":
			p.str(state)
		case "frames":
			if b.active {
				w.frames(b.stack)
			} else {
				w.frames(-1)
			}
		case "history":
			hk := []string{"addr", "real_size", "frames"}
			w.list(1, false, func(int) {
				p.dict(hk, func(j int) {
					switch hk[j] {
					case "addr":
						p.uint(b.addr)
					case "real_size":
						p.int(b.req)
					case "frames":
						w.frames(b.stack)
					}
				})
			})
		}
	})
}

func (w *writer) traces(st *Stats) {
	p, s := w.p, w.sim
	g := s.cfg.Generation
	w.list(len(s.traces), false, func(dev int) {
		tr := s.traces[dev]
		w.list(len(tr), true, func(j int) {
			e := tr[j]
			st.Entries++
			keys := []string{"action"}
			if e.action == aOOM {
				keys = append(keys, "device_free")
			} else {
				keys = append(keys, "addr")
			}
			keys = append(keys, "size", "stream")
			if g.atLeast(Gen22) {
				keys = append(keys, "time_us")
			}
			if g.atLeast(Gen28) {
				keys = append(keys, "compile_context")
			}
			if g.atLeast(Gen210) {
				keys = append(keys, "user_metadata")
			}
			withFrames := s.cfg.Stacks != StacksNone && e.stack >= 0
			if g.atLeast(Gen210) && s.cfg.Stacks != StacksNone {
				withFrames = true
			}
			if withFrames {
				keys = append(keys, "frames")
			}
			p.dict(keys, func(i int) {
				switch keys[i] {
				case "action":
					p.key(actionNames[e.action])
				case "addr":
					p.uint(e.addr)
				case "device_free":
					p.int(e.devFree)
				case "size":
					p.int(e.size)
				case "stream":
					p.uint(e.stream)
				case "time_us":
					p.int(e.time)
				case "compile_context":
					p.key("N/A")
				case "user_metadata":
					p.key("")
				case "frames":
					w.frames(e.stack)
				}
			})
		})
	})
}

func (w *writer) settings() {
	p, s := w.p, w.sim
	keys := []string{"PYTORCH_CUDA_ALLOC_CONF", "max_split_size", "garbage_collection_threshold",
		"expandable_segments", "pinned_num_register_threads", "release_lock_on_cudamalloc",
		"pinned_use_cuda_host_register", "roundup_power2_divisions"}
	p.dict(keys, func(i int) {
		switch keys[i] {
		case "PYTORCH_CUDA_ALLOC_CONF":
			if s.cfg.Expandable {
				p.str("expandable_segments:True")
			} else {
				p.str("")
			}
		case "max_split_size":
			p.int(-1)
		case "garbage_collection_threshold":
			p.float(0)
		case "expandable_segments":
			p.boolean(s.cfg.Expandable)
		case "pinned_num_register_threads":
			p.int(1)
		case "release_lock_on_cudamalloc", "pinned_use_cuda_host_register":
			p.boolean(false)
		case "roundup_power2_divisions":
			var rk []string
			for k := 1; k <= 32768; k *= 2 {
				rk = append(rk, fmt.Sprint(k))
			}
			p.dict(rk, func(int) { p.int(0) })
		}
	})
}

func (w *writer) annotations() {
	p := w.p
	marks := []struct{ stage, name string }{{"START", "forward"}, {"END", "forward"}, {"START", "backward"}, {"END", "backward"}}
	w.list(len(marks), false, func(i int) {
		m := marks[i]
		keys := []string{"stage", "name", "device", "time_us"}
		p.dict(keys, func(j int) {
			switch keys[j] {
			case "stage":
				p.key(m.stage)
			case "name":
				p.key(m.name)
			case "device":
				p.int(0)
			case "time_us":
				p.int(1_748_000_000_000_000 + int64(i)*1000)
			}
		})
	})
}
