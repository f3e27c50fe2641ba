package snapshot

import (
	"errors"
	"fmt"
	"io"

	"github.com/memscan/memscan/internal/bytesize"
	"github.com/memscan/memscan/internal/sysmem"
)

// Options tune decoding.
type Options struct {
	// MaxInputSize bounds the bytes any decoder reads from one input after decompression (a plain file's size,
	// a gzip file's decompressed size); 0 means DefaultMaxInputSize. A larger input fails with an error wrapping
	// ErrInputTooLarge as soon as the bound is passed, before it can exhaust memory.
	MaxInputSize int64
}

// ErrInputTooLarge is wrapped by decode errors for inputs larger than Options.MaxInputSize.
var ErrInputTooLarge = errors.New("input larger than the input size limit")

// fallbackMaxInputSize is the default bound where the machine's memory cannot be read.
const fallbackMaxInputSize = 8 << 30

// DefaultMaxInputSize is half of the memory available to the process (the machine's, or its control group's
// when lower). Decoding holds about the input's size in memory (the model, or the whole file on the reference
// decoder's path), so an input past half the memory would otherwise end in the out-of-memory killer, here or
// in a neighbouring job.
func DefaultMaxInputSize() int64 {
	if n, ok := sysmem.Total(); ok {
		return max(n/2, 64<<20)
	}
	return fallbackMaxInputSize
}

func (o Options) maxInputSize() int64 {
	if o.MaxInputSize > 0 {
		return o.MaxInputSize
	}
	return DefaultMaxInputSize()
}

// sizeError is the failure of an input past the size limit; decode turns it into one line naming the file.
type sizeError struct {
	limit int64
	// size is the whole input's size when known up front (a plain file), −1 for a stream cut off at the limit.
	size int64
	// declined is set when the limit is the reference decoder's share, which a pickle needs because the fast
	// decoder declined it.
	declined *fastUnsupported
}

func (e *sizeError) Error() string {
	if e.declined != nil {
		return fmt.Sprintf("needs the reference pickle decoder (the fast one does not handle %s at byte %d), which reads at most a quarter of the input size limit, %s (--max-input-size); this input is larger",
			e.declined.Why, e.declined.Offset, sizeWords(e.limit))
	}
	if e.size >= 0 {
		return fmt.Sprintf("%s is larger than the input size limit of %s (--max-input-size)", sizeWords(e.size), sizeWords(e.limit))
	}
	return fmt.Sprintf("decompresses to more than the input size limit of %s (--max-input-size)", sizeWords(e.limit))
}

func (e *sizeError) Unwrap() error { return ErrInputTooLarge }

// sizeWords renders a byte count as --max-input-size reads it, and exactly.
func sizeWords(n int64) string {
	return fmt.Sprintf("%s (%d bytes)", bytesize.Format(n), n)
}

// capReader fails once more than limit bytes have been read through it: the decoders stream, so a gzip bomb
// stops at the limit instead of being inflated whole.
type capReader struct {
	r        io.Reader
	n        int64 // bytes read so far
	limit    int64
	declined *fastUnsupported // see sizeError
}

func (c *capReader) Read(p []byte) (int, error) {
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

func (c *capReader) err() error { return &sizeError{limit: c.limit, size: -1, declined: c.declined} }

// sizeFailure rewrites any decode error caused by the size limit as one line naming the file and the limit,
// whatever decoder was reading when the limit was reached.
func sizeFailure(name string, err error) error {
	var se *sizeError
	if errors.As(err, &se) {
		return fmt.Errorf("%s: %w", name, se)
	}
	return err
}
