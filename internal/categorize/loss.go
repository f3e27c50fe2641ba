package categorize

import "github.com/memscan/memscan/phases"

// LossMinBytes: the logits and the cross-entropy's tensors are b·s·V elements, tens of MiB for the smallest
// language-model step (a 32k vocabulary over one 512-token sequence in bf16 is 32 MiB); below 1 MiB an allocation
// is a scalar, the labels or a mask, never one of them.
const LossMinBytes int64 = 1 << 20

// LossBlock is what LossPattern reads of one allocation of a device trace: the event after which it is live
// (−1: before the trace), its bytes and the category the stack and lifetime gave it (Attribute).
type LossBlock struct {
	Start    int
	Size     int64
	Category string
}

// LossPattern finds what a language model's loss holds beyond the tensors its own stacks name, and returns the
// indices of those blocks (n of them, read through block, in trace order) that are not Loss/Logits yet. A
// cross-entropy over b·s tokens and V classes makes tensors of b·s·V elements: the model's logits (its output
// layer's result, categorized by that layer's stack), the loss's upcast and log-probabilities (categorized by the
// loss's stack), and at the start of the backward the gradients of the loss — made by autograd's thread, without
// a Python stack, so only their lifetime placed them. Per iteration of tl:
//   - anchors are the forward's allocations of at least LossMinBytes in Loss/Logits;
//   - the logits are the last large forward allocation before the first anchor when that anchor holds as many
//     elements in the same dtype (equal size) or in fp32 from 16 bits (twice its size);
//   - the loss's backward is the run of large allocations at the start of the backward whose sizes are an
//     anchor's, half of one (the 16-bit gradient of the logits) or the logits', as long as their category names
//     no operator (lifecycle categories only); the first other large allocation ends it.
func LossPattern(tl *phases.Timeline, n int, block func(i int) LossBlock) []int {
	if tl == nil || !tl.Training() {
		return nil
	}
	var out []int
	var st lossScan
	cur := -1
	starts := tl.Cursor() // blocks come in the order of their allocs
	for i := range n {
		b := block(i)
		if b.Start < 0 || b.Size < LossMinBytes {
			continue
		}
		k, ph := starts.At(b.Start)
		if k < 0 {
			continue
		}
		if k != cur {
			cur, st = k, lossScan{lastBig: -1}
		}
		switch ph {
		case phases.Forward:
			if b.Category == LossLogits {
				if len(st.anchors) == 0 && st.lastBig >= 0 && (st.lastSize == b.Size || 2*st.lastSize == b.Size) {
					st.logits = st.lastSize
					out = append(out, st.lastBig)
				}
				st.anchors = append(st.anchors, b.Size)
			} else if len(st.anchors) == 0 {
				st.lastBig, st.lastSize = i, b.Size
			}
		case phases.Backward:
			if len(st.anchors) == 0 || st.closed {
				continue
			}
			if b.Category != LossLogits && !Lifecycle(b.Category) || !st.related(b.Size) {
				st.closed = true
				continue
			}
			if b.Category != LossLogits {
				out = append(out, i)
			}
		}
	}
	return out
}

// lossScan is LossPattern's state within one iteration.
type lossScan struct {
	// anchors are the sizes of the forward's Loss/Logits allocations; logits the size of the logits (0: none
	// found); lastBig and lastSize the last large forward allocation before the first anchor.
	anchors          []int64
	logits, lastSize int64
	lastBig          int
	// closed is set at the first large backward allocation that is not the loss's.
	closed bool
}

// related reports whether a backward allocation of size bytes is one of the loss's gradients: the size of an
// anchor, half of one, or the logits'.
func (s *lossScan) related(size int64) bool {
	if size == s.logits {
		return true
	}
	for _, a := range s.anchors {
		if size == a || 2*size == a {
			return true
		}
	}
	return false
}
