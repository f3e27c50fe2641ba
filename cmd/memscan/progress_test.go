package main

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/memscan/memscan/internal/units"
)

// TestProgressLine: the line shows the bytes read of the total with the bar and share they make, the files done
// when there are several, the time and the stage of the latest input; drawn, it is cut to the width.
func TestProgressLine(t *testing.T) {
	cases := []struct {
		width, files, done int
		total, read        int64
		file, stage        string
		want               string
	}{
		{100, 1, 0, 4 << 30, 1 << 30, "rank0.pickle", "decoding",
			"analyzing [=====>              ]  25 %  1.0 GiB / 4.0 GiB  1:02  rank0.pickle: decoding"},
		{100, 1, 0, 4 << 30, 4 << 30, "rank0.pickle", "trace replay",
			"analyzing [====================] 100 %  4.0 GiB / 4.0 GiB  1:02  rank0.pickle: trace replay"},
		{100, 4, 1, 1000, 0, "", "", "analyzing 1/4 files [>                   ]   0 %  0 B / 1000 B  1:02"},
		// A decoder past the size it was given (a file grown since) does not overflow the bar.
		{100, 1, 0, 1000, 1500, "", "", "analyzing [====================] 100 %  1000 B / 1000 B  1:02"},
		{100, 2, 0, 0, 0, "x.log", "analyzing", "analyzing 0/2 files  1:02  x.log: analyzing"},
		// Too narrow: the file name loses its start, then the stage goes, then the line is cut.
		{90, 1, 0, 4 << 30, 1 << 30, "rank0_memory_snapshot.pickle", "trace replay",
			"analyzing [=====>              ]  25 %  1.0 GiB / 4.0 GiB  1:02  …ot.pickle: trace replay"},
		{70, 1, 0, 4 << 30, 1 << 30, "rank0_memory_snapshot.pickle", "trace replay",
			"analyzing [=====>              ]  25 %  1.0 GiB / 4.0 GiB  1:02"},
		{40, 1, 0, 4 << 30, 1 << 30, "rank0.pickle", "decoding",
			"analyzing [=====>              ]  25 %…"},
	}
	for _, tc := range cases {
		p := &progress{width: tc.width, files: tc.files, done: tc.done, total: tc.total, file: tc.file, stage: tc.stage}
		p.read.Store(tc.read)
		got := p.line(62 * time.Second)
		if got != tc.want {
			t.Errorf("line\n%q\nwant\n%q", got, tc.want)
		}
		if n := len([]rune(got)); n > tc.width-1 {
			t.Errorf("line of %d characters on a terminal of %d", n, tc.width)
		}
	}
	var b strings.Builder
	p := &progress{w: &b, width: 100, files: 1, total: 100, start: time.Now()}
	p.draw()
	p.clear()
	line := p.line(0)
	if got, want := b.String(), "\r"+line+"\r"+strings.Repeat(" ", len(line))+"\r"; got != want {
		t.Errorf("drawn and cleared\n%q\nwant\n%q", got, want)
	}
}

// TestProgressFollowsOneFile: with --progress always one input shows its bytes against its size and each stage
// it reaches, and the line is gone before "wrote DIR".
func TestProgressFollowsOneFile(t *testing.T) {
	example := fixture(t, goldenFixtures["example"])
	fi, err := os.Stat(example)
	if err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "analyze", "--out", t.TempDir(), "--no-plots", "--progress", "always", example)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"/ " + units.Bytes(fi.Size()),
		"rank0_memory_snapshot.pickle: decoding",
		"rank0_memory_snapshot.pickle: totals",
		"rank0_memory_snapshot.pickle: trace replay",
		"rank0_memory_snapshot.pickle: categories",
		"100 %  " + units.Bytes(fi.Size()) + " / " + units.Bytes(fi.Size()),
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%q", want, stderr)
		}
	}
	// The last progress line is blanked (spaces between two carriage returns) before the next message.
	i := strings.LastIndex(stderr, "\r")
	if i < 0 || !strings.HasPrefix(stderr[i+1:], "wrote ") || strings.TrimLeft(stderr[strings.LastIndex(stderr[:i], "\r")+1:i], " ") != "" {
		t.Errorf("the progress line is not cleared before %q", stderr[i+1:])
	}
}
