package input

import (
	"bytes"
	"errors"
	"fmt"
)

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

// ErrUnknownContent is wrapped by the decoders when no decoder recognises the content.
var ErrUnknownContent = errors.New("unrecognised content")

// ErrMemscanOutput is wrapped when the content is a file memscan itself wrote (a report, a rank summary or a
// comparison) rather than a PyTorch dump. It reads and unwraps as ErrUnknownContent, so callers that only ask
// whether the content was recognised need not know about it; the CLI adds which command reads such files.
var ErrMemscanOutput error = memscanOutputError{}

type memscanOutputError struct{}

func (memscanOutputError) Error() string { return ErrUnknownContent.Error() }
func (memscanOutputError) Unwrap() error { return ErrUnknownContent }

// WrongInputError is content recognised as something other than an input memscan reads (a profiler trace, a
// checkpoint, JSON of another tool), with what to give memscan instead. It unwraps to ErrUnknownContent.
type WrongInputError struct {
	File string
	// What says what the content is; Do what to do instead.
	What, Do string
}

func (e *WrongInputError) Error() string { return e.File + ": " + e.What + "; " + e.Do }

func (e *WrongInputError) Unwrap() error { return ErrUnknownContent }
