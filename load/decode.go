package load

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/memscan/memscan/input"
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

// DecodeFile opens and decodes one input file.
func DecodeFile(ctx context.Context, path string) (*Input, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Decode(ctx, path, f)
}

// maxGzipDepth bounds nested gzip layers so a gzip bomb of gzips cannot recurse forever.
const maxGzipDepth = 2

// Decode sniffs r and decodes it with the matching format's decoder. name is used in errors and as Input.Path.
func Decode(ctx context.Context, name string, r io.Reader) (*Input, error) {
	return decode(ctx, name, r, 0)
}

func decode(ctx context.Context, name string, r io.Reader, depth int) (*Input, error) {
	// A seekable file is handed to the pickle decoder itself (rewound to where it started), so that the fast
	// decoder learns its size and its fallback can re-read it without holding the bytes.
	seeker, start := seekStart(r)
	br := bufio.NewReaderSize(r, 1<<16)
	head, err := br.Peek(input.SniffLen)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, &input.Error{File: name, Offset: 0, Msg: "cannot read", Err: err}
	}
	if len(head) == 0 {
		return nil, &input.Error{File: name, Offset: 0, Msg: "empty file"}
	}
	switch input.Sniff(head) {
	case input.KindPickle:
		src := io.Reader(br)
		if seeker != nil {
			if _, err := seeker.Seek(start, io.SeekStart); err == nil {
				src = seeker
			}
		}
		snap, err := snapshot.DecodePickle(ctx, name, src)
		if err != nil {
			return nil, err
		}
		return &Input{Path: name, Format: snapshot.PickleFormat(snap.Protocol), Snapshot: snap}, nil
	case input.KindGzip:
		if depth >= maxGzipDepth {
			return nil, &input.Error{File: name, Offset: 0, Msg: "too many nested gzip layers"}
		}
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, &input.Error{File: name, Offset: 0, Msg: "bad gzip header", Err: err}
		}
		defer zr.Close()
		return decode(ctx, name, zr, depth+1)
	case input.KindMemscanOutput:
		return nil, &input.Error{File: name, Offset: 0, Msg: "a file memscan wrote (report, summary or comparison), not a PyTorch dump", Err: input.ErrMemscanOutput}
	case input.KindJSON:
		return decodeJSON(ctx, name, br)
	case input.KindText:
		return decodeText(ctx, name, br)
	}
	return nil, &input.Error{File: name, Offset: 0, Msg: fmt.Sprintf("not a snapshot pickle, JSON or log (first byte 0x%02x)", head[0]), Err: input.ErrUnknownContent}
}

// seekStart returns r as a seeker and its current offset, or nil when r cannot seek (a pipe, a gzip stream).
func seekStart(r io.Reader) (io.ReadSeeker, int64) {
	s, ok := r.(io.ReadSeeker)
	if !ok {
		return nil, 0
	}
	start, err := s.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, 0
	}
	return s, start
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
