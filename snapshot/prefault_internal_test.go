package snapshot

import (
	"testing"
	"unsafe"
)

func TestPrefaulter(t *testing.T) {
	size := int64(unsafe.Sizeof(TraceEntry{}))
	var p prefaulter
	defer p.stop()
	entries := make([]TraceEntry, 10, 300_000)
	for i := range entries {
		entries[i] = TraceEntry{Addr: uint64(i), Size: 512}
	}
	steps := []struct {
		name  string
		upto  int
		added int64 // bytes backed by this step
	}{
		{"projection", 250_000, (250_000 - 10) * size},
		{"same projection again", 250_000, 0},
		{"projection shrunk", 200_000, 0},
		{"projection grown", 280_000, 30_000 * size},
		{"beyond the capacity", 400_000, 20_000 * size},
	}
	var total int64
	for _, s := range steps {
		p.extend(entries, s.upto)
		p.wg.Wait()
		if p.failed.Load() {
			t.Skip("this system cannot populate pages ahead of writes")
		}
		total += s.added
		if got := p.populated.Load(); got != total {
			t.Errorf("%s: %d bytes backed in all, want %d", s.name, got, total)
		}
	}
	for i, e := range entries {
		if e.Addr != uint64(i) || e.Size != 512 {
			t.Fatalf("entry %d changed: %+v", i, e)
		}
	}
	// A list whose room is too small for a goroutine is left to fault in as it is written.
	small := make([]TraceEntry, 0, prefaultMinBytes/size-1)
	p.extend(small, cap(small))
	p.wg.Wait()
	if got := p.populated.Load(); got != total {
		t.Errorf("small list: %d bytes backed in all, want %d", got, total)
	}
	// A new list starts over from its own length, and a stopped one is not backed further.
	next := make([]TraceEntry, 5, 200_000)
	p.stop()
	p.extend(next, 150_000)
	p.wg.Wait()
	total += (150_000 - 5) * size
	if got := p.populated.Load(); got != total {
		t.Errorf("next list: %d bytes backed in all, want %d", got, total)
	}
}
