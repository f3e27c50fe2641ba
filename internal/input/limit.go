package input

import (
	"errors"
	"fmt"
	"io"

	"github.com/memscan/memscan/internal/inputfile"
)

// ErrInputTooLarge is wrapped by decode errors for inputs larger than the input size limit.
var ErrInputTooLarge = errors.New("input larger than the input size limit")

// SizeError is the failure of an input past a size limit.
type SizeError struct {
	Limit int64
	// Size is the whole input's size when known up front (a plain file), −1 for a stream cut off at the limit.
	Size int64
	// Declined is set when the limit is the reference pickle decoder's share of the input size limit, which a
	// pickle needs because the fast decoder declined it: what it declined, where.
	Declined string
}

func (e *SizeError) Error() string {
	switch {
	case e.Declined != "":
		return fmt.Sprintf("needs the reference pickle decoder (the fast one does not handle %s), which reads at most a quarter of the input size limit, %s (--max-input-size); this input is larger",
			e.Declined, SizeWords(e.Limit))
	case e.Size >= 0:
		return fmt.Sprintf("%s is larger than the input size limit of %s (--max-input-size)", SizeWords(e.Size), SizeWords(e.Limit))
	}
	return fmt.Sprintf("decompresses to more than the input size limit of %s (--max-input-size)", SizeWords(e.Limit))
}

func (e *SizeError) Unwrap() error { return ErrInputTooLarge }

// SizeWords renders a byte count as --max-input-size reads it, and exactly.
func SizeWords(n int64) string { return inputfile.SizeWords(n) }

// CapReader fails with a *SizeError once more than its limit has been read through it: the decoders stream, so
// a gzip bomb stops at the limit instead of being inflated whole.
type CapReader struct {
	r        io.Reader
	n        int64 // bytes read so far
	limit    int64
	declined string
}

// NewCapReader caps r at limit bytes; declined is SizeError.Declined.
func NewCapReader(r io.Reader, limit int64, declined string) *CapReader {
	return &CapReader{r: r, limit: limit, declined: declined}
}

func (c *CapReader) Read(p []byte) (int, error) {
	if c.n > c.limit {
		return 0, c.err()
	}
	// Read at most one byte past the limit: that byte proves the input is larger without reading more.
	if rem := c.limit + 1 - c.n; int64(len(p)) > rem {
		p = p[:rem]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.n > c.limit {
		return n, c.err()
	}
	return n, err
}

// N returns the bytes read through c so far.
func (c *CapReader) N() int64 { return c.n }

func (c *CapReader) err() error { return &SizeError{Limit: c.limit, Size: -1, Declined: c.declined} }
