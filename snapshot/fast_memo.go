package snapshot

// memoChunkBits sizes the memo's chunks: 8,192 cells, 64 KB.
const (
	memoChunkBits = 13
	memoChunk     = 1 << memoChunkBits
)

// memoCells is the dense part of the fast decoder's memo, in fixed-size chunks. PyTorch's pickler memoizes
// every dict and list, so a large trace makes millions of cells; a slice grown by append would copy them at every
// doubling and hold the old and the new array at once, about 20 MB of peak heap on a 122 MB snapshot.
type memoCells struct {
	chunks []*[memoChunk]uint64 // arrays, so that the index within a chunk needs no bounds check
	n      uint64
}

func (m *memoCells) len() uint64 { return m.n }

// at returns cell i < len.
func (m *memoCells) at(i uint64) uint64 { return m.chunks[i>>memoChunkBits][i&(memoChunk-1)] }

// set overwrites cell i < len.
func (m *memoCells) set(i, c uint64) { m.chunks[i>>memoChunkBits][i&(memoChunk-1)] = c }

// push appends a cell.
func (m *memoCells) push(c uint64) {
	if m.n&(memoChunk-1) == 0 {
		m.chunks = append(m.chunks, new([memoChunk]uint64))
	}
	m.set(m.n, c)
	m.n++
}
