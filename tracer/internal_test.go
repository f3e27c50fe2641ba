package tracer

import (
	"testing"

	"github.com/memscan/memscan/snapshot"
)

func TestParseTracerFrame(t *testing.T) {
	tests := []struct {
		in   string
		want snapshot.Frame
		code string
	}{
		{"  File \"/a/b.py\", line 12, in f\n    x = 1\n", snapshot.Frame{Filename: "/a/b.py", Line: 12, Name: "f"}, "x = 1"},
		{"  File \"/a/b.py\", line 3, in <module>\n", snapshot.Frame{Filename: "/a/b.py", Line: 3, Name: "<module>"}, ""},
		{"  File \"/odd\", line x\", line 7, in g\n", snapshot.Frame{Filename: "/odd\", line x", Line: 7, Name: "g"}, ""},
		{"garbage frame", snapshot.Frame{Name: "garbage frame"}, ""},
		{"  File \"/a.py\", line -1, in f\n", snapshot.Frame{Name: "File \"/a.py\", line -1, in f"}, ""},
	}
	for _, tc := range tests {
		got, code := parseTracerFrame(tc.in)
		if got != tc.want || code != tc.code {
			t.Errorf("parseTracerFrame(%q) = %+v %q, want %+v %q", tc.in, got, code, tc.want, tc.code)
		}
	}
}
