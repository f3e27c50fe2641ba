// Package allocator models PyTorch's native CUDA caching allocator (torch 2.x, c10/cuda/CUDACachingAllocator)
// so that reserved memory can be reproduced from a recorded trace and predicted under other
// PYTORCH_CUDA_ALLOC_CONF settings without a GPU.
//
// Two ways in:
//
//   - the event API: New, then Malloc / MallocIn, Free, EmptyCache and ReleasePool on an Allocator, for any
//     synthetic sequence of allocations (memscan static's estimate);
//   - the trace driver: Record reads a snapshot's device trace once, Replay drives a fresh model with it under
//     any Config, ReplaySnapshot does both for the recorded settings and a what-if.
//
// # Rules modelled, and the torch version each follows
//
// The model follows torch 2.11 (checked against complete H200 / torch 2.11 traces, where it reproduces
// max_memory_reserved to the byte and every segment size in order). Per rule:
//
//   - Rounding (all 2.x): requests under 512 B take 512 B, others round up to 512 B;
//     roundup_power2_divisions (single number since 1.12, per-interval list since 2.0) rounds to the next of d
//     steps between powers of two for a request above 512·d, with 16 intervals from 1 MiB to 32 GiB; 1 acts
//     like 0 (as fixed for 2.9).
//   - Pools and segments (all 2.x): rounded requests up to 1 MiB use the small pool and 2 MiB segments; larger
//     ones the large pool, 20 MiB segments below 10 MiB, else the request rounded up to 2 MiB. The 20 MiB is
//     large_segment_size_mb when set (newest main, 2026; same default).
//   - Best fit (2.11): the first free block of the pool in (stream, size, address) order with size ≥ the
//     request and the same stream; equal sizes go to the lowest address, so a new segment, which gets an
//     address below all earlier ones, wins ties. (After 2.11 ties go by allocation order instead; not modelled.)
//   - Splitting (all 2.x): small-pool blocks (and every block with expandable segments) split when at least
//     512 B remain; large-pool blocks when the request is below max_split_size and more than 1 MiB remains.
//     Freed blocks merge with free neighbours of the same mapped state.
//   - max_split_size_mb (since 1.10): requests below it never take cached blocks at or above it; requests at or
//     above it are never split and reuse a cached block only below request + max_non_split_rounding_mb
//     (that option since about 2.6, fixed 20 MiB before).
//   - Capacity and retry (all 2.x): a cudaMalloc fails when reserved + segment > the usable capacity; then
//     release_available_cached_blocks (with max_split_size; since 2.5 it skips expandable blocks) and
//     release_cached_blocks run, each followed by one retry, before the request fails.
//   - Memory fraction (set_per_process_memory_fraction, all 2.x; the per_process_memory_fraction setting from
//     about 2.10): alloc_block refuses when reserved + segment exceeds round(fraction · total memory).
//   - garbage_collection_threshold (since 1.12, gated on a memory fraction since PR #76648): before a new
//     segment, free whole cached large-pool segments at least as old as the mean, in passes, until reserved is
//     back to threshold · limit; since 2.5 expandable blocks are never freed by it.
//   - empty_cache (all 2.x): free every cached whole segment, unmap every whole free expandable page, drop fully
//     unmapped ranges, release freeable private pools.
//   - Expandable segments (since 2.1): one virtual range of 1.125 × total memory per pool and stream (another
//     only when it is full), pages of 2 MiB (small) and 20 MiB (large), the expandable-size walk of the best fit,
//     mapping just enough whole pages at the first unmapped room that fits (holes first), unmapping only on
//     empty_cache.
//   - Private pools (CUDA graphs since 1.10, MemPool since 2.5): allocations routed to a pool id use that
//     pool's own small and large pools; ReleasePool makes it freeable for the next empty_cache.
//
// Cross-stream frees (record_stream) are replayed as the trace's free_completed events return blocks, which
// is when the real allocator returned them; the event API frees immediately. The cudaMallocAsync backend is
// not modelled.
//
// # Replaying a trace
//
// Record follows torch 2.11's trace semantics (stable since 2.0; segment_map / segment_unmap since 2.1):
// alloc sizes are requested bytes and are re-rounded; free_completed returns a block (free_requested is
// ignored unless a trace has no free_completed at all); a run of segment_free / segment_unmap is the
// allocator's own retry path when an oom or a new segment that would not have fit the capacity follows it
// directly, and an empty_cache call otherwise; an oom is a request that must fail, and the first one gives the
// usable capacity (reserved then + device_free). New segments take the trace's addresses while the model's
// segment sizes agree with the trace's, and descending synthetic addresses after. A trace that begins after
// allocations were made is replayed from the state its final segments imply, and the result says so.
package allocator
