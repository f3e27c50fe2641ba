package configfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/inputfile"
)

// defaultLimits suit a hand-written config: 1 MiB, 32 levels, 65,536 elements per list, 1 M values.
var defaultLimits = Limits{MaxBytes: 1 << 20, MaxDepth: 32, MaxItems: 1 << 16, MaxValues: 1 << 20}

type inner struct {
	Count int     `json:"count"`
	Scale float64 `json:"scale"`
	Tags  []string
}

type sample struct {
	Version int               `json:"version"`
	Name    string            `json:"name"`
	On      bool              `json:"on"`
	Inner   inner             `json:"inner"`
	Opt     *inner            `json:"opt,omitempty"`
	List    []inner           `json:"list"`
	Notes   map[string]string `json:"notes"`
	Any     any               `json:"any"`
	Small   int8              `json:"small"`
	Size    uint32            `json:"size"`
}

func decode(name, text string, lim Limits) (sample, error) {
	s := sample{Name: "default", Inner: inner{Count: 7}}
	doc, err := Parse(name, []byte(text), IsYAML(name, []byte(text)), lim)
	if err != nil {
		return s, err
	}
	return s, doc.Decode(&s)
}

// TestDecodeValues: what both syntaxes write lands in the struct; what they leave out keeps its default.
func TestDecodeValues(t *testing.T) {
	for _, name := range []string{"c.json", "c.yaml"} {
		text := `{"version": 1, "on": true, "inner": {"scale": 2.5, "Tags": ["a"]}, "opt": {"count": 3},
			"list": [{"count": 1}, {"count": 2}], "notes": {"k": "v"}, "any": {"x": [1, "y", null]}, "size": 4000000000}`
		s, err := decode(name, text, defaultLimits)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if s.Version != 1 || !s.On || s.Name != "default" || s.Inner.Count != 7 || s.Inner.Scale != 2.5 || s.Inner.Tags[0] != "a" ||
			s.Opt == nil || s.Opt.Count != 3 || len(s.List) != 2 || s.List[1].Count != 2 || s.Notes["k"] != "v" || s.Size != 4000000000 {
			t.Errorf("%s: %+v", name, s)
		}
		if m, ok := s.Any.(map[string]any); !ok || len(m["x"].([]any)) != 3 {
			t.Errorf("%s: any = %#v", name, s.Any)
		}
	}
	// YAML niceties: merge keys (explicit keys win), aliases, a name that reads as a number, null leaves the default.
	s, err := decode("c.yaml", "base: &b {count: 5, scale: 1.5}\n", defaultLimits)
	if err == nil || !strings.Contains(err.Error(), "c.yaml:1:1: base: unknown key") {
		t.Errorf("unknown top-level key: %v", err)
	}
	s, err = decode("c.yaml", "list:\n  - &b {count: 5, scale: 1.5}\n  - {<<: *b, count: 6}\n  - *b\nname: 2024\nversion: null\n", defaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.List) != 3 || s.List[1].Count != 6 || s.List[1].Scale != 1.5 || s.List[2].Count != 5 || s.Name != "2024" || s.Version != 0 {
		t.Errorf("yaml: %+v", s)
	}
}

// TestStrict: every error names the file, the line and column as written and the key path.
func TestStrict(t *testing.T) {
	tight := Limits{MaxBytes: 1 << 10, MaxDepth: 4, MaxItems: 3, MaxValues: 40}
	few := Limits{MaxBytes: 1 << 10, MaxDepth: 8, MaxItems: 8, MaxValues: 40}
	for _, tc := range []struct {
		name, file, text, want string
		lim                    *Limits
	}{
		{"trailing JSON", "c.json", `{"version": 1} {"version": 2}`, "c.json:1:16: trailing data after the top-level value", nil},
		{"trailing garbage", "c.json", "{\"version\": 1}\n]", "c.json:2:1: trailing data", nil},
		{"second YAML document", "c.yaml", "version: 1\n---\nversion: 2\n", "c.yaml:2:1: a second YAML document", nil},
		{"duplicate JSON key", "c.json", "{\"on\": true,\n  \"on\": false}", `c.json:2:3: duplicate key "on" (first at line 1)`, nil},
		{"duplicate YAML key", "c.yaml", "inner:\n  count: 1\n  count: 2\n", `c.yaml:3:3: duplicate key "count" (first at line 2)`, nil},
		{"fraction into an integer", "c.yaml", "version: 1.5\n", "c.yaml:1:10: version: expected an integer, got 1.5", nil},
		{"0.9 is not 0", "c.json", `{"version": 0.9}`, "c.json:1:13: version: expected an integer, got 0.9", nil},
		{"1.0 is not 1", "c.yaml", "version: 1.0\n", "version: expected an integer, got 1.0", nil},
		{"exponent into an integer", "c.json", `{"version": 1e3}`, "version: expected an integer, got 1e3", nil},
		{"integer out of range", "c.json", `{"version": 99999999999999999999}`, "version: 99999999999999999999 is out of range", nil},
		{"int8 out of range", "c.json", `{"small": 300}`, "small: 300 is out of range", nil},
		{"negative into unsigned", "c.json", `{"size": -1}`, "size: -1: must not be negative", nil},
		{"float out of range", "c.json", `{"inner": {"scale": 1e400}}`, "c.json:1:21: inner.scale: 1e400 is out of range", nil},
		{"YAML infinity", "c.yaml", "inner:\n  scale: .inf\n", "c.yaml:2:10: inner.scale: .inf is not a finite number", nil},
		{"YAML NaN", "c.yaml", "inner: {scale: .nan}\n", "inner.scale: .nan is not a finite number", nil},
		{"string for a number", "c.json", `{"inner": {"count": "7"}}`, `inner.count: expected an integer, got the string "7"`, nil},
		{"quoted YAML number", "c.yaml", "version: \"1\"\n", `version: expected an integer, got the string "1"`, nil},
		{"number for a string in JSON", "c.json", `{"name": 5}`, "name: expected a string, got 5", nil},
		{"object for a list", "c.yaml", "list: {count: 1}\n", "c.yaml:1:7: list: expected an array, got an object", nil},
		{"misspelt key", "c.yaml", "inner:\n  scael: 2\n", `c.yaml:2:3: inner.scael: unknown key (did you mean "scale"?)`, nil},
		{"abbreviated key", "c.json", `{"vers": 1}`, `vers: unknown key (did you mean "version"?)`, nil},
		{"unknown key", "c.json", `{"zzz": 1}`, "zzz: unknown key (known keys: any, inner, list, name, notes, on, opt, size, small, version)", nil},
		{"keys match exactly", "c.json", `{"Version": 1}`, `Version: unknown key (did you mean "version"?)`, nil},
		{"too deep", "c.json", `{"any": [[[[1]]]]}`, "nested more than 4 levels deep", &tight},
		{"too many elements", "c.json", `{"list": [{}, {}, {}, {}]}`, "more than 3 elements in one list", &tight},
		{"too many keys", "c.yaml", "notes: {a: 1, b: 2, c: 3, d: 4}\n", "more than 3 keys in one object", &tight},
		{"alias bomb", "c.yaml", "a: &a [1, 1, 1]\nb: &b [*a, *a, *a]\nc: &c [*b, *b, *b]\nany: [*c, *c, *c]\n", "more than 40 values in one file", &few},
		{"too large", "c.json", `{"name": "` + strings.Repeat("x", 2000) + `"}`, "is larger than the 1.0 KiB (1024 bytes) limit", &tight},
		{"ESC in a string", "c.json", `{"name": "x\u001b[2J"}`, `c.json:1:10: name: "x\x1b[2J" holds a control character (U+001B)`, nil},
		{"C1 control in a key", "c.yaml", "notes: {\"a\\u009bb\": x}\n", `"a\u009bb" holds a control character (U+009B)`, nil},
		{"empty", "c.json", " \n", "c.json: empty file", nil},
		{"only a comment", "c.yaml", "# nothing\n", "c.yaml: empty file", nil},
		{"invalid JSON", "c.json", "{\n  \"on\": tru\n}", "c.json:2:12: invalid JSON", nil},
		{"unterminated JSON", "c.json", `{"list": [`, "c.json:1:11: invalid JSON: the file ends inside a value", nil},
		{"invalid YAML", "c.yaml", "list: [1\n", "c.yaml: invalid YAML", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lim := defaultLimits
			if tc.lim != nil {
				lim = *tc.lim
			}
			_, err := decode(tc.file, tc.text, lim)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestIsYAML(t *testing.T) {
	for _, tc := range []struct {
		path, data string
		want       bool
	}{
		{"a.yaml", "{}", true}, {"a.YML", "{}", true}, {"a.json", "{\"x\": 1}", false}, {"a.json", "x: 1", true},
		{"a", " {\"x\": 1}", false}, {"a", "[1]", false}, {"a", "\uFEFF{}", false}, {"a", "x: 1", true}, {"a", "", true}, {"a.cfg", "- 1", true},
	} {
		if got := IsYAML(tc.path, []byte(tc.data)); got != tc.want {
			t.Errorf("IsYAML(%q, %q) = %v, want %v", tc.path, tc.data, got, tc.want)
		}
	}
}

// TestBOM: a UTF-8 byte order mark is accepted in JSON and YAML, and the format is still told by the content.
func TestBOM(t *testing.T) {
	for _, text := range []string{"\uFEFF{\"version\": 1}", "\uFEFFversion: 1\n"} {
		s, err := decode("c", text, defaultLimits)
		if err != nil || s.Version != 1 {
			t.Errorf("%q: %+v, %v", text, s, err)
		}
	}
}

// TestReadFile: only regular files are read, within the size limit, whatever their metadata says.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// A sparse 3 GB file: refused from its size, before a byte of it is read.
	if err := f.Truncate(3 << 30); err != nil {
		t.Skip("no sparse files here:", err)
	}
	f.Close()
	_, err = ReadFile(big, "a test config", defaultLimits)
	if !errors.Is(err, inputfile.ErrTooLarge) || !strings.Contains(err.Error(), big+": 3.0 GiB (3221225472 bytes) is larger than the 1.0 MiB (1048576 bytes) limit for a test config") {
		t.Errorf("sparse 3 GB file: %v", err)
	}
	_, err = ReadFile(dir, "a test config", defaultLimits)
	if !errors.Is(err, inputfile.ErrNotRegular) || !strings.Contains(err.Error(), dir+": a directory, not a regular file") {
		t.Errorf("directory: %v", err)
	}
	_, err = ReadFile(filepath.Join(dir, "missing.json"), "a test config", defaultLimits)
	if !errors.Is(err, os.ErrNotExist) || err.Error() != filepath.Join(dir, "missing.json")+": no such file or directory" {
		t.Errorf("missing file: %v", err)
	}
}
