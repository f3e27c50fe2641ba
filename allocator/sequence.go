package allocator

import (
	"context"
	"fmt"
)

// OpKind is what one step of a synthetic allocation sequence does.
type OpKind uint8

const (
	OpAlloc       OpKind = iota + 1 // allocate Size bytes for ID on Stream (in Pool)
	OpFree                          // free ID
	OpEmptyCache                    // torch.cuda.empty_cache()
	OpReleasePool                   // release private pool Pool
)

// Op is one step of a synthetic allocation sequence, such as memscan static's operator-level allocs and frees.
type Op struct {
	Kind   OpKind
	ID     uint64
	Size   int64
	Stream uint64
	Pool   PoolID
}

// SequenceResult is what a synthetic sequence reserves.
type SequenceResult struct {
	PeakReserved int64
	// PeakIndex is the first op after which reserved reached the peak (−1: never above 0).
	PeakIndex         int
	PeakFragmentation Fragmentation
	FinalReserved     int64
	// SegmentsCreated counts cudaMallocs (and page mappings with expandable segments); Segments is how many
	// segments exist at the peak.
	SegmentsCreated int
	Segments        int
	// Failed are the indices of allocations that ran out of memory (skipped; their frees are ignored).
	Failed []int
}

// ReplaySequence runs ops through a fresh allocator. An op that breaks the sequence's own rules (allocating a
// live ID, freeing an unknown one) is an error naming its index; running out of memory is not.
func ReplaySequence(ctx context.Context, cfg Config, opt Options, ops []Op) (*SequenceResult, error) {
	a, err := New(cfg, opt)
	if err != nil {
		return nil, err
	}
	a.keepEvent = false
	res := &SequenceResult{PeakIndex: -1}
	failed := map[uint64]bool{}
	for i, op := range ops {
		if i&0xfff == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		switch op.Kind {
		case OpAlloc:
			err = a.MallocIn(op.ID, op.Size, op.Stream, op.Pool)
			if isOOM(err) {
				res.Failed = append(res.Failed, i)
				failed[op.ID] = true
				err = nil
			}
		case OpFree:
			if failed[op.ID] {
				delete(failed, op.ID)
				continue
			}
			err = a.Free(op.ID)
		case OpEmptyCache:
			a.EmptyCache()
		case OpReleasePool:
			err = a.ReleasePool(op.Pool)
		default:
			err = fmt.Errorf("unknown op kind %d", op.Kind)
		}
		if err != nil {
			return nil, fmt.Errorf("op %d (id %d): %w", i, op.ID, err)
		}
		if a.reserved > res.PeakReserved {
			res.PeakReserved, res.PeakIndex = a.reserved, i
		}
	}
	res.PeakFragmentation = a.PeakFragmentation()
	res.Segments = res.PeakFragmentation.Segments
	res.FinalReserved = a.reserved
	res.SegmentsCreated = a.created
	return res, nil
}
