package snapshot

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/memscan/memscan/internal/input"
	"github.com/nlpodyssey/gopickle/pickle"
)

// errRefusedObject is returned by the unpickler hooks. The pre-scan already refuses every opcode that reaches
// them, so seeing it means the two disagree; it is kept as a second line of defence.
var errRefusedObject = errors.New("snapshot pickles hold only plain data; refusing to load a Python object")

// decodePickleReference decodes a CUDA allocator snapshot pickle (protocols 2 to 5) with the reference decoder.
//
// The whole file is read and validated by a pre-scan (see pickleScanner) before gopickle builds the value tree,
// so that bad input fails with the offset of the opcode at fault and never makes gopickle allocate a claimed
// length, recurse, or instantiate anything. The tree is then converted to the model by the same converter that
// handles the JSON rendition of a snapshot.
func decodePickleReference(ctx context.Context, name string, r io.Reader) (*Snapshot, error) {
	data, err := readPickle(ctx, name, r)
	if err != nil {
		return nil, err
	}
	return decodePickleBytes(ctx, name, data)
}

// PickleFormat names a snapshot pickle's format for reports: "pickle-v4" for protocol 4.
func PickleFormat(protocol int) string { return fmt.Sprintf("pickle-v%d", protocol) }

// readPickle reads a whole pickle; a read failure is reported at the offset reached, cancellation as ctx's error.
func readPickle(ctx context.Context, name string, r io.Reader) ([]byte, error) {
	data, n, err := readAllContext(ctx, r)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, &input.Error{File: name, Offset: n, Msg: "cannot read", Err: err}
	}
	return data, nil
}

// modelBudgetSlack is added to the file size to form the model-object budget (see convertSnapshot), so that
// tiny files with a few shared lists are never refused.
const modelBudgetSlack = 1 << 16

// decodePickleBytes decodes a complete snapshot pickle held in memory.
func decodePickleBytes(ctx context.Context, name string, data []byte) (*Snapshot, error) {
	if len(data) == 0 {
		return nil, &input.Error{File: name, Offset: 0, Msg: "empty file"}
	}
	proto, err := scanSnapshotPickle(ctx, data)
	if err != nil {
		var se *scanError
		if errors.As(err, &se) {
			return nil, &input.Error{File: name, Offset: se.Offset, Msg: se.Msg}
		}
		return nil, err // context cancellation
	}
	if proto < 2 {
		return nil, &input.Error{File: name, Offset: 0, Msg: fmt.Sprintf("pickle protocol %d is not a snapshot (snapshots use protocols 2 to 5)", proto)}
	}
	v, err := loadPickleValue(name, data)
	if err != nil {
		return nil, err
	}
	snap, err := convertSnapshot(ctx, name, v, int64(len(data))+modelBudgetSlack)
	if err != nil {
		return nil, err
	}
	snap.Protocol = proto
	return snap, nil
}

// loadPickleValue runs gopickle over data that passed the pre-scan.
func loadPickleValue(name string, data []byte) (v any, err error) {
	br := bytes.NewReader(data)
	pos := func() int64 { return br.Size() - int64(br.Len()) }
	defer func() {
		// The pre-scan rules out every known way to make gopickle panic; a panic here is a decoder bug, and it
		// must still surface as an error for this one file rather than end the process.
		if p := recover(); p != nil {
			v = nil
			err = &input.Error{File: name, Offset: pos(), Msg: fmt.Sprintf("internal pickle decoder failure: %v", p)}
		}
	}()
	u := pickle.NewUnpickler(br)
	u.FindClass = func(module, cls string) (any, error) {
		return nil, fmt.Errorf("%w: %s.%s", errRefusedObject, module, cls)
	}
	u.PersistentLoad = func(any) (any, error) { return nil, fmt.Errorf("%w: persistent id", errRefusedObject) }
	u.GetExtension = func(code int) (any, error) { return nil, fmt.Errorf("%w: extension %d", errRefusedObject, code) }
	u.NextBuffer = func() (any, error) { return nil, fmt.Errorf("%w: out-of-band buffer", errRefusedObject) }
	u.MakeReadOnly = func(any) (any, error) { return nil, fmt.Errorf("%w: read-only buffer", errRefusedObject) }
	v, err = u.Load()
	if err != nil {
		// Offsets here are approximate (gopickle reads whole frames); the pre-scan reports the precise ones.
		return nil, &input.Error{File: name, Offset: pos(), Msg: "malformed pickle", Err: err}
	}
	return v, nil
}

// readAllContext reads r to the end, checking ctx between chunks so that a slow or huge input can be abandoned.
// The bytes are read into fixed chunks and joined once at the end: a doubling buffer would hold up to four times
// the input at its last growth, two while joining. On failure it returns how many bytes it read.
func readAllContext(ctx context.Context, r io.Reader) ([]byte, int64, error) {
	// Chunks start small (most pickles that reach here are small) and double up to maxChunk.
	const maxChunk = 4 << 20
	chunk := 64 << 10
	var chunks [][]byte
	var total int
	join := func() []byte {
		out := make([]byte, 0, total)
		for _, c := range chunks {
			out = append(out, c...)
		}
		return out
	}
	for {
		if err := ctx.Err(); err != nil {
			return nil, int64(total), err
		}
		buf := make([]byte, chunk)
		chunk = min(2*chunk, maxChunk)
		n, err := io.ReadFull(r, buf)
		if n > 0 {
			chunks = append(chunks, buf[:n])
			total += n
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return join(), int64(total), nil
		}
		if err != nil {
			return nil, int64(total), err
		}
	}
}
