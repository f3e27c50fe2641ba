package load

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/memscan/memscan/internal/input"
	"github.com/memscan/memscan/internal/sysmem"
)

// Options tune decoding.
type Options struct {
	// MaxInputSize bounds the bytes any decoder reads from one input after decompression (a plain file's size,
	// a gzip file's decompressed size); 0 means DefaultMaxInputSize. A larger input fails with an error wrapping
	// input.ErrInputTooLarge as soon as the bound is passed, before it can exhaust memory.
	MaxInputSize int64
	// Read, when set, counts the bytes DecodeFileWith reads from the file (a gzip file's compressed bytes), for
	// progress: a decoder that rewinds to read the file again takes its bytes back first, so one counter shared by
	// the files decoded at once holds how far into them all the decoders are.
	Read *atomic.Int64
}

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

// sizeFailure rewrites any decode error caused by a size limit as one line naming the file and the limit,
// whatever decoder was reading when the limit was reached.
func sizeFailure(name string, err error) error {
	var se *input.SizeError
	if errors.As(err, &se) {
		return fmt.Errorf("%s: %w", name, se)
	}
	return err
}
