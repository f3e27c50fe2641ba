package snapshot

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"

	"github.com/nlpodyssey/gopickle/types"
)

// This file gives the converter one view over the two generic value trees it accepts: what gopickle builds
// (*types.Dict, *types.List, *types.Tuple, int, *big.Int, float64, string, bool, nil) and what encoding/json
// builds with UseNumber (map[string]any, []any, json.Number, float64, string, bool, nil).

// dictView is a dict from either tree.
type dictView struct {
	pd *types.Dict
	jm map[string]any
}

func asDict(v any) (dictView, bool) {
	switch d := v.(type) {
	case *types.Dict:
		return dictView{pd: d}, d != nil
	case map[string]any:
		return dictView{jm: d}, true
	}
	return dictView{}, false
}

func (d dictView) len() int {
	if d.pd != nil {
		return len(*d.pd)
	}
	return len(d.jm)
}

// each calls fn for every entry. A pickled dict with a non-string key is not snapshot data; each reports it
// through badKey so the caller can name the field.
func (d dictView) each(fn func(k string, v any) error, badKey func(k, v any) error) error {
	if d.pd != nil {
		for _, e := range *d.pd {
			k, ok := e.Key.(string)
			if !ok {
				if err := badKey(e.Key, e.Value); err != nil {
					return err
				}
				continue
			}
			if err := fn(k, e.Value); err != nil {
				return err
			}
		}
		return nil
	}
	for k, v := range d.jm {
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return nil
}

// get returns the value of the last entry with key k (a later SETITEMS entry overrides an earlier one, as in
// Python).
func (d dictView) get(k string) (any, bool) {
	if d.pd != nil {
		for i := len(*d.pd) - 1; i >= 0; i-- {
			if s, ok := (*d.pd)[i].Key.(string); ok && s == k {
				return (*d.pd)[i].Value, true
			}
		}
		return nil, false
	}
	v, ok := d.jm[k]
	return v, ok
}

// keys returns up to max string keys, sorted, for error messages.
func (d dictView) keys(max int) []string {
	var ks []string
	_ = d.each(func(k string, _ any) error { ks = append(ks, k); return nil }, func(_, _ any) error { return nil })
	sort.Strings(ks)
	if len(ks) > max {
		ks = append(ks[:max], "...")
	}
	return ks
}

// asList returns the elements of a list and a key identifying the list object. Pickled lists that the memo
// shares are one *types.List, so the key lets shared lists convert to one shared result.
func asList(v any) (items []any, identity any, ok bool) {
	switch l := v.(type) {
	case *types.List:
		if l == nil {
			return nil, nil, false
		}
		return *l, l, true
	case []any:
		if len(l) == 0 {
			return l, nil, true
		}
		return l, &l[0], true
	}
	return nil, nil, false
}

// asSequence accepts a tuple or a list (JSON has no tuples).
func asSequence(v any) ([]any, bool) {
	if t, ok := v.(*types.Tuple); ok && t != nil {
		return *t, true
	}
	items, _, ok := asList(v)
	return items, ok
}

// intClass says how an integer value fits the Go integer types.
type intClass uint8

const (
	notInt      intClass = iota
	intSigned            // fits int64
	intUnsigned          // above math.MaxInt64, fits uint64
	intHuge              // beyond 64 bits
)

var (
	bigMaxUint64 = new(big.Int).SetUint64(math.MaxUint64)
)

// intOf extracts an integer. For intSigned, n holds the value (and u == uint64(n) when n >= 0); for
// intUnsigned, u holds it.
func intOf(v any) (n int64, u uint64, c intClass) {
	switch x := v.(type) {
	case int:
		return int64(x), uint64(x), intSigned
	case int64:
		return x, uint64(x), intSigned
	case *big.Int:
		if x == nil {
			return 0, 0, notInt
		}
		if x.IsInt64() {
			n := x.Int64()
			return n, uint64(n), intSigned
		}
		if x.Sign() > 0 && x.Cmp(bigMaxUint64) <= 0 {
			return 0, x.Uint64(), intUnsigned
		}
		return 0, 0, intHuge
	case json.Number:
		s := string(x)
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, uint64(i), intSigned
		}
		if ui, err := strconv.ParseUint(s, 10, 64); err == nil {
			return 0, ui, intUnsigned
		}
		if strings.IndexFunc(s, func(r rune) bool { return r == '.' || r == 'e' || r == 'E' }) < 0 {
			// All digits but out of range.
			if _, ok := new(big.Int).SetString(s, 10); ok {
				return 0, 0, intHuge
			}
			return 0, 0, notInt
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, 0, notInt
		}
		return intOfFloat(f)
	case float64:
		return intOfFloat(x)
	}
	return 0, 0, notInt
}

// intOfFloat accepts a float that holds an integer exactly (JSON writers print large ints as 1e+20 or 5.0).
func intOfFloat(f float64) (int64, uint64, intClass) {
	if f != math.Trunc(f) || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, 0, notInt
	}
	if math.Abs(f) > 1<<53 {
		return 0, 0, intHuge // not exact
	}
	return int64(f), uint64(int64(f)), intSigned
}

func floatOf(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case json.Number:
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil
	}
	if n, _, c := intOf(v); c == intSigned {
		return float64(n), true
	}
	return 0, false
}

// typeName names a value's type the way Python would, for error messages.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "None"
	case bool:
		return "bool"
	case int, int64, *big.Int:
		return "int"
	case json.Number:
		return "number"
	case float64:
		return "float"
	case string:
		return "str"
	case []byte:
		return "bytes"
	case *types.ByteArray:
		return "bytearray"
	case *types.List, []any:
		return "list"
	case *types.Tuple:
		return "tuple"
	case *types.Dict, map[string]any:
		return "dict"
	}
	return fmt.Sprintf("%T", v)
}

// renderValue turns an arbitrary value into short text for the model's free-form string fields. It is bounded
// in depth and length because the value may be hostile (deeply nested or self-referencing).
func renderValue(v any) string {
	var b strings.Builder
	renderInto(&b, v, 0)
	return b.String()
}

const (
	renderMaxDepth = 4
	renderMaxItems = 32
	renderMaxLen   = 4096
)

func renderInto(b *strings.Builder, v any, depth int) {
	if b.Len() > renderMaxLen {
		return
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("None")
	case bool:
		if x {
			b.WriteString("True")
		} else {
			b.WriteString("False")
		}
	case string:
		if depth == 0 {
			b.WriteString(x)
		} else {
			b.WriteString(strconv.Quote(x))
		}
	case float64:
		b.WriteString(strconv.FormatFloat(x, 'g', -1, 64))
	case json.Number:
		b.WriteString(string(x))
	case int, int64, *big.Int:
		fmt.Fprint(b, x)
	case []byte:
		fmt.Fprintf(b, "b%q", x)
	default:
		if depth >= renderMaxDepth {
			b.WriteString("...")
			return
		}
		if d, ok := asDict(v); ok {
			b.WriteByte('{')
			i := 0
			if d.pd != nil {
				for _, e := range *d.pd {
					if i > 0 {
						b.WriteString(", ")
					}
					if i == renderMaxItems {
						b.WriteString("...")
						break
					}
					renderInto(b, e.Key, depth+1)
					b.WriteString(": ")
					renderInto(b, e.Value, depth+1)
					i++
				}
			} else {
				keys := make([]string, 0, len(d.jm))
				for k := range d.jm {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					if i > 0 {
						b.WriteString(", ")
					}
					if i == renderMaxItems {
						b.WriteString("...")
						break
					}
					b.WriteString(strconv.Quote(k))
					b.WriteString(": ")
					renderInto(b, d.jm[k], depth+1)
					i++
				}
			}
			b.WriteByte('}')
			return
		}
		if items, ok := asSequence(v); ok {
			open, close := "[", "]"
			if _, isTuple := v.(*types.Tuple); isTuple {
				open, close = "(", ")"
			}
			b.WriteString(open)
			for i, it := range items {
				if i > 0 {
					b.WriteString(", ")
				}
				if i == renderMaxItems {
					b.WriteString("...")
					break
				}
				renderInto(b, it, depth+1)
			}
			b.WriteString(close)
			return
		}
		b.WriteString("<" + typeName(v) + ">")
	}
}
