package report

import "io"

// writeChunk is how much the hand-written encoders of long lists gather before writing it on.
const writeChunk = 64 << 10

// chunkWriter gathers encoded bytes in buf and writes them on to w a chunk at a time, so that a long list is
// never held whole; the first write error sticks and ends the writing.
type chunkWriter struct {
	w   io.Writer
	buf []byte
	err error
}

// spill writes the gathered bytes on once they fill a chunk.
func (c *chunkWriter) spill() {
	if len(c.buf) >= writeChunk {
		c.flush()
	}
}

// flush writes the gathered bytes on and returns the first error met.
func (c *chunkWriter) flush() error {
	if c.err == nil && len(c.buf) > 0 {
		_, c.err = c.w.Write(c.buf)
	}
	c.buf = c.buf[:0]
	return c.err
}
