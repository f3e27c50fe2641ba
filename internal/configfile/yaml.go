package configfile

import (
	"bytes"
	"errors"
	"io"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// yamlParser builds a Node tree from a YAML document, expanding aliases and merge keys within the budget.
type yamlParser struct {
	budget
}

func parseYAML(d *Doc, data []byte) (*Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: d.Name, Msg: "empty file (only comments or document markers)"}
		}
		return nil, &Error{File: d.Name, Msg: "invalid YAML", Err: err}
	}
	var second yaml.Node
	if err := dec.Decode(&second); err == nil {
		return nil, d.Errorf(&Node{Line: second.Line, Column: second.Column}, "", "a second YAML document; a config file holds one")
	} else if !errors.Is(err, io.EOF) {
		return nil, &Error{File: d.Name, Msg: "invalid YAML after the first document", Err: err}
	}
	p := &yamlParser{budget{d: d}}
	if len(doc.Content) == 0 {
		return nil, &Error{File: d.Name, Msg: "empty file"}
	}
	return p.node(doc.Content[0], 1)
}

func (p *yamlParser) node(y *yaml.Node, depth int) (*Node, error) {
	n := &Node{Line: y.Line, Column: y.Column}
	if err := p.value(n, depth); err != nil {
		return nil, err
	}
	switch y.Kind {
	case yaml.AliasNode:
		// An alias is its anchor's value again (counted again, so an alias bomb exhausts the budget).
		a, err := p.node(y.Alias, depth)
		if err != nil {
			return nil, err
		}
		return a, nil
	case yaml.MappingNode:
		n.Kind = Object
		if err := p.mapping(n, y, depth, map[string]*Node{}); err != nil {
			return nil, err
		}
	case yaml.SequenceNode:
		n.Kind = List
		for _, c := range y.Content {
			item, err := p.node(c, depth+1)
			if err != nil {
				return nil, err
			}
			n.Items = append(n.Items, item)
			if err := p.length(n, len(n.Items)); err != nil {
				return nil, err
			}
		}
	case yaml.ScalarNode:
		if err := p.scalar(n, y); err != nil {
			return nil, err
		}
	default:
		return nil, p.d.Errorf(n, "", "unexpected YAML node")
	}
	return n, nil
}

// mapping adds y's entries to n: explicit keys first (a duplicate is an error), then the entries of merge keys
// ("<<: *defaults") that no explicit key overrides.
func (p *yamlParser) mapping(n *Node, y *yaml.Node, depth int, seen map[string]*Node) error {
	var merges []*yaml.Node
	for i := 0; i+1 < len(y.Content); i += 2 {
		k, v := y.Content[i], y.Content[i+1]
		if k.Kind == yaml.ScalarNode && k.Value == "<<" && k.ShortTag() == "!!merge" {
			merges = append(merges, v)
			continue
		}
		if k.Kind != yaml.ScalarNode {
			return p.d.Errorf(&Node{Line: k.Line, Column: k.Column}, "", "a key must be a plain string, not a list or an object")
		}
		if first, dup := seen[k.Value]; dup {
			return p.d.Errorf(&Node{Line: k.Line, Column: k.Column}, "", "duplicate key %q (first at line %d)", k.Value, first.Line)
		}
		val, err := p.node(v, depth+1)
		if err != nil {
			return err
		}
		at := &Node{Line: k.Line, Column: k.Column}
		seen[k.Value] = at
		n.Keys, n.Values, n.keyAt = append(n.Keys, k.Value), append(n.Values, val), append(n.keyAt, at)
		if err := p.length(n, len(n.Keys)); err != nil {
			return err
		}
	}
	for _, m := range merges {
		sources := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			sources = m.Content
		}
		for _, s := range sources {
			src, err := p.node(s, depth)
			if err != nil {
				return err
			}
			if src.Kind != Object {
				return p.d.Errorf(src, "", "a merge key (<<) needs an object or a list of objects, got %s", src.Kind)
			}
			for i, k := range src.Keys {
				if _, ok := seen[k]; ok {
					continue
				}
				seen[k] = src.keyAt[i]
				n.Keys, n.Values, n.keyAt = append(n.Keys, k), append(n.Values, src.Values[i]), append(n.keyAt, src.keyAt[i])
			}
		}
	}
	return nil
}

func (p *yamlParser) scalar(n *Node, y *yaml.Node) error {
	n.yamlPlain = y.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0
	switch y.ShortTag() {
	case "!!null":
		n.Kind = Null
	case "!!bool":
		var b bool
		if err := y.Decode(&b); err != nil {
			return p.d.Errorf(n, "", "%v", err)
		}
		n.Kind, n.Text = Bool, strconv.FormatBool(b)
	case "!!int":
		n.Kind = Number
		var i int64
		if err := y.Decode(&i); err == nil {
			n.Text = strconv.FormatInt(i, 10)
			break
		}
		var u uint64
		if err := y.Decode(&u); err == nil {
			n.Text = strconv.FormatUint(u, 10)
			break
		}
		n.Text = y.Value // too large for 64 bits: the decoder says it is out of range
	case "!!float":
		n.Kind, n.Text, n.float = Number, y.Value, true
		if err := y.Decode(&n.yamlFloat); err != nil {
			return p.d.Errorf(n, "", "%v", err)
		}
	default: // !!str, and !!timestamp, !!binary read as their text
		n.Kind, n.Text = String, y.Value
	}
	return nil
}
