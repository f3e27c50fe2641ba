package snapshot

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"

	"github.com/memscan/memscan/input"
)

// rewindable is a seekable input: the fast decoder learns its size, and a pickle the fast decoder declines
// can be read again by the reference decoder without holding the whole file in memory.
type rewindable struct {
	s     io.ReadSeeker
	start int64
	size  int64 // bytes from start to the end
}

// rewinder returns r's rewindable view, or nil when r cannot seek (a pipe, a gzip stream). Decode takes it
// before buffering.
func rewinder(r io.Reader) *rewindable {
	s, ok := r.(io.ReadSeeker)
	if !ok {
		return nil
	}
	start, err := s.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil
	}
	end, err := s.Seek(0, io.SeekEnd)
	if err != nil {
		return nil
	}
	if _, err := s.Seek(start, io.SeekStart); err != nil {
		return nil
	}
	return &rewindable{s: s, start: start, size: end - start}
}

func (rw *rewindable) rewind() (io.Reader, error) {
	if _, err := rw.s.Seek(rw.start, io.SeekStart); err != nil {
		return nil, err
	}
	return rw.s, nil
}

// DecodePickle decodes a CUDA allocator snapshot pickle from r, which starts at the pickle's first byte. When r
// can seek, the fast decoder learns the size from it and a fallback re-reads it; otherwise the bytes are kept.
func DecodePickle(ctx context.Context, name string, r io.Reader) (*Snapshot, error) {
	rw := rewinder(r)
	return decodePickleDispatch(ctx, name, bufio.NewReaderSize(r, 1<<16), rw)
}

// decodePickleDispatch decodes a snapshot pickle with the streaming fast decoder, and with the reference
// decoder (gopickle) when the fast one meets a construct it does not handle. Both produce the same model on
// everything the fast decoder accepts (see diff_test.go), so the choice is invisible except in speed and memory.
func decodePickleDispatch(ctx context.Context, name string, br *bufio.Reader, rewind *rewindable) (*Snapshot, error) {
	var data []byte
	var size int64
	src := io.Reader(br)
	if rewind != nil {
		size = rewind.size
	} else {
		// Not seekable: keep the bytes so the fallback can read them again.
		var err error
		if data, err = readPickle(ctx, name, br); err != nil {
			return nil, err
		}
		src = bytes.NewReader(data)
		size = int64(len(data))
	}
	snap, err := decodeFastPickleSized(ctx, name, src, size)
	if err == nil {
		return snap, nil
	}
	if !errors.Is(err, errFastUnsupported) {
		return nil, err
	}
	if data != nil {
		return decodePickleBytes(ctx, name, data)
	}
	r, rerr := rewind.rewind()
	if rerr != nil {
		return nil, &input.Error{File: name, Offset: 0, Msg: "cannot re-read the file for the reference decoder", Err: rerr}
	}
	return decodePickleReference(ctx, name, bufio.NewReaderSize(r, 1<<16))
}
