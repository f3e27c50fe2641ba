package configfile

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/memscan/memscan/internal/suggest"
)

// Decode stores the document into v, a pointer to a struct, by the fields' json tags. Keys the document leaves
// out keep v's values (so v may hold defaults); null leaves a value as it is and clears a pointer. Key names
// match exactly; an unknown key is an error with the nearest known key.
func (d *Doc) Decode(v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("configfile: Decode needs a non-nil pointer, got %T", v)
	}
	return d.decode(d.Root, rv.Elem(), "")
}

// DecodeAt stores the value at a node (from Root or Get) into v, naming it path in errors.
func (d *Doc) DecodeAt(n *Node, path string, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("configfile: DecodeAt needs a non-nil pointer, got %T", v)
	}
	return d.decode(n, rv.Elem(), path)
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

func (d *Doc) decode(n *Node, v reflect.Value, path string) error {
	if n.Kind == Null {
		if v.Kind() == reflect.Pointer || v.Kind() == reflect.Slice || v.Kind() == reflect.Map {
			v.SetZero()
		}
		return nil
	}
	if v.Kind() != reflect.Pointer && v.CanAddr() && v.Addr().Type().Implements(jsonUnmarshaler) {
		// A type with its own JSON form (a name or a list of names) reads the value as JSON.
		if err := v.Addr().Interface().(json.Unmarshaler).UnmarshalJSON(n.json()); err != nil {
			return d.Errorf(n, path, "%v", err)
		}
		return nil
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		return d.decode(n, v.Elem(), path)
	case reflect.Struct:
		return d.decodeStruct(n, v, path)
	case reflect.Map:
		if n.Kind != Object {
			return d.mismatch(n, path, "an object")
		}
		if v.Type().Key().Kind() != reflect.String {
			return fmt.Errorf("configfile: %s: map keys must be strings", v.Type())
		}
		if v.IsNil() {
			v.Set(reflect.MakeMapWithSize(v.Type(), len(n.Keys)))
		}
		for i, k := range n.Keys {
			if err := d.checkText(n.keyAt[i], joinKey(path, k), k); err != nil {
				return err
			}
			e := reflect.New(v.Type().Elem()).Elem()
			if err := d.decode(n.Values[i], e, joinKey(path, k)); err != nil {
				return err
			}
			v.SetMapIndex(reflect.ValueOf(k).Convert(v.Type().Key()), e)
		}
		return nil
	case reflect.Slice:
		if n.Kind != List {
			return d.mismatch(n, path, "an array")
		}
		s := reflect.MakeSlice(v.Type(), len(n.Items), len(n.Items))
		for i, item := range n.Items {
			if err := d.decode(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Interface:
		if v.NumMethod() != 0 {
			return fmt.Errorf("configfile: cannot decode into %s", v.Type())
		}
		g, err := d.generic(n, path)
		if err != nil {
			return err
		}
		v.Set(reflect.ValueOf(g))
		return nil
	case reflect.String:
		switch {
		case n.Kind == String:
		case d.YAML && n.yamlPlain && (n.Kind == Number || n.Kind == Bool):
			// YAML has no quotes to tell name: 2024 from a number; a string field takes the text as written.
		default:
			return d.mismatch(n, path, "a string")
		}
		if err := d.checkText(n, path, n.Text); err != nil {
			return err
		}
		v.SetString(n.Text)
		return nil
	case reflect.Bool:
		if n.Kind != Bool {
			return d.mismatch(n, path, "true or false")
		}
		v.SetBool(n.Text == "true")
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, err := d.integer(n, path)
		if err != nil {
			return err
		}
		if v.OverflowInt(i) {
			return d.Errorf(n, path, "%s is out of range", n.Text)
		}
		v.SetInt(i)
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		i, err := d.integer(n, path)
		if err != nil {
			return err
		}
		if i < 0 {
			return d.Errorf(n, path, "%s: must not be negative", n.Text)
		}
		if v.OverflowUint(uint64(i)) {
			return d.Errorf(n, path, "%s is out of range", n.Text)
		}
		v.SetUint(uint64(i))
		return nil
	case reflect.Float32, reflect.Float64:
		f, err := d.float(n, path)
		if err != nil {
			return err
		}
		if v.OverflowFloat(f) {
			return d.Errorf(n, path, "%s is out of range", n.Text)
		}
		v.SetFloat(f)
		return nil
	}
	return fmt.Errorf("configfile: cannot decode into %s", v.Type())
}

// checkText refuses a string holding a control character other than newline and tab (ESC above all): names
// and notes from a config reach terminals and reports, where such a character would act instead of showing.
func (d *Doc) checkText(n *Node, path, s string) error {
	for _, r := range s {
		if r < 0x20 && r != '\n' && r != '\t' || r >= 0x7f && r < 0xa0 {
			return d.Errorf(n, path, "%q holds a control character (%U)", clip(s), r)
		}
	}
	return nil
}

func (d *Doc) mismatch(n *Node, path, want string) error {
	got := n.Kind.String()
	switch n.Kind {
	case String:
		got = fmt.Sprintf("the string %q", clip(n.Text))
	case Number, Bool:
		got = n.Text
	}
	return d.Errorf(n, path, "expected %s, got %s", want, got)
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:37] + "..."
	}
	return s
}

// integer reads a number written as an integer: 1.5, 1e3 and 1.0 are refused rather than truncated.
func (d *Doc) integer(n *Node, path string) (int64, error) {
	if n.Kind != Number {
		return 0, d.mismatch(n, path, "an integer")
	}
	if n.float || strings.ContainsAny(n.Text, ".eE") {
		return 0, d.Errorf(n, path, "expected an integer, got %s", n.Text)
	}
	i, err := strconv.ParseInt(n.Text, 10, 64)
	if err != nil {
		return 0, d.Errorf(n, path, "%s is out of range", clip(n.Text))
	}
	return i, nil
}

// float reads a finite number.
func (d *Doc) float(n *Node, path string) (float64, error) {
	if n.Kind != Number {
		return 0, d.mismatch(n, path, "a number")
	}
	f := n.yamlFloat
	if !d.YAML || !n.float {
		var err error
		if f, err = strconv.ParseFloat(n.Text, 64); err != nil {
			return 0, d.Errorf(n, path, "%s is out of range (a float64 holds at most 1.8e308)", clip(n.Text))
		}
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, d.Errorf(n, path, "%s is not a finite number", n.Text)
	}
	return f, nil
}

// field is one settable key of a struct, found through embedded structs as encoding/json finds them.
type field struct {
	name  string
	index []int
}

func structFields(t reflect.Type) []field {
	var out []field
	var walk func(t reflect.Type, index []int)
	walk = func(t reflect.Type, index []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			idx := append(append([]int(nil), index...), i)
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				walk(f.Type, idx)
				continue
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			out = append(out, field{name: name, index: idx})
		}
	}
	walk(t, nil)
	return out
}

func (d *Doc) decodeStruct(n *Node, v reflect.Value, path string) error {
	if n.Kind != Object {
		return d.mismatch(n, path, "an object")
	}
	fields := structFields(v.Type())
	for i, k := range n.Keys {
		var f *field
		for j := range fields {
			if fields[j].name == k {
				f = &fields[j]
				break
			}
		}
		p := joinKey(path, k)
		if f == nil {
			names := make([]string, len(fields))
			for j, f := range fields {
				names[j] = f.name
			}
			return d.unknownKey(n.keyAt[i], p, k, names)
		}
		if err := d.decode(n.Values[i], v.FieldByIndex(f.index), p); err != nil {
			return err
		}
	}
	return nil
}

func (d *Doc) unknownKey(n *Node, path, key string, known []string) error {
	if hint := suggest.Hint(key, known, suggest.Quoted); hint != "" {
		return d.Errorf(n, path, "unknown key (%s)", strings.TrimPrefix(hint, "; "))
	}
	known = slices.Clone(known)
	slices.Sort(known)
	return d.Errorf(n, path, "unknown key (known keys: %s)", strings.Join(known, ", "))
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// generic turns a node into encoding/json's generic values, numbers as json.Number.
func (d *Doc) generic(n *Node, path string) (any, error) {
	switch n.Kind {
	case Null:
		return nil, nil
	case Bool:
		return n.Text == "true", nil
	case Number:
		f, err := d.float(n, path)
		if err != nil {
			return nil, err
		}
		if n.float {
			return json.Number(strconv.FormatFloat(f, 'g', -1, 64)), nil
		}
		return json.Number(n.Text), nil
	case String:
		return n.Text, d.checkText(n, path, n.Text)
	case List:
		out := make([]any, len(n.Items))
		for i, item := range n.Items {
			g, err := d.generic(item, fmt.Sprintf("%s[%d]", path, i))
			if err != nil {
				return nil, err
			}
			out[i] = g
		}
		return out, nil
	}
	out := make(map[string]any, len(n.Keys))
	for i, k := range n.Keys {
		g, err := d.generic(n.Values[i], joinKey(path, k))
		if err != nil {
			return nil, err
		}
		out[k] = g
	}
	return out, nil
}

// json renders a node as JSON, for types that read their own JSON form.
func (n *Node) json() []byte {
	var b []byte
	var write func(n *Node)
	write = func(n *Node) {
		switch n.Kind {
		case Null:
			b = append(b, "null"...)
		case Bool:
			b = append(b, n.Text...)
		case Number:
			if n.float && (math.IsInf(n.yamlFloat, 0) || math.IsNaN(n.yamlFloat)) {
				b = append(b, "null"...)
			} else if _, err := strconv.ParseFloat(n.Text, 64); err == nil {
				b = append(b, n.Text...)
			} else {
				b = strconv.AppendQuote(b, n.Text)
			}
		case String:
			s, _ := json.Marshal(n.Text)
			b = append(b, s...)
		case List:
			b = append(b, '[')
			for i, item := range n.Items {
				if i > 0 {
					b = append(b, ',')
				}
				write(item)
			}
			b = append(b, ']')
		case Object:
			b = append(b, '{')
			for i, k := range n.Keys {
				if i > 0 {
					b = append(b, ',')
				}
				s, _ := json.Marshal(k)
				b = append(b, s...)
				b = append(b, ':')
				write(n.Values[i])
			}
			b = append(b, '}')
		}
	}
	write(n)
	return b
}
