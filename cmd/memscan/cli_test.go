package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestFlagUsages(t *testing.T) {
	c := newCmdLine("x", helpDoc{}, &bytes.Buffer{})
	var s string
	var b bool
	var n int
	c.StringVar(&s, "name", "results", "a string")
	c.BoolVarP(&b, "quiet", "q", false, "a switch")
	c.IntVar(&n, "jobs", 4, "a number")
	c.IntVar(&n, "rank", -1, "may be negative")
	c.IntVar(&n, "zero", 0, "no default shown")
	c.describeDefault("jobs", "one per CPU")
	c.retire("silent", "quiet")
	want := `  -h, --help          show this help
      --jobs int      a number (default one per CPU)
      --name string   a string (default "results")
  -q, --quiet         a switch
      --rank int      may be negative (default -1)
      --zero int      no default shown
`
	if got := flagUsages(c.FlagSet); got != want {
		t.Errorf("flagUsages:\n%s\nwant:\n%s", got, want)
	}
}

func TestOrList(t *testing.T) {
	for in, want := range map[string]string{"": "", "a": "a", "a,b": "a or b", "a,b,c": "a, b or c"} {
		var values []string
		if in != "" {
			values = strings.Split(in, ",")
		}
		if got := orList(values); got != want {
			t.Errorf("orList(%q) = %q, want %q", values, got, want)
		}
	}
}
