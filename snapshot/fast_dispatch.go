package snapshot

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/memscan/memscan/internal/input"
)

// PickleSource says how DecodePickleFrom may read a pickle besides the reader it is given.
type PickleSource struct {
	// Reopen returns a reader at the pickle's first byte again (a seekable file rewound, or a gzip file
	// decompressed again), so that a pickle the fast decoder declines is read again by the reference decoder
	// instead of being kept in memory while the fast decoder streams it. Nil when the input can be read only
	// once (a pipe): the bytes are then kept.
	Reopen func() (io.Reader, error)
	// Size is the pickle's length in bytes when known (0 otherwise); the fast decoder sizes trace lists from it.
	Size int64
	// Limit is the input size limit (0: none). The reference decoder holds the whole pickle and gopickle's value
	// tree at once, several times the bytes, so it reads at most a quarter of it.
	Limit int64
	// SizeHint is the pickle's length as the input claims it where nothing checks the claim (a gzip trailer's, kept
	// modulo 4 GiB), 0 when there is none. Without Size, the fast decoder sizes trace lists from it as from Size,
	// but never beyond sixteen times what it has read of the list, and backs no pages from it: a false claim then
	// costs a bounded reservation, not memory in use.
	SizeHint int64
	// ReadAhead says that the input's reads never block for long (a file, or what is decompressed from one), so
	// that the fast decoder's input may be read on another goroutine (input.ReadAhead), beyond the pickle's end.
	ReadAhead bool
	// Map, when not nil, maps the pickle's bytes into memory (a regular file): the fast decoder then reads them in
	// place, with neither read calls nor copies, instead of through the reader. When it fails, the reader is read.
	Map func() (MappedPickle, error)
}

// MappedPickle is a pickle's bytes mapped into memory from its file (PickleSource.Map).
type MappedPickle interface {
	// Bytes returns the pickle, from its first byte to the end of the file, valid until Close.
	Bytes() []byte
	// Consumed says that the decoder has read the bytes before off and will not read them again, so that their
	// pages may leave the resident set. The decoder calls it every few megabytes.
	Consumed(off int64)
	Close() error
}

// decodeFastFrom runs the fast decoder on the pickle's bytes mapped in memory when src can map them, and
// otherwise on r (read ahead when src allows and streamed is true, that is when r is not bytes kept in memory).
func decodeFastFrom(ctx context.Context, name string, r io.Reader, streamed bool, size int64, src PickleSource) (*Snapshot, error) {
	if streamed && src.Map != nil {
		// A file that cannot be mapped (another system, a file system without mmap) is read instead.
		if m, err := src.Map(); err == nil {
			snap, err := decodeFastMapped(ctx, name, m)
			if cerr := m.Close(); err == nil && cerr != nil {
				return nil, &input.Error{File: name, Offset: 0, Msg: "cannot unmap the file", Err: cerr}
			}
			return snap, err
		}
	}
	if streamed && src.ReadAhead {
		// The reads and what a gzip layer inflates run beside the decoding; stopped before any re-read.
		ra := input.NewReadAhead(r)
		defer ra.Stop()
		r = ra
	}
	hinted := false
	if size == 0 && streamed && src.SizeHint > 0 {
		size, hinted = src.SizeHint, true
	}
	return decodeFastPickleSource(ctx, name, r, size, hinted)
}

// refDecoderShare is the part of PickleSource.Limit that the reference decoder may read.
const refDecoderShare = 4

// SeekableSource returns the PickleSource of a seekable r (its size, and a rewind to where it is now), and false
// when r cannot seek.
func SeekableSource(r io.Reader) (PickleSource, bool) {
	s, ok := r.(io.ReadSeeker)
	if !ok {
		return PickleSource{}, false
	}
	start, err := s.Seek(0, io.SeekCurrent)
	if err != nil {
		return PickleSource{}, false
	}
	end, err := s.Seek(0, io.SeekEnd)
	if err != nil {
		return PickleSource{}, false
	}
	if _, err := s.Seek(start, io.SeekStart); err != nil {
		return PickleSource{}, false
	}
	return PickleSource{Size: end - start, Reopen: func() (io.Reader, error) {
		if _, err := s.Seek(start, io.SeekStart); err != nil {
			return nil, err
		}
		return s, nil
	}}, true
}

// DecodePickle decodes a CUDA allocator snapshot pickle from r, which starts at the pickle's first byte. When r
// can seek, the fast decoder learns the size from it and a fallback re-reads it; otherwise the bytes are kept.
func DecodePickle(ctx context.Context, name string, r io.Reader) (*Snapshot, error) {
	src, _ := SeekableSource(r)
	return DecodePickleFrom(ctx, name, r, src)
}

// DecodePickleFrom decodes a snapshot pickle from r with the streaming fast decoder, and with the reference
// decoder (gopickle) when the fast one meets a construct it does not handle. Both produce the same model on
// everything the fast decoder accepts (see diff_test.go), so the choice is invisible except in speed and memory.
func DecodePickleFrom(ctx context.Context, name string, r io.Reader, src PickleSource) (*Snapshot, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var data []byte
	size := src.Size
	fastIn := io.Reader(br)
	if src.Reopen == nil {
		// Not readable twice: keep the bytes so the fallback can read them again.
		var err error
		if data, err = readPickle(ctx, name, br); err != nil {
			return nil, err
		}
		fastIn = bytes.NewReader(data)
		size = int64(len(data))
	}
	snap, err := decodeFastFrom(ctx, name, fastIn, data == nil, size, src)
	if err == nil {
		return snap, nil
	}
	var fu *fastUnsupported
	if !errors.As(err, &fu) {
		return nil, err
	}
	refLimit := int64(-1)
	declined := fmt.Sprintf("%s at byte %d", fu.Why, fu.Offset)
	if src.Limit > 0 {
		refLimit = src.Limit / refDecoderShare
		if size > refLimit {
			return nil, &input.SizeError{Limit: refLimit, Size: size, Declined: declined}
		}
	}
	if data != nil {
		return decodePickleBytes(ctx, name, data)
	}
	rr, rerr := src.Reopen()
	if rerr != nil {
		return nil, &input.Error{File: name, Offset: 0, Msg: "cannot re-read the file for the reference decoder", Err: rerr}
	}
	if refLimit >= 0 {
		rr = input.NewCapReader(rr, refLimit, declined)
	}
	return decodePickleReference(ctx, name, bufio.NewReaderSize(rr, 1<<16))
}
