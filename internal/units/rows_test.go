package units

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// node is a JSON value parsed with its order and encodings kept: the reference layout below is built from it.
type node struct {
	obj, arr bool
	scalar   string   // the compact encoding of a scalar
	keys     []string // encoded keys of an object
	kids     []*node
}

func parseNode(t *testing.T, dec *json.Decoder) *node {
	t.Helper()
	tok, err := dec.Token()
	if err != nil {
		t.Fatal(err)
	}
	enc := func(v any) string {
		var b bytes.Buffer
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(false)
		if err := e.Encode(v); err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(b.String(), "\n")
	}
	switch tok {
	case json.Delim('{'):
		n := &node{obj: true}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				t.Fatal(err)
			}
			n.keys = append(n.keys, enc(k))
			n.kids = append(n.kids, parseNode(t, dec))
		}
		_, _ = dec.Token()
		return n
	case json.Delim('['):
		n := &node{arr: true}
		for dec.More() {
			n.kids = append(n.kids, parseNode(t, dec))
		}
		_, _ = dec.Token()
		return n
	}
	if num, ok := tok.(json.Number); ok {
		return &node{scalar: num.String()}
	}
	return &node{scalar: enc(tok)}
}

// compact is n's encoding without whitespace, spaced after commas and colons when spaced.
func (n *node) compact(spaced bool) string {
	sep, colon := ",", ":"
	if spaced {
		sep, colon = ", ", ": "
	}
	var parts []string
	for i, k := range n.kids {
		if n.obj {
			parts = append(parts, n.keys[i]+colon+k.compact(spaced))
		} else {
			parts = append(parts, k.compact(spaced))
		}
	}
	switch {
	case n.obj:
		return "{" + strings.Join(parts, sep) + "}"
	case n.arr:
		return "[" + strings.Join(parts, sep) + "]"
	}
	return n.scalar
}

// layout is the reference: encoding/json's two-space indentation, except that an array's element whose compact
// encoding takes at most limit bytes is written spaced on one line.
func (n *node) layout(b *strings.Builder, depth, limit int, element bool) {
	if (n.obj || n.arr) && element && len(n.compact(false)) <= limit {
		b.WriteString(n.compact(true))
		return
	}
	if !n.obj && !n.arr {
		b.WriteString(n.scalar)
		return
	}
	open, closing := "[", "]"
	if n.obj {
		open, closing = "{", "}"
	}
	if len(n.kids) == 0 {
		b.WriteString(open + closing)
		return
	}
	b.WriteString(open)
	for i, k := range n.kids {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n" + strings.Repeat("  ", depth+1))
		if n.obj {
			b.WriteString(n.keys[i] + ": ")
		}
		k.layout(b, depth+1, limit, n.arr)
	}
	b.WriteString("\n" + strings.Repeat("  ", depth) + closing)
}

// TestRowIndentWriter holds NewRowIndentWriter to the reference layout built from the parsed value, for row limits
// from one byte (no element fits) to more than any element, on values whose strings hold brackets, commas,
// colons, quotes and backslashes, with empty, nested and long containers; written whole, a byte at a time, and
// in pieces of a row limit's size.
func TestRowIndentWriter(t *testing.T) {
	long := make([]map[string]any, 3000)
	for i := range long {
		long[i] = map[string]any{"i": i, "s": `a "quoted" \ [x], {y}: z`, "span": map[string]int{"start": i, "end": i + 1}}
	}
	values := map[string]any{
		"scalars":  []any{nil, true, false, 0, -1.5e300, "", "ü\u2028"},
		"empty":    map[string]any{"a": []int{}, "b": map[string]int{}, "c": [][]int{{}, {1}}, "d": []any{map[string]int{}}},
		"strings":  []any{map[string]string{`k"1`: `v\"[{,:}]`, "\\": "\\\"", "<&>": "\n\t"}, []string{`]`, `\`, `"`}},
		"nested":   map[string]any{"x": []any{map[string]any{"y": []any{[]any{1, 2}, map[string]any{"z": []int{3}}}}}},
		"table":    map[string]any{"rows": long, "n": len(long)},
		"top rows": []any{map[string]int{"a": 1}, []int{1, 2}, 3},
	}
	for name, v := range values {
		var compact bytes.Buffer
		enc := json.NewEncoder(&compact)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		dec := json.NewDecoder(bytes.NewReader(compact.Bytes()))
		dec.UseNumber()
		root := parseNode(t, dec)
		for _, limit := range []int{1, 8, 20, 60, 200, 1 << 20} {
			var ref strings.Builder
			root.layout(&ref, 0, limit, false)
			want := ref.String() + "\n"
			for _, piece := range []int{len(compact.Bytes()), 1, limit} {
				var got bytes.Buffer
				iw := NewRowIndentWriter(&got, limit)
				if err := writePieces(iw, compact.Bytes(), piece); err != nil {
					t.Fatal(err)
				}
				if got.String() != want {
					t.Fatalf("%s, limit %d, pieces of %d: got\n%.400s\nwant\n%.400s", name, limit, piece, got.String(), want)
				}
			}
		}
	}
}

func writePieces(iw *IndentWriter, b []byte, piece int) error {
	for len(b) > 0 {
		k := min(piece, len(b))
		if _, err := iw.Write(b[:k]); err != nil {
			return err
		}
		b = b[k:]
	}
	return iw.Flush()
}
