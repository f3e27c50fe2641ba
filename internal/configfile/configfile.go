// Package configfile reads memscan's config files (static configs, custom GPU lists, category rules,
// calibration manifests, corrections) strictly, the same way for every one of them:
//
//   - only a regular file is read, through a size limit (inputfile.ReadFile): never a pipe or a device;
//   - JSON or YAML (by extension, else by content), with or without a UTF-8 byte order mark, one document only:
//     trailing data after a JSON value and a second YAML document are errors;
//   - duplicate keys, unknown keys (with a "did you mean"), values of the wrong type, integers written with a
//     fraction (version: 1.5), numbers out of range and non-finite floats (.inf, .nan, 1e400) are errors;
//   - nesting depth, list and map lengths and the total number of values (YAML aliases included) are bounded
//     while parsing;
//
// and every error names the file, the line and column in the file as written, and the key path
// (rules[3].category).
package configfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/memscan/memscan/internal/inputfile"
)

// Limits bound what one config file may hold; they are checked while parsing, before any value is used.
type Limits struct {
	// MaxBytes bounds the file's size.
	MaxBytes int64
	// MaxDepth bounds the nesting of objects and lists.
	MaxDepth int
	// MaxItems bounds the elements of one list and the keys of one object.
	MaxItems int
	// MaxValues bounds the values of the whole document, counting each use of a YAML alias again, so an alias
	// bomb stops here.
	MaxValues int
}

// Kind is the type of a value as written.
type Kind uint8

// The kinds of values.
const (
	Null Kind = iota
	Bool
	Number
	String
	Object
	List
)

func (k Kind) String() string {
	return [...]string{"null", "a boolean", "a number", "a string", "an object", "an array"}[k]
}

// Node is one value of a document with where it was written.
type Node struct {
	Kind Kind
	// Text is a scalar's text: the string, the number as written (YAML integers in decimal), "true" or "false".
	Text string
	// Keys and Values are an object's entries in document order; keyAt holds where each key was written.
	Keys   []string
	Values []*Node
	keyAt  []*Node
	// Items are a list's elements.
	Items []*Node
	// Line and Column are 1-based.
	Line, Column int
	// float marks a number written with a fraction or an exponent (YAML: resolved as a float), which no
	// integer field takes; yamlFloat is its value as YAML reads it (.inf, .nan included).
	float     bool
	yamlFloat float64
	// yamlPlain marks a YAML plain (unquoted) scalar, whose text may be read as a string.
	yamlPlain bool
}

// Get returns the value of key in an object, nil when absent or when n is not an object.
func (n *Node) Get(key string) *Node {
	if n == nil || n.Kind != Object {
		return nil
	}
	for i, k := range n.Keys {
		if k == key {
			return n.Values[i]
		}
	}
	return nil
}

// Doc is one parsed config file.
type Doc struct {
	// Name is the file's path (or another name for the bytes), used in errors.
	Name string
	// YAML says the document was read as YAML.
	YAML bool
	Root *Node
	lim  Limits
}

// Error is a config file's failure with its place: the file, the line and column (0 when unknown) and the key
// path (empty for the document as a whole).
type Error struct {
	File         string
	Line, Column int
	Path         string
	Msg          string
	Err          error // printed after Msg
	cause        error // unwrapped, not printed (Msg already says it)
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d:%d", e.Line, e.Column)
		}
		b.WriteString(": ")
	} else if e.Line > 0 {
		fmt.Fprintf(&b, "line %d, column %d: ", e.Line, e.Column)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error {
	if e.Err != nil {
		return e.Err
	}
	return e.cause
}

// Errorf makes an error about node n (nil: the document) at key path.
func (d *Doc) Errorf(n *Node, path, format string, args ...any) error {
	e := &Error{File: d.Name, Path: path, Msg: fmt.Sprintf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	return e
}

// Lookup finds the node at a key path as Errorf writes them ("rules[3].category", "model.num_layers"); nil
// when the document does not hold it.
func (d *Doc) Lookup(path string) *Node {
	n := d.Root
	for path != "" && n != nil {
		if path[0] == '[' {
			end := strings.IndexByte(path, ']')
			if end < 0 {
				return nil
			}
			var i int
			if _, err := fmt.Sscanf(path[1:end], "%d", &i); err != nil || n.Kind != List || i < 0 || i >= len(n.Items) {
				return nil
			}
			n, path = n.Items[i], strings.TrimPrefix(path[end+1:], ".")
			continue
		}
		key := path
		if i := strings.IndexAny(path, ".["); i >= 0 {
			key, path = path[:i], strings.TrimPrefix(path[i:], ".")
		} else {
			path = ""
		}
		n = n.Get(key)
	}
	return n
}

// ErrorAt is Errorf about the value at a key path, placed where the document wrote it (unplaced when it did
// not: a default, a preset's value).
func (d *Doc) ErrorAt(path, format string, args ...any) error {
	n := d.Lookup(path)
	// A key the document left out (a missing figure) is placed at the nearest enclosing value it wrote.
	for p := path; n == nil && p != ""; {
		if i := strings.LastIndexAny(p, ".["); i > 0 {
			p = p[:i]
		} else {
			p = ""
		}
		n = d.Lookup(p)
	}
	return d.Errorf(n, path, format, args...)
}

// IsYAML decides how to read a config file: a .yaml or .yml file is YAML; any other is JSON when its content
// starts with '{' or '[' (after any byte order mark and white space), YAML otherwise.
func IsYAML(path string, data []byte) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		return true
	}
	t := bytes.TrimSpace(trimBOM(data))
	return len(t) == 0 || (t[0] != '{' && t[0] != '[')
}

var bom = []byte{0xEF, 0xBB, 0xBF}

// trimBOM drops a UTF-8 byte order mark, which editors on Windows write and which says nothing else.
func trimBOM(data []byte) []byte { return bytes.TrimPrefix(data, bom) }

// ReadFile reads and parses the config file at path (what names its kind in errors: "a rule file"), as JSON or
// YAML by IsYAML.
func ReadFile(path, what string, lim Limits) (*Doc, error) {
	data, err := inputfile.ReadFile(path, what, lim.MaxBytes)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, &Error{File: path, Msg: pe.Err.Error(), cause: err}
		}
		return nil, err // names the path already
	}
	return Parse(path, data, IsYAML(path, data), lim)
}

// Parse parses data as one JSON or YAML document within lim; name is used in errors.
func Parse(name string, data []byte, yamlInput bool, lim Limits) (*Doc, error) {
	d := &Doc{Name: name, YAML: yamlInput, lim: lim}
	if int64(len(data)) > lim.MaxBytes {
		return nil, &Error{File: name, Msg: fmt.Sprintf("%s is larger than the %s limit", inputfile.SizeWords(int64(len(data))), inputfile.SizeWords(lim.MaxBytes))}
	}
	data = trimBOM(data)
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &Error{File: name, Msg: "empty file"}
	}
	var err error
	if yamlInput {
		d.Root, err = parseYAML(d, data)
	} else {
		d.Root, err = parseJSON(d, data)
	}
	if err != nil {
		return nil, err
	}
	return d, nil
}

// budget counts values and checks depth and lengths while a document is built.
type budget struct {
	d      *Doc
	values int
}

func (b *budget) value(n *Node, depth int) error {
	b.values++
	if b.values > b.d.lim.MaxValues {
		return b.d.Errorf(n, "", "more than %d values in one file (YAML aliases count each time they are used)", b.d.lim.MaxValues)
	}
	if depth > b.d.lim.MaxDepth {
		return b.d.Errorf(n, "", "nested more than %d levels deep", b.d.lim.MaxDepth)
	}
	return nil
}

func (b *budget) length(n *Node, count int) error {
	if count > b.d.lim.MaxItems {
		what := "elements in one list"
		if n.Kind == Object {
			what = "keys in one object"
		}
		return b.d.Errorf(n, "", "more than %d %s", b.d.lim.MaxItems, what)
	}
	return nil
}
