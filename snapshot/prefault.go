package snapshot

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/memscan/memscan/internal/sysmem"
)

// prefaulter backs the room of the trace list being filled with memory on another goroutine (sysmem.Populate),
// ahead of the decoder. A large trace list is the decode's one large allocation (40 bytes an event, a hundred
// megabytes for a few million events): its first writes fault every page in, on the goroutine that decodes,
// which was a fifth of a long trace's decode. Only the projected length is backed, never the slack beyond it, so
// resident memory is what the writes would make it.
type prefaulter struct {
	// gen is bumped when the list being backed is replaced (regrown or complete) or the decode ends: a
	// populate of an older generation stops at its next step.
	gen  atomic.Uint64
	wg   sync.WaitGroup
	base *TraceEntry // the backing array being backed
	upto int         // entries of it backed or being backed
	// failed says the system cannot populate (an old kernel, another system): no more are started.
	failed atomic.Bool
	// populated counts the bytes backed, for tests.
	populated atomic.Int64
}

const (
	// prefaultMinBytes is the least list worth backing ahead: small lists fault in quickly anyway.
	prefaultMinBytes = 4 << 20
	// prefaultStep is how much one populate call backs, so that a stop takes effect soon.
	prefaultStep = 4 << 20
)

// extend backs the room of entries up to upto entries (at most its capacity).
func (p *prefaulter) extend(entries []TraceEntry, upto int) {
	upto = min(upto, cap(entries))
	if p.failed.Load() || upto <= len(entries) {
		return
	}
	room := entries[:upto]
	if &room[0] != p.base {
		p.gen.Add(1)
		p.base, p.upto = &room[0], 0
	}
	from := max(p.upto, len(entries))
	if upto*int(unsafe.Sizeof(TraceEntry{})) < prefaultMinBytes || from >= upto {
		return
	}
	// The bytes of entries not written yet: the decoder writes them later, the kernel only backs their pages.
	b := entryBytes(room[from:upto])
	p.upto = upto
	gen := p.gen.Load()
	p.wg.Go(func() {
		for len(b) > 0 && p.gen.Load() == gen {
			n := min(len(b), prefaultStep)
			if !sysmem.Populate(b[:n]) {
				p.failed.Store(true)
				return
			}
			p.populated.Add(int64(n))
			b = b[n:]
		}
	})
}

// stop ends every populate and waits for them: when a list is complete (none then backs the room trim gives back)
// and when the decode ends (none outlives it). A later extend starts over.
func (p *prefaulter) stop() {
	p.gen.Add(1)
	p.base, p.upto = nil, 0
	p.wg.Wait()
}

// entryBytes is the memory of es as bytes, for the kernel calls that back or release a trace list's pages.
func entryBytes(es []TraceEntry) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(es))), len(es)*int(unsafe.Sizeof(TraceEntry{})))
}
