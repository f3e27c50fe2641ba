package snapshot

// SegsumForTest exposes segsum to the external test package.
var SegsumForTest = segsum

// DecodeReferenceForTest exposes the reference pickle decoder (gopickle plus the converter) to the external
// test package.
var DecodeReferenceForTest = decodePickleBytes

// segsum recomputes PyTorch's `_memory_viz stats` totals from the model, as that tool defines them: for an
// active_allocated block the used bytes are its requested size (already resolved through the
// requested_size -> history[0].real_size -> size fallback), the rest of the block is internal free; every other
// block counts in full as external free.
func segsum(s *Snapshot) (reserved, allocated, freeInt, freeExt int64) {
	for _, seg := range s.Segments {
		reserved += seg.TotalSize
		for _, b := range seg.Blocks {
			if b.State == BlockActiveAllocated {
				allocated += b.RequestedSize
				freeInt += b.Size - b.RequestedSize
			} else {
				freeExt += b.Size
			}
		}
	}
	return
}
