#!/usr/bin/env python3
"""Generate memscan's snapshot test fixtures with nothing but the standard pickle module.

Usage (from the repository root):

    python3 snapshot/testdata/gen/gen.py            # rewrite snapshot/testdata/*.pickle, bad/*, and
                                                   # testdata/example/rank0_memory_snapshot.pickle
    python3 snapshot/testdata/gen/gen.py --big N DIR
                                                   # write DIR/big.pickle: the example training run
                                                   # repeated for N steps (for benchmarks; not committed)

Each fixture mirrors one feature of the PyTorch CUDA caching-allocator snapshot format (see the format notes
in ../shared/docs/snapshot_format.md): the torch 2.0 `history` blocks, a bare list of segments, 2.1 traces
without time_us, several devices and streams, oom events, expandable segments with segment_map/unmap,
private pools with active_pending_free blocks, external_annotations, user_metadata, Windows paths, the empty
snapshot, pickle protocols 2 to 5, frame lists shared through the pickle memo, and 64-bit integers. The bad
inputs cover truncation, opcodes that load Python objects, huge length prefixes, deep nesting, wrong shapes and
self-contradicting blocks. The Go tests state the expected values of every fixture; keep the two in step.

Everything is deterministic (fixed seeds, no clocks), so rerunning the script reproduces the committed files.
"""

import collections
import json
import os
import pickle
import random
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TESTDATA = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(TESTDATA))
EXAMPLE_DIR = os.path.join(REPO, "testdata", "example")

MiB = 1 << 20


def frame(name, filename, line):
    return {"name": name, "filename": filename, "line": line}


def write(name, obj, protocol, sub=""):
    path = os.path.join(TESTDATA, sub, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        pickle.dump(obj, f, protocol=protocol)


def write_json(name, obj):
    """The JSON rendition of a snapshot (tuples become lists), as the 2026 web viewer accepts."""
    with open(os.path.join(TESTDATA, name), "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")


def write_raw(name, data, sub="bad"):
    path = os.path.join(TESTDATA, sub, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


# --------------------------------------------------------------------------------------------------------------
# Good fixtures


def v20_history():
    """torch 2.0: blocks without address or frames, stacks only in history; one block lacks requested_size
    (falls back to history[0].real_size), one lacks both (falls back to size)."""
    base = 0x7F0000000000
    fr = [
        {"filename": "/home/u/proj/model.py", "name": "forward", "line": 42},
        {"filename": "/home/u/proj/train.py", "name": "main", "line": 7},
    ]
    seg0 = {
        "device": 0, "address": base, "total_size": 2 * MiB, "allocated_size": 1536, "active_size": 1536,
        "requested_size": 1000 + 400, "stream": 0, "segment_type": "small",
        "blocks": [
            {"size": 1024, "requested_size": 1000, "state": "active_allocated",
             "history": [{"addr": base, "real_size": 1000, "frames": fr}]},
            # no requested_size: history[0].real_size (400) is used
            {"size": 512, "state": "active_allocated",
             "history": [{"addr": base + 1024, "real_size": 400, "frames": fr},
                         {"addr": base + 1024, "real_size": 512}]},
            # inactive, merged: two history entries pointing inside the block
            {"size": 2 * MiB - 1536, "requested_size": 300, "state": "inactive",
             "history": [{"addr": base + 1536, "real_size": 300}, {"addr": base + 4096, "real_size": 100}]},
        ],
    }
    seg1 = {
        "device": 0, "address": base + 32 * MiB, "total_size": 20 * MiB, "allocated_size": 20 * MiB,
        "active_size": 20 * MiB, "requested_size": 20 * MiB, "stream": 0, "segment_type": "large",
        # neither requested_size nor history: size is used
        "blocks": [{"size": 20 * MiB, "state": "active_allocated"}],
    }
    traces = [[{"action": "snapshot", "addr": 0, "size": 20 * MiB + 1400, "stream": 0}]]
    write("v20_history.pickle", {"segments": [seg0, seg1], "device_traces": traces}, 4)


def v21_segment(device, address, stream, blocks, frames=None, pool=(0, 0), expandable=False, seg_type="large"):
    """A 2.1+ segment dict whose totals agree with its blocks."""
    total = sum(b["size"] for b in blocks)
    allocated = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
    active = sum(b["size"] for b in blocks if b["state"] != "inactive")
    requested = sum(b["requested_size"] for b in blocks if b["state"] != "inactive")
    addr = address
    for b in blocks:
        b["address"] = addr
        addr += b["size"]
    seg = {
        "device": device, "address": address, "total_size": total, "allocated_size": allocated,
        "active_size": active, "requested_size": requested, "stream": stream, "segment_type": seg_type,
        "segment_pool_id": pool, "is_expandable": expandable, "blocks": blocks,
    }
    seg["frames"] = frames if frames is not None else []
    return seg


def blk(size, requested, state, frames=None):
    # Key order of the pybind path: address (filled by v21_segment), size, requested_size, state, frames.
    return {"size": size, "requested_size": requested, "state": state, "frames": frames if frames is not None else []}


def bare_list():
    """torch.cuda.memory_snapshot(): a bare list of 2.1-style segments on device 1."""
    fr = [frame("forward", "/home/u/proj/model.py", 10)]
    segs = [
        v21_segment(1, 0x7F1000000000, 0, [blk(4 * MiB, 4 * MiB - 100, "active_allocated", fr),
                                          blk(16 * MiB, 16 * MiB, "inactive")]),
        v21_segment(1, 0x7F1002000000, 0, [blk(512, 8, "active_allocated", fr), blk(2 * MiB - 512, 0, "inactive")],
                    seg_type="small"),
    ]
    write("bare_list.pickle", segs, 4)


def v21_multi_device():
    """torch 2.1, written with protocol 2 (BINPUT memo opcodes, as the C++ pickler does): two devices, two
    streams, traces without time_us; segment_free entries carry no frames key."""
    fa = [frame("forward", "/home/u/proj/model.py", 20), frame("main", "/home/u/proj/train.py", 5)]
    s0 = v21_segment(0, 0x7F2000000000, 0, [blk(6 * MiB, 6 * MiB, "active_allocated", fa),
                                           blk(14 * MiB, 0, "inactive")], frames=fa)
    s1 = v21_segment(1, 0x7F3000000000, 0x55AA00, [blk(20 * MiB, 20 * MiB - 512, "active_allocated", fa)], frames=fa)
    t0 = [
        {"action": "segment_alloc", "addr": 0x7F2000000000, "size": 20 * MiB, "stream": 0, "frames": fa},
        {"action": "alloc", "addr": 0x7F2000000000, "size": 6 * MiB, "stream": 0, "frames": fa},
        {"action": "segment_alloc", "addr": 0x7F2001400000, "size": 2 * MiB, "stream": 0, "frames": fa},
        {"action": "segment_free", "addr": 0x7F2001400000, "size": 2 * MiB, "stream": 0},
    ]
    t1 = [
        {"action": "segment_alloc", "addr": 0x7F3000000000, "size": 20 * MiB, "stream": 0x55AA00, "frames": fa},
        {"action": "alloc", "addr": 0x7F3000000000, "size": 20 * MiB - 512, "stream": 0x55AA00, "frames": fa},
    ]
    write("v21_multi_device.pickle", {"segments": [s0, s1], "device_traces": [t0, t1, []]}, 2)


def v22_oom():
    """torch 2.2: time_us on every entry, an oom entry with device_free instead of addr."""
    fa = [frame("forward", "/home/u/proj/model.py", 30)]
    s0 = v21_segment(0, 0x7F4000000000, 0, [blk(40 * MiB, 40 * MiB, "active_allocated", fa)], frames=fa)
    t = 1700000000000000
    tr = [
        {"action": "segment_alloc", "addr": 0x7F4000000000, "size": 40 * MiB, "stream": 0, "time_us": t, "frames": fa},
        {"action": "alloc", "addr": 0x7F4000000000, "size": 40 * MiB, "stream": 0, "time_us": t + 5, "frames": fa},
        {"action": "oom", "device_free": 3 * MiB, "size": 80 * (1 << 30), "stream": 0, "time_us": t + 9, "frames": fa},
    ]
    d = {"segments": [s0], "device_traces": [tr]}
    write("v22_oom.pickle", d, 3)
    write_json("v22_oom.json", d)


def allocator_settings(expandable=False, extra=False):
    d = {
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True" if expandable else "",
        "max_split_size": -1,
        "garbage_collection_threshold": 0.5 if extra else 0.0,
        "expandable_segments": expandable,
        "pinned_num_register_threads": 1,
        "release_lock_on_cudamalloc": False,
        "pinned_use_cuda_host_register": False,
        "roundup_power2_divisions": {str(1 << i): (4 if i == 10 else 0) for i in range(16)},
    }
    if extra:
        d["graph_capture_record_stream_reuse"] = True
        d["some_future_knob"] = [1, "two"]
    return d


def v28_expandable():
    """torch 2.8: expandable segments grown by segment_map and shrunk by segment_unmap; compile_context."""
    fa = [frame("forward", "/home/u/proj/model.py", 40)]
    base = 0x7F5000000000
    s0 = v21_segment(0, base, 0, [blk(30 * MiB, 30 * MiB - 1024, "active_allocated", fa), blk(4 * MiB, 0, "inactive")],
                     expandable=True)
    t = 1750000000000000
    ctx = "N/A"
    tr = [
        {"action": "segment_map", "addr": base, "size": 20 * MiB, "stream": 0, "time_us": t, "frames": fa,
         "compile_context": ctx},
        {"action": "segment_map", "addr": base + 20 * MiB, "size": 20 * MiB, "stream": 0, "time_us": t + 1,
         "frames": fa, "compile_context": ctx},
        {"action": "alloc", "addr": base, "size": 30 * MiB - 1024, "stream": 0, "time_us": t + 2, "frames": fa,
         "compile_context": "Torch-Compiled Region: 0/0"},
        {"action": "segment_unmap", "addr": base + 34 * MiB, "size": 6 * MiB, "stream": 0, "time_us": t + 3,
         "frames": [], "compile_context": ctx},
    ]
    d = {"segments": [s0], "device_traces": [tr], "allocator_settings": allocator_settings(True),
         "external_annotations": []}
    write("v28_expandable.pickle", d, 4)


def v25_pools():
    """torch 2.5: private pools (0, 1) and (0, 2), active_pending_free blocks, external_annotations, and an
    allocator_settings key memscan does not know."""
    fa = [frame("capture", "/home/u/proj/graphs.py", 12)]
    s0 = v21_segment(0, 0x7F6000000000, 0, [blk(2 * MiB, 2 * MiB, "active_allocated", fa)])
    s1 = v21_segment(0, 0x7F6000200000, 0, [blk(1 * MiB, 1000, "active_pending_free", fa),
                                           blk(1 * MiB, 2 * MiB, "inactive")], pool=(0, 1))
    s2 = v21_segment(0, 0x7F6000400000, 7, [blk(4 * MiB, 4 * MiB - 4096, "active_allocated", fa),
                                           blk(6 * MiB, 6 * MiB, "active_pending_free", fa)], pool=(0, 2))
    ann = [
        {"stage": "START", "name": "forward", "device": 0, "time_us": 1730000000000000},
        {"stage": "END", "name": "forward", "device": 0, "time_us": 1730000000000900, "tag": "step1"},
    ]
    d = {"segments": [s0, s1, s2], "device_traces": [[]], "allocator_settings": allocator_settings(extra=True),
         "external_annotations": ann}
    write("v25_pools.pickle", d, 4)


def v210_user_metadata():
    """torch 2.10+ / 2026, protocol 5: user_metadata, Windows paths, the annotate action, an action memscan does
    not know, pool_id, internal_metadata and category (as profile_plot writes it) on trace entries,
    host_segments/host_traces."""
    fw = [frame("forward", "D:\\Dev\\proj\\model.py", 77), frame("<module>", "D:\\Dev\\proj\\train.py", 3)]
    s0 = v21_segment(0, 0x7F7000000000, 0, [blk(20 * MiB, 20 * MiB, "active_allocated", fw)], frames=fw)
    t = 1770000000000000
    common = {"compile_context": "N/A", "pool_id": (0, 0)}
    tr = [
        dict(action="alloc", addr=0x7F7000000000, size=20 * MiB, stream=0, time_us=t, frames=fw,
             user_metadata="", **common),
        dict(action="annotate", addr=0x7F7000000000, size=0, stream=0, time_us=t + 1, frames=[],
             user_metadata='{"layer": 3}', internal_metadata="mallocWithAddress", **common),
        dict(action="future_action", addr=0x7F7000000000, size=0, stream=0, time_us=t + 2, frames=[],
             user_metadata="", category="ACTIVATION", **common),
    ]
    host = v21_segment(-1, 0x7F8000000000, 0, [blk(2 * MiB, 2 * MiB, "active_allocated", fw)])
    d = {"segments": [s0], "device_traces": [tr], "allocator_settings": allocator_settings(),
         "external_annotations": [], "host_segments": [host],
         "host_traces": [[dict(action="alloc", addr=0x7F8000000000, size=2 * MiB, stream=0, time_us=t, frames=fw,
                               user_metadata="", **common)]]}
    write("v210_user_metadata.pickle", d, 5)
    write_json("v210_user_metadata.json", d)


def empty_snapshot():
    """A snapshot taken before anything was allocated (like the real angelolmn file)."""
    d = {"segments": [], "device_traces": [[]], "allocator_settings": allocator_settings(), "external_annotations": []}
    write("empty_snapshot.pickle", d, 4)


def shared_frames():
    """One frames list object referenced by 50 blocks and 50 trace entries: pickle memoizes it, so the file holds
    it once plus BINGET references. A second, equal but distinct list is pickled separately."""
    shared = [frame("forward", "/home/u/proj/model.py", 99), frame("main", "/home/u/proj/train.py", 1)]
    other = [dict(f) for f in shared]
    blocks = [blk(512, 512, "active_allocated", shared) for _ in range(50)]
    blocks.append(blk(2 * MiB - 50 * 512, 0, "inactive"))
    s0 = v21_segment(0, 0x7F9000000000, 0, blocks, frames=other, seg_type="small")
    tr = [{"action": "alloc", "addr": b["address"], "size": 512, "stream": 0, "frames": shared} for b in blocks[:50]]
    write("shared_frames.pickle", {"segments": [s0], "device_traces": [tr]}, 4)


def large_ints():
    """64-bit values: an address above 2^63 (pickled as a 9-byte LONG1), a size above 2^32, a stream handle
    above 2^63."""
    addr = 0xFFFF800000000000
    s0 = v21_segment(0, addr, 0x8000000000000001, [blk(6 << 30, (6 << 30) - 512, "active_allocated")])
    tr = [{"action": "alloc", "addr": addr, "size": (6 << 30) - 512, "stream": 0x8000000000000001}]
    write("large_ints.pickle", {"segments": [s0], "device_traces": [tr]}, 4)


def contradictory():
    """Decodes, but contradicts itself: blocks sum to less than total_size, allocated_size and active_size
    disagree with the block states, an active block requests more than its size, and two segments overlap."""
    base = 0x7FA000000000
    s0 = {
        "device": 0, "address": base, "total_size": 4 * MiB, "allocated_size": 3 * MiB, "active_size": 3 * MiB,
        "requested_size": 2 * MiB + 100, "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
        "is_expandable": False, "frames": [],
        "blocks": [
            {"address": base, "size": 2 * MiB, "requested_size": 2 * MiB + 100, "state": "active_allocated",
             "frames": []},
            {"address": base + 2 * MiB, "size": 1 * MiB, "requested_size": 0, "state": "inactive", "frames": []},
        ],
    }
    s1 = v21_segment(0, base + 3 * MiB, 0, [blk(2 * MiB, 2 * MiB, "active_allocated")])
    write("contradictory.pickle", {"segments": [s0, s1], "device_traces": [[]]}, 4)


# --------------------------------------------------------------------------------------------------------------
# The README example: one training step of a small transformer, simulated through a caching allocator.


class Allocator:
    """A small model of the CUDA caching allocator: 512-byte rounding, a small pool of 2 MiB segments for
    requests up to 1 MiB, large segments of 20 MiB (requests under 10 MiB) or rounded up to 2 MiB, best-fit
    reuse of cached blocks, splitting, and coalescing of freed neighbours. It records the trace as PyTorch does."""

    def __init__(self, seed, t0):
        self.segments = []  # dicts with address, size, stype, stream, frames, blocks (list of dicts)
        self.trace = []
        self.next_addr = 0x7F3A00000000
        self.t = t0
        self.rng = random.Random(seed)
        self.live = {}  # address -> (segment, block)

    def tick(self):
        self.t += self.rng.randint(3, 40)
        return self.t

    def event(self, action, addr, size, frames):
        self.trace.append({"action": action, "addr": addr, "size": size, "stream": 0, "time_us": self.tick(),
                           "frames": frames, "compile_context": "N/A", "user_metadata": ""})

    def malloc(self, requested, frames):
        size = max(512, (requested + 511) // 512 * 512)
        small = size <= MiB
        best = None
        for seg in self.segments:
            if (seg["stype"] == "small") != small:
                continue
            for i, b in enumerate(seg["blocks"]):
                if b["state"] == "inactive" and b["size"] >= size:
                    if best is None or b["size"] < best[2]["size"]:
                        best = (seg, i, b)
        if best is None:
            if small:
                seg_size = 2 * MiB
            elif size < 10 * MiB:
                seg_size = 20 * MiB
            else:
                seg_size = (size + 2 * MiB - 1) // (2 * MiB) * (2 * MiB)
            addr = self.next_addr
            self.next_addr += seg_size + 2 * MiB  # leave a gap, as real mappings do
            seg = {"address": addr, "size": seg_size, "stype": "small" if small else "large", "frames": frames,
                   "blocks": [{"address": addr, "size": seg_size, "requested": 0, "state": "inactive", "frames": []}]}
            self.segments.append(seg)
            self.event("segment_alloc", addr, seg_size, frames)
            best = (seg, 0, seg["blocks"][0])
        seg, i, b = best
        rest = b["size"] - size
        if rest > (512 if small else MiB):
            b["size"] = size
            seg["blocks"].insert(i + 1, {"address": b["address"] + size, "size": rest, "requested": 0,
                                         "state": "inactive", "frames": []})
        b["state"] = "active_allocated"
        b["requested"] = requested
        b["frames"] = frames
        self.live[b["address"]] = (seg, b)
        self.event("alloc", b["address"], requested, frames)
        return b["address"]

    def free(self, addr, frames):
        seg, b = self.live.pop(addr)
        self.event("free_requested", addr, b["requested"], frames)
        self.event("free_completed", addr, b["requested"], frames)
        b["state"] = "inactive"
        b["frames"] = []
        blocks = seg["blocks"]
        i = blocks.index(b)
        if i + 1 < len(blocks) and blocks[i + 1]["state"] == "inactive":
            b["size"] += blocks.pop(i + 1)["size"]
        if i > 0 and blocks[i - 1]["state"] == "inactive":
            blocks[i - 1]["size"] += blocks.pop(i)["size"]

    def snapshot_segments(self):
        out = []
        for seg in sorted(self.segments, key=lambda s: s["address"]):
            blocks = [blk(b["size"], b["requested"], b["state"], b["frames"]) for b in seg["blocks"]]
            out.append(v21_segment(0, seg["address"], 0, blocks, frames=seg["frames"], seg_type=seg["stype"]))
        return out


def example_run(steps=1, layers=4, seed=1):
    """Allocations of a GPT-style model (vocab 32000, d_model 512, 8 heads, seq 256, batch 8, fp32) through
    model construction and `steps` training steps with AdamW. Frames are innermost first and every call site
    reuses one frames list object, so the pickle shares them through its memo as real snapshots do."""
    TORCH = "/opt/conda/lib/python3.11/site-packages/torch"
    USER = "/home/alice/gpt-small"
    sites = {}

    def site(*fs):
        key = tuple(fs)
        if key not in sites:
            sites[key] = [frame(n, f, l) for (n, f, l) in fs]
        return sites[key]

    train_main = ("main", USER + "/train.py", 88)
    train_step = ("train_step", USER + "/train.py", 61)
    call_impl = ("_call_impl", TORCH + "/nn/modules/module.py", 1747)
    wrapped = ("_wrapped_call_impl", TORCH + "/nn/modules/module.py", 1736)

    def fwd(*inner):
        return site(*inner, call_impl, wrapped, ("forward", USER + "/model.py", 118), call_impl, wrapped,
                    ("train_step", USER + "/train.py", 54), train_main)

    V, D, H, S, B = 32000, 512, 8, 256, 8
    f4 = 4
    a = Allocator(seed, 1767225600000000)
    params = []
    # --- model construction
    init_lin = lambda line: site(("__init__", TORCH + "/nn/modules/linear.py", 106),
                                 ("__init__", USER + "/model.py", line), ("__init__", USER + "/model.py", 97),
                                 ("main", USER + "/train.py", 71))
    params.append(a.malloc(V * D * f4, site(("__init__", TORCH + "/nn/modules/sparse.py", 167),
                                            ("__init__", USER + "/model.py", 92), ("main", USER + "/train.py", 71))))
    params.append(a.malloc(S * D * f4, site(("__init__", TORCH + "/nn/modules/sparse.py", 167),
                                            ("__init__", USER + "/model.py", 93), ("main", USER + "/train.py", 71))))
    ln_init = site(("__init__", TORCH + "/nn/modules/normalization.py", 207), ("__init__", USER + "/model.py", 34),
                   ("__init__", USER + "/model.py", 97), ("main", USER + "/train.py", 71))
    for _ in range(layers):
        for shape, line in (((3 * D, D), 21), ((D, D), 22), ((4 * D, D), 45), ((D, 4 * D), 46)):
            params.append(a.malloc(shape[0] * shape[1] * f4, init_lin(line)))
            params.append(a.malloc(shape[0] * f4, init_lin(line)))
        for _ in range(2):
            params.append(a.malloc(D * f4, ln_init))
            params.append(a.malloc(D * f4, ln_init))
    params.append(a.malloc(D * f4, ln_init))
    params.append(a.malloc(D * f4, ln_init))

    batch_site = site(("get_batch", USER + "/data.py", 40), ("main", USER + "/train.py", 80))
    adam_state = site(("_init_group", TORCH + "/optim/adamw.py", 154), ("step", TORCH + "/optim/adamw.py", 209),
                      ("wrapper", TORCH + "/optim/optimizer.py", 487), ("main", USER + "/train.py", 66))
    adam_tmp = site(("_multi_tensor_adamw", TORCH + "/optim/adamw.py", 598), ("step", TORCH + "/optim/adamw.py", 231),
                    ("wrapper", TORCH + "/optim/optimizer.py", 487), ("main", USER + "/train.py", 66))
    backward = site(("_engine_run_backward", TORCH + "/autograd/graph.py", 825),
                    ("backward", TORCH + "/autograd/__init__.py", 347), ("backward", TORCH + "/_tensor.py", 581),
                    ("train_step", USER + "/train.py", 58), train_main)
    grads = []
    opt_state = []
    act = B * S * D * f4
    for step in range(steps):
        x = a.malloc(B * S * 8, batch_site)
        y = a.malloc(B * S * 8, batch_site)
        acts = []
        acts.append(a.malloc(act, fwd(("forward", TORCH + "/nn/modules/sparse.py", 190),
                                      ("forward", USER + "/model.py", 112))))
        for layer in range(layers):
            ln = fwd(("layer_norm", TORCH + "/nn/functional.py", 2900),
                     ("forward", TORCH + "/nn/modules/normalization.py", 217), ("forward", USER + "/model.py", 60))
            lin = lambda line: fwd(("forward", TORCH + "/nn/modules/linear.py", 125), ("forward", USER + "/model.py", line))
            acts.append(a.malloc(act, ln))
            acts.append(a.malloc(3 * act, lin(26)))  # qkv
            scores = a.malloc(B * H * S * S * f4, fwd(("forward", USER + "/model.py", 29)))  # q @ k^T
            probs = a.malloc(B * H * S * S * f4, fwd(("softmax", TORCH + "/nn/functional.py", 2140),
                                                     ("forward", USER + "/model.py", 30)))
            acts.append(probs)
            a.free(scores, fwd(("forward", USER + "/model.py", 30)))
            acts.append(a.malloc(act, fwd(("forward", USER + "/model.py", 31))))  # probs @ v
            acts.append(a.malloc(act, lin(32)))  # proj
            acts.append(a.malloc(act, ln))
            acts.append(a.malloc(4 * act, lin(50)))  # fc1
            acts.append(a.malloc(4 * act, fwd(("gelu", TORCH + "/nn/functional.py", 1700), ("forward", USER + "/model.py", 51))))
            acts.append(a.malloc(act, lin(52)))  # fc2
        logits = a.malloc(B * S * V * f4, fwd(("forward", TORCH + "/nn/modules/linear.py", 125),
                                              ("forward", USER + "/model.py", 121)))
        loss_site = site(("cross_entropy", TORCH + "/nn/functional.py", 3479), ("train_step", USER + "/train.py", 56),
                         train_main)
        lse = a.malloc(B * S * V * f4, loss_site)  # log_softmax output: the peak
        loss = a.malloc(512, loss_site)
        # backward: logits grad, then activations are released layer by layer while parameter grads appear
        glogits = a.malloc(B * S * V * f4, backward)
        a.free(lse, backward)
        a.free(logits, backward)
        if not grads:
            for p in params:
                seg, b = a.live[p]
                grads.append(a.malloc(b["requested"], backward))
        a.free(glogits, backward)
        for addr in reversed(acts):
            tmp = a.malloc(act, backward)
            a.free(addr, backward)
            a.free(tmp, backward)
        a.free(loss, backward)
        a.free(x, site(("main", USER + "/train.py", 62)))
        a.free(y, site(("main", USER + "/train.py", 62)))
        # AdamW step: the first step creates exp_avg and exp_avg_sq for every parameter
        if not opt_state:
            for p in params:
                seg, b = a.live[p]
                opt_state.append(a.malloc(b["requested"], adam_state))
                opt_state.append(a.malloc(b["requested"], adam_state))
            opt_state.append(a.malloc(512, adam_state))  # step counter
        tmp = a.malloc(V * D * f4, adam_tmp)
        a.free(tmp, adam_tmp)
        if step + 1 < steps:
            for g in grads:
                a.free(g, site(("zero_grad", TORCH + "/optim/optimizer.py", 940), ("main", USER + "/train.py", 67)))
            grads = []
    segs = a.snapshot_segments()
    ann = []
    return {"segments": segs, "device_traces": [a.trace], "allocator_settings": allocator_settings(),
            "external_annotations": ann}


def example():
    d = example_run()
    os.makedirs(EXAMPLE_DIR, exist_ok=True)
    with open(os.path.join(EXAMPLE_DIR, "rank0_memory_snapshot.pickle"), "wb") as f:
        pickle.dump(d, f, protocol=4)


# --------------------------------------------------------------------------------------------------------------
# Bad inputs


def bad():
    good = pickle.dumps({"segments": [], "device_traces": [[]]}, protocol=4)
    write_raw("truncated.pickle", good[: len(good) // 2])
    write_raw("empty.pickle", b"")
    # GLOBAL (protocol 2 writes classes with the GLOBAL opcode), then REDUCE.
    write_raw("global.pickle", pickle.dumps(collections.OrderedDict(a=1), protocol=2))
    # STACK_GLOBAL (protocol 4).
    write_raw("stack_global.pickle", pickle.dumps(collections.OrderedDict(a=1), protocol=4))
    # REDUCE with no global before it: offset 4 is the REDUCE opcode.
    write_raw("reduce.pickle", b"\x80\x02" + b"N)" + b"R" + b".")
    # INST names its class inline: MARK at offset 2, INST at offset 3.
    write_raw("inst.pickle", b"\x80\x02" + b"(ios\nsystem\n" + b".")
    # BINUNICODE8 claiming 2 GiB with 5 bytes behind it: the opcode is at offset 2.
    write_raw("huge_unicode8.pickle", b"\x80\x04" + b"\x8d" + struct.pack("<Q", 2 << 30) + b"hello")
    # FRAME claiming 2 GiB.
    write_raw("huge_frame.pickle", b"\x80\x04" + b"\x95" + struct.pack("<Q", 2 << 30) + b"}.")
    # LONG4 claiming 2 GiB of integer bytes.
    write_raw("huge_long4.pickle", b"\x80\x02" + b"\x8b" + struct.pack("<i", (2 << 30) - 1) + b"\x01\x02")
    # 100,000 nested lists: EMPTY_LIST x N then APPEND x (N-1).
    n = 100000
    write_raw("deep_lists.pickle", b"\x80\x04" + b"]" * n + b"a" * (n - 1) + b".")
    # 5,000 nested MARKs.
    write_raw("deep_marks.pickle", b"\x80\x04" + b"(" * 5000 + b"].")
    write_raw("int.pickle", pickle.dumps(42, protocol=4))
    write_raw("dict_without_segments.pickle", pickle.dumps({"foo": 1, "bar": [1, 2]}, protocol=4))
    write_raw("list_of_ints.pickle", pickle.dumps([1, 2, 3], protocol=4))
    seg = v21_segment(0, 0x7FB000000000, 0, [blk(512, 512, "active_allocated"), blk(1024, 0, "inactive")])
    seg["blocks"][1]["size"] = -5
    write_raw("negative_size.pickle", pickle.dumps({"segments": [seg], "device_traces": [[]]}, protocol=4))
    seg = v21_segment(0, 0x7FB000000000, 0, [blk(512, 512, "active_allocated")])
    del seg["stream"]
    write_raw("missing_stream.pickle", pickle.dumps({"segments": [seg], "device_traces": [[]]}, protocol=4))
    rng = random.Random(7)
    write_raw("random.pickle", b"\x80\x04" + bytes(rng.randrange(256) for _ in range(300)))
    write_raw("proto1.pickle", b"\x80\x01}.")
    write_raw("memo_missing.pickle", b"\x80\x02h\x05.")


def big(steps, outdir):
    d = example_run(steps=steps, layers=12, seed=2)
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "big.pickle"), "wb") as f:
        pickle.dump(d, f, protocol=4)


def main(argv):
    if len(argv) == 4 and argv[1] == "--big":
        big(int(argv[2]), argv[3])
        return
    if len(argv) != 1:
        sys.exit(__doc__)
    v20_history()
    bare_list()
    v21_multi_device()
    v22_oom()
    v28_expandable()
    v25_pools()
    v210_user_metadata()
    empty_snapshot()
    shared_frames()
    large_ints()
    contradictory()
    example()
    bad()


if __name__ == "__main__":
    main(sys.argv)
