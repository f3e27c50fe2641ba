package snapshot

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestJSONTotalLimit checks the whole-file bound with a small limit: a file over it is refused with its offset,
// not read to the end.
func TestJSONTotalLimit(t *testing.T) {
	doc := `{"cuda:0": {"peak_memory_mb": 1, "tensors": [` + strings.Repeat(`{"size_bytes": 1048576, "phase": "p"},`, 2000) + `{"size_bytes": 1}]}}`
	s := newJSONStream(context.Background(), "big.json", strings.NewReader(doc))
	s.lim.maxTotal = 4096
	if _, err := s.token(""); err != nil {
		t.Fatal(err)
	}
	k, err := s.nextKey("")
	if err != nil {
		t.Fatal(err)
	}
	_, err = decodeTracerRest(s, *k)
	var de *Error
	if !errors.As(err, &de) || !strings.Contains(de.Msg, "larger than") || de.Offset > 4097 {
		t.Errorf("err = %v, want the file-size limit near byte 4096", err)
	}
}

func TestParseTracerFrame(t *testing.T) {
	tests := []struct {
		in   string
		want Frame
		code string
	}{
		{"  File \"/a/b.py\", line 12, in f\n    x = 1\n", Frame{Filename: "/a/b.py", Line: 12, Name: "f"}, "x = 1"},
		{"  File \"/a/b.py\", line 3, in <module>\n", Frame{Filename: "/a/b.py", Line: 3, Name: "<module>"}, ""},
		{"  File \"/odd\", line x\", line 7, in g\n", Frame{Filename: "/odd\", line x", Line: 7, Name: "g"}, ""},
		{"garbage frame", Frame{Name: "garbage frame"}, ""},
		{"  File \"/a.py\", line -1, in f\n", Frame{Name: "File \"/a.py\", line -1, in f"}, ""},
	}
	for _, tc := range tests {
		got, code := parseTracerFrame(tc.in)
		if got != tc.want || code != tc.code {
			t.Errorf("parseTracerFrame(%q) = %+v %q, want %+v %q", tc.in, got, code, tc.want, tc.code)
		}
	}
}
