// Package msgpackcheck checks the structure of msgpack data before a decoder is trusted with it: that one value
// is complete (every string, binary, extension, array and map has the bytes and elements its header declares)
// and nests no deeper than a bound. A decoder that recurses on nesting (msgpack's Skip and interface decoding
// do) overflows its stack on a file of ten million one-element arrays; one that believes a declared length
// reports a cut-short file as a bare "EOF". The check is iterative, keeps only the nesting stack, and says where
// the data is wrong, by byte offset.
//
// It imports only the standard library.
package msgpackcheck

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// MaxDepth bounds the nesting of every msgpack file memscan reads. memscan's own files nest at most 8 deep (a
// report's allocation stacks and replayed timelines); the bound leaves room for later fields and none for the
// recursion a hostile file would need.
const MaxDepth = 32

// Error is a structural fault at a byte offset of the data checked.
type Error struct {
	Offset int64
	Msg    string
}

func (e *Error) Error() string { return fmt.Sprintf("byte %d: %s", e.Offset, e.Msg) }

// frame is a container being read: its kind, where it starts, how many elements it declares and how many are
// still to come (a map's entries count twice, key and value).
type frame struct {
	kind      string
	start     int64
	declared  uint64
	remaining uint64
}

// Value reads one msgpack value from r and returns its length in bytes. r is read past the value (it is
// buffered); callers that need what follows read it again at offset + length. offset is where r starts in its
// file, so that errors name the file's byte. io.EOF is returned, alone, when r holds nothing at all.
func Value(r io.Reader, offset int64, maxDepth int) (int64, error) {
	c := &checker{r: bufio.NewReaderSize(r, bufferSize(r)), pos: offset}
	var stack []frame
	for {
		start := c.pos
		b, err := c.r.ReadByte()
		if err != nil {
			if errors.Is(err, io.EOF) && start == offset {
				return 0, io.EOF
			}
			return 0, c.cut(stack, err)
		}
		c.pos++
		n, kind, elems, err := c.header(b)
		if err != nil {
			return 0, c.cut(stack, err)
		}
		if kind == "" && b == 0xc1 {
			return 0, &Error{Offset: start, Msg: "0xc1 is not a msgpack type (the data is not msgpack, or is damaged)"}
		}
		if n > 0 {
			skipped, err := c.r.Discard(int(min(n, 1<<62)))
			c.pos += int64(skipped)
			if err != nil || uint64(skipped) < n {
				return 0, &Error{Offset: c.pos, Msg: fmt.Sprintf("cut short: %s of %d bytes starts at byte %d but only %d follow%s",
					kind, n, start, skipped, inside(stack))}
			}
		}
		if elems > 0 {
			if len(stack) >= maxDepth {
				return 0, &Error{Offset: start, Msg: fmt.Sprintf("nested deeper than %d levels; memscan's files nest far less", maxDepth)}
			}
			stack = append(stack, frame{kind: kind, start: start, declared: elems, remaining: elems})
			continue
		}
		// One value is complete: it counts as an element of every container it ends.
		for {
			if len(stack) == 0 {
				return c.pos - offset, nil
			}
			top := &stack[len(stack)-1]
			top.remaining--
			if top.remaining > 0 {
				break
			}
			stack = stack[:len(stack)-1]
		}
	}
}

// bufferSize is 64 KiB, or less for a reader that says it holds less: a merge checks a hundred thousand
// summaries of a few hundred bytes each.
func bufferSize(r io.Reader) int {
	const most = 64 << 10
	if s, ok := r.(interface{ Size() int64 }); ok {
		return int(min(max(s.Size(), 16), most))
	}
	return most
}

type checker struct {
	r   *bufio.Reader
	pos int64
}

// header reads what follows the type byte b up to the payload: the payload's length n (strings, binaries,
// extensions and numbers), or the elements of an array or map (a map's entries twice). kind names the value in
// errors; it is "" for the reserved byte 0xc1.
func (c *checker) header(b byte) (n uint64, kind string, elems uint64, err error) {
	switch {
	case b <= 0x7f, b >= 0xe0, b == 0xc0, b == 0xc2, b == 0xc3:
		return 0, "a scalar", 0, nil
	case b >= 0xa0 && b <= 0xbf:
		return uint64(b & 0x1f), "a string", 0, nil
	case b >= 0x90 && b <= 0x9f:
		return 0, "an array", uint64(b & 0x0f), nil
	case b >= 0x80 && b <= 0x8f:
		return 0, "a map", 2 * uint64(b&0x0f), nil
	}
	switch b {
	case 0xc1:
		return 0, "", 0, nil
	case 0xca:
		return 4, "a float", 0, nil
	case 0xcb:
		return 8, "a float", 0, nil
	case 0xcc, 0xd0:
		return 1, "an integer", 0, nil
	case 0xcd, 0xd1:
		return 2, "an integer", 0, nil
	case 0xce, 0xd2:
		return 4, "an integer", 0, nil
	case 0xcf, 0xd3:
		return 8, "an integer", 0, nil
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
		return 1 + 1<<(b-0xd4), "an extension", 0, nil
	case 0xc4, 0xd9:
		n, err := c.length(1)
		return n, lengthKind(b), 0, err
	case 0xc5, 0xda:
		n, err := c.length(2)
		return n, lengthKind(b), 0, err
	case 0xc6, 0xdb:
		n, err := c.length(4)
		return n, lengthKind(b), 0, err
	case 0xc7, 0xc8, 0xc9:
		n, err := c.length(1 << (b - 0xc7))
		return n + 1, "an extension", 0, err // the type byte follows the length
	case 0xdc:
		n, err := c.length(2)
		return 0, "an array", n, err
	case 0xdd:
		n, err := c.length(4)
		return 0, "an array", n, err
	case 0xde:
		n, err := c.length(2)
		return 0, "a map", 2 * n, err
	}
	n, err = c.length(4) // 0xdf, the last one
	return 0, "a map", 2 * n, err
}

func lengthKind(b byte) string {
	if b >= 0xd9 {
		return "a string"
	}
	return "a binary"
}

// length reads a big-endian length of size bytes.
func (c *checker) length(size int) (uint64, error) {
	var buf [4]byte
	k, err := io.ReadFull(c.r, buf[:size])
	c.pos += int64(k)
	if err != nil {
		return 0, err
	}
	switch size {
	case 1:
		return uint64(buf[0]), nil
	case 2:
		return uint64(binary.BigEndian.Uint16(buf[:2])), nil
	}
	return uint64(binary.BigEndian.Uint32(buf[:4])), nil
}

// cut words a read that ended inside a value.
func (c *checker) cut(stack []frame, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &Error{Offset: c.pos, Msg: "cut short: the data ends" + inside(stack)}
	}
	return &Error{Offset: c.pos, Msg: err.Error()}
}

// inside says which container was being read, outermost first: where a cut-short file stopped.
func inside(stack []frame) string {
	if len(stack) == 0 {
		return ""
	}
	f := stack[0]
	read, unit := f.declared-f.remaining, "elements"
	declared := f.declared
	if f.kind == "a map" {
		read, declared, unit = read/2, declared/2, "entries"
	}
	s := fmt.Sprintf(" inside %s of %d %s that starts at byte %d (%d read)", f.kind, declared, unit, f.start, read)
	if len(stack) > 1 {
		s += fmt.Sprintf(", %d levels down", len(stack)-1)
	}
	return s
}
