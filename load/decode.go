package load

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"

	"github.com/memscan/memscan/internal/input"
	"github.com/memscan/memscan/internal/inputfile"
	"github.com/memscan/memscan/memtimeline"
	"github.com/memscan/memscan/snapshot"
	"github.com/memscan/memscan/tracer"
	"github.com/memscan/memscan/trainlog"
)

// Input is one decoded input file. Exactly one of the source fields is set.
type Input struct {
	Path string
	// Format names what the content was, e.g. "pickle-v4", "snapshot-json", "tracer-json", "memory-timeline",
	// "megatron-log".
	Format string
	// Snapshot is set for CUDA caching-allocator snapshots (pickle or their JSON rendition).
	Snapshot *snapshot.Snapshot
	// Tracer is set for memory-tracer peak-snapshot JSON ("tracer-json").
	Tracer *tracer.File
	// Timeline is set for torch.profiler memory timelines ("memory-timeline").
	Timeline *memtimeline.Timeline
	// Log is set for training logs with memory lines ("megatron-log", "deepspeed-log", "torchtitan-log").
	Log *trainlog.Log
}

// DecodeFile opens and decodes one input file with the default Options.
func DecodeFile(ctx context.Context, path string) (*Input, error) {
	return DecodeFileWith(ctx, path, Options{})
}

// DecodeFileWith opens and decodes one input file. Only a regular file is read: a named pipe, a device or a
// socket is refused at once (inputfile.ErrNotRegular), since a pipe without a writer blocks and /dev/zero never ends.
func DecodeFileWith(ctx context.Context, path string, opts Options) (*Input, error) {
	f, _, err := inputfile.OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if opts.Read != nil {
		return DecodeWith(ctx, path, &countingFile{f: f, read: opts.Read}, opts)
	}
	return DecodeWith(ctx, path, f, opts)
}

// countingFile is a file being decoded that adds to read the bytes read from it. A seek back (a decoder reading
// the file again) takes back what lies beyond the new position; a seek forward (the size probe) adds nothing.
type countingFile struct {
	f       *os.File
	read    *atomic.Int64
	counted int64 // this file's share of read
}

func (c *countingFile) Read(p []byte) (int, error) {
	n, err := c.f.Read(p)
	c.counted += int64(n)
	c.read.Add(int64(n))
	return n, err
}

// advance counts the bytes before off as read, when a decoder reads the file in place (mapped) instead of through
// Read.
func (c *countingFile) advance(off int64) {
	if off > c.counted {
		c.read.Add(off - c.counted)
		c.counted = off
	}
}

func (c *countingFile) Seek(offset int64, whence int) (int64, error) {
	pos, err := c.f.Seek(offset, whence)
	if err == nil && pos < c.counted {
		c.read.Add(pos - c.counted)
		c.counted = pos
	}
	return pos, err
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

// maxGzipDepth bounds nested gzip layers so a gzip bomb of gzips cannot recurse forever.
const maxGzipDepth = 2

// Decode sniffs r and decodes it with the matching format's decoder and the default Options. name is used in
// errors and as Input.Path.
func Decode(ctx context.Context, name string, r io.Reader) (*Input, error) {
	return DecodeWith(ctx, name, r, Options{})
}

// DecodeWith is Decode with options. Every decoder streams its input; a seekable input larger than
// opts.MaxInputSize is refused before it is read, and any other (a pipe, the inside of a gzip file) as soon as
// that many bytes have come out of it.
func DecodeWith(ctx context.Context, name string, r io.Reader, opts Options) (*Input, error) {
	limit := opts.maxInputSize()
	src, seekable := snapshot.SeekableSource(r)
	// A reader that can seek is a file or bytes in memory, whose reads do not block: it may be read ahead.
	src.ReadAhead = seekable
	var trailer func() int64
	if seekable {
		src.Map = mapper(r, src.Size)
		if src.Size > limit {
			return nil, sizeFailure(name, &input.SizeError{Limit: limit, Size: src.Size})
		}
		rs := r.(io.ReadSeeker)
		trailer = func() int64 { return gzipTrailerSize(rs) }
	} else {
		r = input.NewCapReader(r, limit, "")
	}
	src.Limit = limit
	in, err := decode(ctx, name, r, src, trailer, 0)
	if err != nil {
		return nil, sizeFailure(name, err)
	}
	return in, nil
}

// ContentSize returns how many bytes a decoder reads from the regular file at path: its size, or for a gzip file
// the length its trailer claims for the content (kept modulo 4 GiB, and a multi-member file's only for its last
// member: a claim nothing checks until the file is read). ok is false when the file cannot be read.
func ContentSize(path string) (size int64, ok bool) {
	f, fi, err := inputfile.OpenRegular(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var magic [2]byte
	if n, _ := io.ReadFull(f, magic[:]); n == 0 || input.Sniff(magic[:n]) != input.KindGzip {
		return fi.Size(), true
	}
	if n := gzipTrailerSize(f); n > 0 {
		return n, true
	}
	return 0, false
}

// gzipTrailerSize returns the length the trailer of the gzip file r claims for its content (its last four
// bytes, the length modulo 4 GiB), 0 when r is too short for gzip or cannot be read there. Nothing checks the
// claim until the content has been read, so it only sizes the decoder's lists (PickleSource.SizeHint). r is
// left where it was.
func gzipTrailerSize(r io.ReadSeeker) int64 {
	at, err := r.Seek(0, io.SeekCurrent)
	if err != nil {
		return 0
	}
	const minGzip = 18 // a header of 10 bytes and a trailer of 8
	var tail [4]byte
	end, err := r.Seek(-int64(len(tail)), io.SeekEnd)
	switch {
	case err != nil:
	case end+int64(len(tail)) < minGzip:
		err = io.ErrUnexpectedEOF
	default:
		_, err = io.ReadFull(r, tail[:])
	}
	if _, serr := r.Seek(at, io.SeekStart); serr != nil || err != nil {
		return 0
	}
	return int64(binary.LittleEndian.Uint32(tail[:]))
}

// decode sniffs one layer of input. src says how to read the layer again (src.Reopen nil: it cannot be);
// trailer, nil when the layer cannot seek, reads what its gzip trailer claims (gzipTrailerSize), only when the layer
// is gzip: the other inputs cost no seek.
func decode(ctx context.Context, name string, r io.Reader, src snapshot.PickleSource, trailer func() int64, depth int) (*Input, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	head, err := br.Peek(input.SniffLen)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, &input.Error{File: name, Offset: 0, Msg: "cannot read", Err: err}
	}
	if len(head) == 0 {
		return nil, &input.Error{File: name, Offset: 0, Msg: "empty file"}
	}
	if bytes.HasPrefix(head, utf8BOM) {
		// A UTF-8 byte order mark (Windows editors write one) says nothing the content does not: the decoders see
		// three spaces in its place, so JSON and logs read as without it and every byte offset stays the file's.
		if _, err := br.Discard(len(utf8BOM)); err != nil {
			return nil, &input.Error{File: name, Offset: 0, Msg: "cannot read", Err: err}
		}
		br = bufio.NewReaderSize(io.MultiReader(strings.NewReader("   "), br), 1<<16)
		if head, err = br.Peek(input.SniffLen); err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
			return nil, &input.Error{File: name, Offset: 0, Msg: "cannot read", Err: err}
		}
	}
	switch input.Sniff(head) {
	case input.KindPickle:
		snap, err := snapshot.DecodePickleFrom(ctx, name, br, src)
		if err != nil {
			return nil, err
		}
		return &Input{Path: name, Format: snapshot.PickleFormat(snap.Protocol), Snapshot: snap}, nil
	case input.KindZip:
		return nil, zipError(name, head)
	case input.KindLegacyTorchSave:
		return nil, legacyTorchSaveError(name)
	case input.KindOldPickle:
		return nil, snapshot.OldPickleError(ctx, name, head)
	case input.KindGzip:
		if depth >= maxGzipDepth {
			return nil, &input.Error{File: name, Offset: 0, Msg: "too many nested gzip layers"}
		}
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, &input.Error{File: name, Offset: 0, Msg: "bad gzip header", Err: err}
		}
		defer zr.Close()
		// The decoders read the decompressed stream as it inflates; the cap stops a bomb at the limit.
		inner := input.NewCapReader(zr, src.Limit, "")
		var claim int64
		if trailer != nil {
			claim = trailer()
		}
		in, err := decode(ctx, name, inner, gunzipped(src, claim), nil, depth+1)
		if err != nil {
			return nil, err
		}
		// gzip checks its checksum and length only at the end of the stream, which a decoder that stops at the
		// pickle's STOP (or reads the layer again to fall back) never reaches: what it left is read here, so that
		// a corrupt file is refused however it was read.
		if _, err := io.Copy(io.Discard, inner); err != nil {
			var se *input.SizeError
			if errors.As(err, &se) {
				return nil, err
			}
			return nil, &input.Error{File: name, Offset: inner.N(), Msg: "cannot read", Err: err}
		}
		return in, nil
	case input.KindMemscanOutput:
		return nil, &input.Error{File: name, Offset: 0, Msg: "a file memscan wrote (report, summary or comparison), not a PyTorch dump", Err: input.ErrMemscanOutput}
	case input.KindJSON:
		return decodeJSON(ctx, name, br)
	case input.KindText:
		return decodeText(ctx, name, br)
	}
	return nil, &input.Error{File: name, Offset: 0, Msg: fmt.Sprintf("not a snapshot pickle, JSON or log (first byte 0x%02x)", head[0]), Err: input.ErrUnknownContent}
}

// gunzipped is the source of the decompressed inside of a gzip layer: reopening decompresses the reopened layer
// again, capped like the first pass. Its size is unknown: the gzip trailer holds it only modulo 4 GiB, and a
// multi-member file's trailer only its last member's, so claim (the trailer's, 0: none) is only a hint.
func gunzipped(src snapshot.PickleSource, claim int64) snapshot.PickleSource {
	out := snapshot.PickleSource{Limit: src.Limit, ReadAhead: src.ReadAhead, SizeHint: claim}
	if src.Limit > 0 && claim > src.Limit {
		out.SizeHint = 0 // the content cannot be decoded anyway: the limit stops it first
	}
	if src.Reopen == nil {
		return out
	}
	out.Reopen = func() (io.Reader, error) {
		r, err := src.Reopen()
		if err != nil {
			return nil, err
		}
		zr, err := gzip.NewReader(bufio.NewReaderSize(r, 1<<16))
		if err != nil {
			return nil, err
		}
		return input.NewCapReader(zr, src.Limit, ""), nil
	}
	return out
}

// decodeText decodes a training log: lines are streamed with a bounded buffer, and only memory lines are
// kept. A log without any memory line is not recognised.
func decodeText(ctx context.Context, name string, r io.Reader) (*Input, error) {
	lg, err := trainlog.Decode(ctx, name, r)
	if err != nil {
		return nil, err
	}
	format := map[string]string{"megatron": trainlog.FormatMegatron, "deepspeed": trainlog.FormatDeepSpeed, "torchtitan": trainlog.FormatTorchtitan}[lg.Dialect]
	return &Input{Path: name, Format: format, Log: lg}, nil
}
