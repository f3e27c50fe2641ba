package input

import "io"

// ReadAhead reads r on its own goroutine, a few chunks ahead of its reader, so that the reads (the system calls and
// the copies from the page cache, or a gzip layer's inflating) run on another core than the decoding. Stop ends
// the goroutine; the reader then sees no more bytes.
//
// Only a reader whose reads never block for long may be read ahead (a regular file, or what is decompressed from
// one): Stop waits for the read in progress, and what is read ahead of the decoder is consumed from r.
type ReadAhead struct {
	full chan readChunk // chunks read, in order
	free chan []byte    // buffers to read into
	stop chan struct{}
	done chan struct{}
	cur  []byte // the unread rest of the chunk being read
	buf  []byte // cur's buffer, given back when cur is read
	err  error  // what ended r, returned once the chunks before it are read
}

type readChunk struct {
	b   []byte
	err error
}

// readAheadChunks and readAheadChunkSize bound what is read ahead: 256 KiB in four pieces, each as large as the
// decoders' own buffers, so that a hostile file refused in its first bytes still costs little memory.
const (
	readAheadChunks    = 4
	readAheadChunkSize = 64 << 10
)

// NewReadAhead starts reading r ahead. The caller must call Stop.
func NewReadAhead(r io.Reader) *ReadAhead {
	ra := &ReadAhead{
		full: make(chan readChunk, readAheadChunks),
		free: make(chan []byte, readAheadChunks),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	for range readAheadChunks {
		ra.free <- make([]byte, readAheadChunkSize)
	}
	go ra.fill(r)
	return ra
}

// fill reads r into free buffers until r ends or Stop.
func (ra *ReadAhead) fill(r io.Reader) {
	defer close(ra.done)
	defer close(ra.full) // a Read after Stop finds no more chunks
	for {
		var b []byte
		select {
		case b = <-ra.free:
		case <-ra.stop:
			return
		}
		// A chunk is filled before it is handed on, unless r ends: few hand-overs, whatever r's read size.
		n, empty := 0, 0
		var err error
		for n < len(b) && err == nil {
			var k int
			k, err = r.Read(b[n:])
			n += k
			// A reader that keeps returning nothing (which io.Reader discourages) is not waited for forever.
			if k > 0 {
				empty = 0
			} else if empty++; empty == 100 && err == nil {
				err = io.ErrNoProgress
			}
		}
		select {
		case ra.full <- readChunk{b[:n], err}:
		case <-ra.stop:
			return
		}
		if err != nil {
			return
		}
	}
}

func (ra *ReadAhead) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for len(ra.cur) == 0 {
		if ra.buf != nil {
			ra.free <- ra.buf[:cap(ra.buf)]
			ra.buf = nil
		}
		if ra.err != nil {
			return 0, ra.err
		}
		c, ok := <-ra.full
		if !ok {
			return 0, io.ErrClosedPipe
		}
		ra.cur, ra.buf, ra.err = c.b, c.b, c.err
	}
	n := copy(p, ra.cur)
	ra.cur = ra.cur[n:]
	return n, nil
}

// Stop ends the reading ahead and waits for it; it may be called more than once.
func (ra *ReadAhead) Stop() {
	select {
	case <-ra.stop:
	default:
		close(ra.stop)
	}
	<-ra.done
}
