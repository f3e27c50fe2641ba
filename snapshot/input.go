package snapshot

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
)

// Input is one decoded input file. Exactly one of the source fields is set.
type Input struct {
	Path string
	// Format names what the content was, e.g. "pickle-v4", "snapshot-json", "tracer-json", "memory-timeline",
	// "megatron-log".
	Format string
	// Snapshot is set for CUDA caching-allocator snapshots (pickle or their JSON rendition).
	Snapshot *Snapshot
	// Tracer is set for memory-tracer peak-snapshot JSON ("tracer-json").
	Tracer *Tracer
	// Timeline is set for torch.profiler memory timelines ("memory-timeline").
	Timeline *MemoryTimeline
	// Log is set for training logs with memory lines ("megatron-log", "deepspeed-log", "torchtitan-log").
	Log *Log
}

// Error is a decode failure with its position: the file, the byte offset where known (-1 otherwise), the
// field or JSON path where known, and what was wrong.
type Error struct {
	File   string
	Offset int64
	Field  string
	Msg    string
	Err    error
}

func (e *Error) Error() string {
	var b bytes.Buffer
	b.WriteString(e.File)
	if e.Offset >= 0 {
		fmt.Fprintf(&b, ": byte %d", e.Offset)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": %s", e.Field)
	}
	fmt.Fprintf(&b, ": %s", e.Msg)
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// ErrUnknownContent is wrapped by Decode when no decoder recognises the content.
var ErrUnknownContent = errors.New("unrecognised content")

// DecodeFile opens and decodes one input file with the default Options.
func DecodeFile(ctx context.Context, path string) (*Input, error) {
	return DecodeFileWith(ctx, path, Options{})
}

// DecodeFileWith opens and decodes one input file.
func DecodeFileWith(ctx context.Context, path string, opts Options) (*Input, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return DecodeWith(ctx, path, f, opts)
}

// maxGzipDepth bounds nested gzip layers so a gzip bomb of gzips cannot recurse forever.
const maxGzipDepth = 2

// Decode sniffs r and decodes it with the matching decoder and the default Options. name is used in errors and
// as Input.Path.
func Decode(ctx context.Context, name string, r io.Reader) (*Input, error) {
	return DecodeWith(ctx, name, r, Options{})
}

// DecodeWith is Decode with options. Every decoder streams its input; a seekable input larger than
// opts.MaxInputSize is refused before it is read, and any other (a pipe, the inside of a gzip file) as soon as
// that many bytes have come out of it.
func DecodeWith(ctx context.Context, name string, r io.Reader, opts Options) (*Input, error) {
	limit := opts.maxInputSize()
	rw := rewinder(r)
	if rw != nil {
		if rw.size > limit {
			return nil, sizeFailure(name, &sizeError{limit: limit, size: rw.size})
		}
	} else {
		r = &capReader{r: r, limit: limit}
	}
	in, err := decode(ctx, name, r, rw, 0, limit)
	if err != nil {
		return nil, sizeFailure(name, err)
	}
	return in, nil
}

// decode sniffs one layer of input. rw, when not nil, reads the same layer again from its start.
func decode(ctx context.Context, name string, r io.Reader, rw *rewindable, depth int, limit int64) (*Input, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	head, err := br.Peek(512)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return nil, &Error{File: name, Offset: 0, Msg: "cannot read", Err: err}
	}
	if len(head) == 0 {
		return nil, &Error{File: name, Offset: 0, Msg: "empty file"}
	}
	switch {
	case head[0] == 0x80: // PROTO opcode: a pickle of protocol 2 or later
		return decodePickleDispatch(ctx, name, br, rw, limit)
	case len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b:
		if depth >= maxGzipDepth {
			return nil, &Error{File: name, Offset: 0, Msg: "too many nested gzip layers"}
		}
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, &Error{File: name, Offset: 0, Msg: "bad gzip header", Err: err}
		}
		defer zr.Close()
		// The decoders read the decompressed stream as it inflates; the cap stops a bomb at the limit.
		return decode(ctx, name, &capReader{r: zr, limit: limit}, rw.gunzipped(limit), depth+1, limit)
	case isOldPickle(head):
		return nil, oldPickleError(ctx, name, head)
	}
	if isMemscanOutput(head) {
		return nil, &Error{File: name, Offset: 0, Err: ErrUnknownContent,
			Msg: "a file memscan wrote (report, summary or comparison), not a PyTorch dump: compare run directories with memscan compare, merge rank summaries with memscan merge"}
	}
	switch firstNonSpace(head) {
	case '{', '[':
		return decodeJSONInput(ctx, name, br)
	}
	if looksLikeText(head) {
		return decodeTextInput(ctx, name, br)
	}
	return nil, &Error{File: name, Offset: 0, Msg: fmt.Sprintf("not a snapshot pickle, JSON or log (first byte 0x%02x)", head[0]), Err: ErrUnknownContent}
}

func firstNonSpace(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case 0xEF, 0xBB, 0xBF: // UTF-8 byte order mark
			continue
		}
		return c
	}
	return 0
}

// looksLikeText reports whether the sniffed head is plausibly UTF-8 text (a training log).
func looksLikeText(b []byte) bool {
	for _, c := range b {
		if c == 0 || (c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != 0x1b) {
			return false
		}
	}
	return true
}

// memscanOutputJSON matches the start of the JSON files memscan writes: {"version": 1, "tool": "memscan …"} or
// {"kind": "memscan-…"}. No PyTorch dump starts like that (tracer files key by device, snapshots by "segments").
var memscanOutputJSON = regexp.MustCompile(`^\s*\{\s*"(?:version"\s*:\s*\d+\s*,\s*"tool"\s*:\s*"memscan|kind"\s*:\s*"memscan-)`)

// isMemscanOutput says whether head starts one of memscan's own output files (JSON, or msgpack: a map whose first
// entries name memscan), so that feeding one back gets a pointer to the right command instead of a parse error.
func isMemscanOutput(head []byte) bool {
	if memscanOutputJSON.Match(head) {
		return true
	}
	msgpackMap := (head[0] > 0x80 && head[0] <= 0x8f) || head[0] == 0xde || head[0] == 0xdf
	return msgpackMap && bytes.Contains(head[:min(len(head), 64)], []byte("memscan"))
}
