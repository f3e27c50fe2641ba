package load

import (
	"io"
	"os"
	"sync/atomic"

	"github.com/memscan/memscan/internal/sysmem"
	"github.com/memscan/memscan/snapshot"
)

// mapper returns how a pickle decoder maps the rest of the file r (size bytes from where r is now) into memory
// (snapshot.PickleSource.Map), nil when r is not a file.
func mapper(r io.Reader, size int64) func() (snapshot.MappedPickle, error) {
	var f *os.File
	count := func(int64) {}
	switch r := r.(type) {
	case *os.File:
		f = r
	case *countingFile:
		f, count = r.f, r.advance
	default:
		return nil
	}
	start, err := f.Seek(0, io.SeekCurrent)
	if err != nil || size <= 0 {
		return nil
	}
	return func() (snapshot.MappedPickle, error) {
		m, err := sysmem.MapFile(f, start, size)
		if err != nil {
			return nil, err
		}
		mf := &mappedFile{m: m, count: count, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
		go mf.page()
		return mf, nil
	}
}

// mappedFile is a file's bytes mapped for the pickle decoder. The page faults of reading them and the kernel's
// work of taking back the pages read (about 15 and 20 ms of a 120 MB file) are kept off the decoder's goroutine:
// another one maps the pages ahead of the decoder and gives back those behind it, so that no more of the file
// than mapAhead and one step of the decoder is resident. What the decoder has read counts as read (Options.Read).
type mappedFile struct {
	m     *sysmem.Mapping
	count func(off int64)
	// at is what the decoder has read (Consumed); wake tells page of it, stop ends page, which closes done.
	at               atomic.Int64
	wake, stop, done chan struct{}
}

// mapAhead is how far ahead of what the decoder has read its pages are mapped: one of its steps (4 MiB), which
// takes the kernel about half a millisecond to map and the decoder some 15 ms to read.
const mapAhead = 4 << 20

// page maps the pages ahead of the decoder and gives back those behind it, until stop.
func (f *mappedFile) page() {
	defer close(f.done)
	for {
		f.m.Reading(int(f.at.Load()), mapAhead)
		select {
		case <-f.wake:
		case <-f.stop:
			return
		}
	}
}

func (f *mappedFile) Bytes() []byte { return f.m.Bytes() }

func (f *mappedFile) Consumed(off int64) {
	if off <= f.at.Load() || off > int64(len(f.m.Bytes())) {
		return
	}
	f.at.Store(off)
	select {
	case f.wake <- struct{}{}:
	default: // page has a wake-up waiting already
	}
	f.count(off)
}

// Close stops the paging and unmaps the file, which then counts as read whole, as a reader reading it through
// would have.
func (f *mappedFile) Close() error {
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	<-f.done
	f.count(int64(len(f.m.Bytes())))
	return f.m.Close()
}
