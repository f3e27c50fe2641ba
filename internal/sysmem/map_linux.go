package sysmem

import (
	"fmt"
	"math"
	"os"

	"golang.org/x/sys/unix"
)

// Mapping is part of a file mapped read-only into memory (MapFile).
type Mapping struct {
	all  []byte // the mapping, from the page holding the first byte
	skip int    // bytes of all before the first byte
	// released and backed are the page-aligned ends, in all, of what Reading gave back and mapped ahead; noAhead
	// says the kernel cannot map ahead.
	released, backed int
	noAhead          bool
}

// MapFile maps n bytes of f, from offset off, read-only into memory, so that a decoder reads the file's bytes in
// place: no read calls, no copy into a buffer. Reading a mapped page that the file no longer has (it was
// truncated meanwhile) raises SIGBUS, which a reader turns into an error with debug.SetPanicOnFault. Release gives
// back the pages read so far, Close the whole mapping. It fails where the system cannot map the file.
func MapFile(f *os.File, off, n int64) (*Mapping, error) {
	pg := int64(os.Getpagesize())
	if off < 0 || n <= 0 || n > math.MaxInt-pg {
		return nil, fmt.Errorf("cannot map %d bytes at offset %d", n, off)
	}
	// mmap takes a page-aligned offset: map from the page holding off.
	skip := off % pg
	b, err := unix.Mmap(int(f.Fd()), off-skip, int(n+skip), unix.PROT_READ, unix.MAP_PRIVATE)
	if err != nil {
		return nil, err
	}
	// Read front to back: a file not yet in the page cache is then read ahead of the faults, as read calls would
	// have it. Only advice; nothing changes where the kernel declines.
	_ = unix.Madvise(b, unix.MADV_SEQUENTIAL)
	return &Mapping{all: b, skip: int(skip)}, nil
}

// Bytes returns the mapped bytes, valid until Close.
func (m *Mapping) Bytes() []byte {
	if m.all == nil {
		return nil
	}
	return m.all[m.skip:]
}

// Reading says that the reader has read the bytes before at and will read the next ahead. The whole pages before
// at are given back (Release) and those up to at+ahead mapped in now (PopulateRead), on the caller's goroutine,
// which is meant to be another than the reader's; pages handled by an earlier call are not asked for again. The
// pages are counted from the mapping's own start, so no page between two calls is left out.
func (m *Mapping) Reading(at, ahead int) {
	if m.all == nil {
		return
	}
	pg := os.Getpagesize()
	// Ahead first: the reader is about to read it.
	if end := min(len(m.all), (m.skip+at+ahead+pg-1)/pg*pg); !m.noAhead && end > m.backed {
		m.noAhead = !PopulateRead(m.all[m.backed:end])
		m.backed = end
	}
	if end := min(len(m.all), m.skip+at) / pg * pg; end > m.released && Release(m.all[m.released:end]) {
		m.released = end
	}
}

// Close unmaps the bytes; nothing may read them afterwards. A second Close does nothing.
func (m *Mapping) Close() error {
	if m.all == nil {
		return nil
	}
	b := m.all
	m.all = nil
	return unix.Munmap(b)
}
