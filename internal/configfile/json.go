package configfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sort"
)

// jsonParser builds a Node tree from JSON tokens, with each value's line and column.
type jsonParser struct {
	budget
	data       []byte
	dec        *json.Decoder
	lineStarts []int
}

func parseJSON(d *Doc, data []byte) (*Node, error) {
	p := &jsonParser{budget: budget{d: d}, data: data, dec: json.NewDecoder(bytes.NewReader(data))}
	p.dec.UseNumber()
	p.lineStarts = []int{0}
	for i, c := range data {
		if c == '\n' {
			p.lineStarts = append(p.lineStarts, i+1)
		}
	}
	root, err := p.value(1)
	if err != nil {
		return nil, err
	}
	at := p.next()
	if _, err := p.dec.Token(); err != io.EOF {
		return nil, p.errAt(at, "trailing data after the top-level value; a config file holds one JSON value")
	}
	return root, nil
}

// next is the offset of the next token: the decoder's offset is after the previous token, before white space
// and separators.
func (p *jsonParser) next() int {
	i := int(p.dec.InputOffset())
	for i < len(p.data) {
		switch p.data[i] {
		case ' ', '\t', '\r', '\n', ',', ':':
			i++
			continue
		}
		break
	}
	return i
}

func (p *jsonParser) place(off int) (line, col int) {
	l := sort.Search(len(p.lineStarts), func(i int) bool { return p.lineStarts[i] > off }) - 1
	return l + 1, off - p.lineStarts[l] + 1
}

func (p *jsonParser) errAt(off int, format string, args ...any) error {
	n := &Node{}
	n.Line, n.Column = p.place(off)
	return p.d.Errorf(n, "", format, args...)
}

// token reads the next token, turning a syntax error into one placed in the file.
func (p *jsonParser) token() (json.Token, int, error) {
	at := p.next()
	tok, err := p.dec.Token()
	if err != nil {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se):
			// The token reader's offsets are those of the value it was in; a whole-document check places the
			// offending byte exactly (its offset counts the bytes read, that one included).
			var raw json.RawMessage
			if err := json.Unmarshal(p.data, &raw); errors.As(err, &se) {
				return nil, at, p.errAt(max(int(se.Offset)-1, 0), "invalid JSON: %v", se)
			}
			return nil, at, p.errAt(at, "invalid JSON: %v", se)
		case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
			return nil, at, p.errAt(len(p.data), "invalid JSON: the file ends inside a value")
		}
		return nil, at, p.errAt(at, "invalid JSON: %v", err)
	}
	return tok, at, nil
}

func (p *jsonParser) value(depth int) (*Node, error) {
	tok, at, err := p.token()
	if err != nil {
		return nil, err
	}
	n := &Node{}
	n.Line, n.Column = p.place(at)
	if err := p.budget.value(n, depth); err != nil {
		return nil, err
	}
	switch v := tok.(type) {
	case nil:
		n.Kind = Null
	case bool:
		n.Kind, n.Text = Bool, "false"
		if v {
			n.Text = "true"
		}
	case json.Number:
		n.Kind, n.Text = Number, string(v)
	case string:
		n.Kind, n.Text = String, v
	case json.Delim:
		switch v {
		case '{':
			n.Kind = Object
			seen := map[string]*Node{}
			for p.dec.More() {
				kt, kat, err := p.token()
				if err != nil {
					return nil, err
				}
				key, _ := kt.(string) // the decoder guarantees object keys are strings
				if first, dup := seen[key]; dup {
					return nil, p.errAt(kat, "duplicate key %q (first at line %d)", key, first.Line)
				}
				val, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				seen[key] = val
				k := &Node{}
				k.Line, k.Column = p.place(kat)
				n.Keys, n.Values, n.keyAt = append(n.Keys, key), append(n.Values, val), append(n.keyAt, k)
				if err := p.length(n, len(n.Keys)); err != nil {
					return nil, err
				}
			}
		case '[':
			n.Kind = List
			for p.dec.More() {
				item, err := p.value(depth + 1)
				if err != nil {
					return nil, err
				}
				n.Items = append(n.Items, item)
				if err := p.length(n, len(n.Items)); err != nil {
					return nil, err
				}
			}
		}
		if _, _, err := p.token(); err != nil { // the closing delimiter
			return nil, err
		}
	}
	return n, nil
}
