package snapshot

import "testing"

// TestMemoCells checks the chunked memo against a plain slice across chunk boundaries: every cell reads back what
// was last written to it, whether pushed or overwritten.
func TestMemoCells(t *testing.T) {
	for _, n := range []int{0, 1, memoChunk - 1, memoChunk, memoChunk + 1, 3*memoChunk + 7} {
		var m memoCells
		var want []uint64
		for i := range n {
			c := uint64(i)*2654435761 | cellVal
			m.push(c)
			want = append(want, c)
		}
		for i := 0; i < n; i += 97 {
			m.set(uint64(i), cellGone)
			want[i] = cellGone
		}
		if m.len() != uint64(len(want)) {
			t.Fatalf("%d cells: len %d", n, m.len())
		}
		for i, c := range want {
			if got := m.at(uint64(i)); got != c {
				t.Fatalf("%d cells: cell %d is %#x, want %#x", n, i, got, c)
			}
		}
		if n > 0 && len(m.chunks) != (n+memoChunk-1)/memoChunk {
			t.Errorf("%d cells in %d chunks, want %d", n, len(m.chunks), (n+memoChunk-1)/memoChunk)
		}
	}
}
