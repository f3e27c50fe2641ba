package snapshot

import (
	"fmt"
	"sort"
)

// maxValidateWarnings caps the list so that a thoroughly broken file gives a readable report.
const maxValidateWarnings = 100

// Validate reports contradictions inside the snapshot, each as "field path: what is wrong". They are warnings:
// the model was built and analysis can run, but totals that depend on the contradicting fields may disagree
// with each other. The checks are the allocator invariants that hold in every real snapshot:
//   - a segment's blocks sum to its total_size and are contiguous from its address;
//   - allocated_size and active_size equal the sizes of active_allocated and of all non-inactive blocks;
//   - requested_size (when recorded) equals the requested bytes of the active blocks;
//   - an active block never has requested_size > size;
//   - no two adjacent blocks are both inactive (the allocator coalesces them);
//   - segments of one device do not overlap.
func (s *Snapshot) Validate() []string {
	var w []string
	add := func(format string, args ...any) {
		if len(w) < maxValidateWarnings {
			w = append(w, fmt.Sprintf(format, args...))
		} else if len(w) == maxValidateWarnings {
			w = append(w, "... more contradictions not listed")
		}
	}
	validateSegments(s.Segments, "segments", add)
	validateSegments(s.HostSegments, "host_segments", add)
	return w
}

func validateSegments(segs []Segment, field string, add func(string, ...any)) {
	type span struct {
		idx        int
		start, end uint64
	}
	byDevice := map[int][]span{}
	for i := range segs {
		seg := &segs[i]
		path := fmt.Sprintf("%s[%d]", field, i)
		var sum, allocated, active, requested int64
		next := seg.Address
		prevInactive := false
		for j, b := range seg.Blocks {
			bpath := fmt.Sprintf("%s.blocks[%d]", path, j)
			if b.Address != next {
				add("%s.address: 0x%x, but the previous blocks end at 0x%x", bpath, b.Address, next)
			}
			next = b.Address + uint64(b.Size)
			sum += b.Size
			switch b.State {
			case BlockActiveAllocated:
				allocated += b.Size
			}
			if b.State.Active() {
				active += b.Size
				requested += b.RequestedSize
				if b.RequestedSize > b.Size {
					add("%s.requested_size: %d > size %d on an active block", bpath, b.RequestedSize, b.Size)
				}
			}
			if b.State == BlockInactive && prevInactive {
				add("%s: adjacent inactive blocks (the allocator would have merged them)", bpath)
			}
			prevInactive = b.State == BlockInactive
		}
		if sum != seg.TotalSize {
			add("%s.total_size: %d, but its %d blocks sum to %d", path, seg.TotalSize, len(seg.Blocks), sum)
		}
		if allocated != seg.AllocatedSize {
			add("%s.allocated_size: %d, but its active_allocated blocks sum to %d", path, seg.AllocatedSize, allocated)
		}
		if active != seg.ActiveSize {
			add("%s.active_size: %d, but its active blocks sum to %d", path, seg.ActiveSize, active)
		}
		// requested_size is 0 when the file predates it (torch 1.13), so only a recorded value is compared.
		if seg.RequestedSize != 0 && seg.RequestedSize != requested {
			add("%s.requested_size: %d, but its active blocks request %d", path, seg.RequestedSize, requested)
		}
		end := seg.Address + uint64(seg.TotalSize)
		if end < seg.Address {
			add("%s: address 0x%x + total_size %d overflows 64 bits", path, seg.Address, seg.TotalSize)
			end = ^uint64(0)
		}
		byDevice[seg.Device] = append(byDevice[seg.Device], span{i, seg.Address, end})
	}
	devices := make([]int, 0, len(byDevice))
	for d := range byDevice {
		devices = append(devices, d)
	}
	sort.Ints(devices)
	for _, d := range devices {
		spans := byDevice[d]
		sort.Slice(spans, func(a, b int) bool { return spans[a].start < spans[b].start })
		for k := 1; k < len(spans); k++ {
			if prev := spans[k-1]; spans[k].start < prev.end {
				add("%s[%d]: overlaps %s[%d] on device %d (0x%x < 0x%x)", field, spans[k].idx, field, prev.idx, d, spans[k].start, prev.end)
			}
		}
	}
}
