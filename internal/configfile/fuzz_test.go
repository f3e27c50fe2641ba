package configfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
)

// FuzzParse: no document makes Parse or Decode panic or hang, every failure is an *Error, and a JSON document
// accepted is valid JSON holding no duplicate key, which decodes to what encoding/json decodes from it.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"version": 1, "on": true, "inner": {"scale": 2.5}, "list": [{"count": 1}], "notes": {"k": "v"}, "any": [1, "x", null]}`,
		"version: 1\nlist:\n  - &b {count: 5, scale: 1.5}\n  - {<<: *b, count: 6}\n  - *b\nname: 2024\n",
		"a: &a [1, 1, 1]\nb: &b [*a, *a, *a]\nany: [*b, *b]\n",
		`{"version": 1.5}`, "version: .inf\n", "---\nversion: 1\n---\n", `{"on": true, "on": false}`, "\uFEFF{\"size\": 4}",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	lim := Limits{MaxBytes: 1 << 16, MaxDepth: 16, MaxItems: 256, MaxValues: 4096}
	f.Fuzz(func(t *testing.T, data []byte, yaml bool) {
		doc, err := Parse("fuzz", data, yaml, lim)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T: %v", err, err)
			}
			return
		}
		var s sample
		err = doc.Decode(&s)
		if yaml {
			return
		}
		body := bytes.TrimPrefix(data, bom)
		if !json.Valid(body) {
			t.Fatalf("accepted invalid JSON %q", data)
		}
		var ref sample
		if err == nil {
			if rerr := json.Unmarshal(body, &ref); rerr == nil && !sameSample(s, ref) {
				t.Fatalf("decoded %+v, encoding/json %+v", s, ref)
			}
		}
	})
}

// sameSample compares what both decoders fill the same way (the any field's numbers differ in type).
func sameSample(a, b sample) bool {
	a.Any, b.Any = nil, nil
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}
