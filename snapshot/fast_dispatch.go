package snapshot

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
)

// rewindable is an input that can be read again from its start: a seekable file, or the decompressed inside of
// a gzip layer over one. The fast decoder streams it, and a pickle the fast decoder declines is read again by the
// reference decoder instead of being kept in memory while the fast decoder runs.
type rewindable struct {
	reopen func() (io.Reader, error)
	size   int64 // bytes from the start to the end when known, 0 otherwise
}

// rewinder returns r's rewindable view, or nil when r cannot seek (a pipe). Decode takes it before buffering.
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
	return &rewindable{size: end - start, reopen: func() (io.Reader, error) {
		if _, err := s.Seek(start, io.SeekStart); err != nil {
			return nil, err
		}
		return s, nil
	}}
}

// gunzipped is the decompressed view of a rewindable gzip layer, capped at limit bytes like the first pass
// (nil when rw is nil). Its size is unknown: the gzip trailer holds it only modulo 4 GiB.
func (rw *rewindable) gunzipped(limit int64) *rewindable {
	if rw == nil {
		return nil
	}
	return &rewindable{reopen: func() (io.Reader, error) {
		r, err := rw.reopen()
		if err != nil {
			return nil, err
		}
		zr, err := gzip.NewReader(bufio.NewReaderSize(r, 1<<16))
		if err != nil {
			return nil, err
		}
		return &capReader{r: zr, limit: limit}, nil
	}}
}

// refDecoderShare is the part of the input size limit that the reference decoder may read: it holds the whole
// pickle and gopickle's value tree at once, several times the bytes, where the fast decoder streams.
const refDecoderShare = 4

// decodePickleDispatch decodes a snapshot pickle with the streaming fast decoder, and with the reference
// decoder (gopickle) when the fast one meets a construct it does not handle. Both produce the same model on
// everything the fast decoder accepts (see diff_test.go), so the choice is invisible except in speed and memory.
// limit is the input size limit; the reference decoder gets a quarter of it.
func decodePickleDispatch(ctx context.Context, name string, br *bufio.Reader, rewind *rewindable, limit int64) (*Input, error) {
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
		return pickleInput(name, snap), nil
	}
	var fu *fastUnsupported
	if !errors.As(err, &fu) {
		return nil, err
	}
	refLimit := limit / refDecoderShare
	tooLarge := &sizeError{limit: refLimit, size: max(size, int64(len(data))), declined: fu}
	if data != nil {
		if int64(len(data)) > refLimit {
			return nil, tooLarge
		}
		return decodePickleBytesInput(ctx, name, data)
	}
	if rewind.size > refLimit {
		return nil, tooLarge
	}
	r, rerr := rewind.reopen()
	if rerr != nil {
		return nil, &Error{File: name, Offset: 0, Msg: "cannot re-read the file for the reference decoder", Err: rerr}
	}
	return decodePickleInput(ctx, name, bufio.NewReaderSize(&capReader{r: r, limit: refLimit, declined: fu}, 1<<16))
}
