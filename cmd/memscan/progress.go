package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/term"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/internal/units"
)

// progressEvery is how often the progress line is redrawn while no stage changes: often enough to see the bytes
// move, rarely enough to cost nothing.
const progressEvery = 200 * time.Millisecond

// progressWidth bounds the progress line where stderr is no terminal (--progress always into a file), which
// does not wrap: wide enough for any file name people give.
const progressWidth = 240

// progressBarCells is the width of the bar inside the line.
const progressBarCells = 20

// progress is the status line memscan analyze keeps on stderr while it reads and analyzes: the bytes read of all
// inputs against their total size (the decoders count them as they read, so one large file moves too), the files
// done, and the stage the latest input reached. It is redrawn every progressEvery and at every change of stage,
// never from the decoders' loops; messages printed meanwhile go above it.
type progress struct {
	w     io.Writer
	width int
	// read is the decoders' counter (analyze.Options.Read).
	read atomic.Int64

	mu    sync.Mutex
	total int64 // bytes of all inputs
	files int
	done  int
	// file and stage are where the latest input to move on is: "rank0.pickle", "trace replay".
	file, stage string
	start       time.Time
	drawn       int // width of the line on screen; 0 when none is
	stop        chan struct{}
	stopped     chan struct{}
}

// newProgress returns the progress line of an analysis on stderr, or nil when none is shown: with --quiet or
// --progress never, and with --progress auto unless stderr is a terminal.
func newProgress(flags *analyzeFlags, stderr io.Writer) *progress {
	if flags.quiet || flags.progress == "never" {
		return nil
	}
	f, ok := stderr.(*os.File)
	tty := ok && term.IsTerminal(int(f.Fd()))
	if !tty && flags.progress == "auto" {
		return nil
	}
	p := &progress{w: stderr, width: progressWidth}
	if tty {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 20 {
			p.width = w
		}
	}
	return p
}

// begin starts the line for files, whose sizes make the total; with no file there is nothing to show.
func (p *progress) begin(files []string) {
	if len(files) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.files, p.start = len(files), time.Now()
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			p.total += fi.Size()
		}
	}
	p.stop, p.stopped = make(chan struct{}), make(chan struct{})
	go p.tick()
	p.draw()
}

func (p *progress) tick() {
	defer close(p.stopped)
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.mu.Lock()
			p.draw()
			p.mu.Unlock()
		}
	}
}

// reached notes that file reached stage s.
func (p *progress) reached(file string, s analyze.Stage) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.file, p.stage = filepath.Base(file), string(s)
	p.draw()
}

// fileDone notes that one more file was analyzed (or failed).
func (p *progress) fileDone() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	p.draw()
}

// printf prints a message line above the progress line.
func (p *progress) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	fmt.Fprintf(p.w, format, args...)
	p.draw()
}

// above runs print, which writes whole lines on stdout or stderr, with the progress line taken off the screen and
// drawn again after it; without a progress line (p nil) it only runs print.
func (p *progress) above(print func()) {
	if p == nil {
		print()
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	print()
	p.draw()
}

// end removes the line; nothing is drawn after it.
func (p *progress) end() {
	if p.stop != nil {
		close(p.stop)
		<-p.stopped
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	p.files = 0 // draw nothing more
}

// draw redraws the line over the one on screen; p.mu is held.
func (p *progress) draw() {
	if p.files <= 0 { // not begun, or ended
		return
	}
	line := p.line(time.Since(p.start))
	n := len([]rune(line))
	fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", max(p.drawn-n, 0)))
	p.drawn = n
}

// clear blanks the line on screen; p.mu is held.
func (p *progress) clear() {
	if p.drawn > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.drawn))
		p.drawn = 0
	}
}

// line is the text of the progress line after elapsed, e.g.
// "analyzing 1/4 files [=====>              ]  27 %  1.2 GiB / 4.4 GiB  0:42  rank3.pickle: trace replay", at most
// p.width-1 wide (a full line would wrap on some terminals): a long file name loses its start first.
func (p *progress) line(elapsed time.Duration) string {
	var b strings.Builder
	b.WriteString("analyzing")
	if p.files > 1 {
		fmt.Fprintf(&b, " %d/%d files", p.done, p.files)
	}
	if p.total > 0 {
		read := min(max(p.read.Load(), 0), p.total)
		filled := int(read * progressBarCells / p.total)
		bar := strings.Repeat("=", filled)
		if filled < progressBarCells {
			bar += ">" + strings.Repeat(" ", progressBarCells-filled-1)
		}
		fmt.Fprintf(&b, " [%s] %3d %%  %s / %s", bar, read*100/p.total, units.Bytes(read), units.Bytes(p.total))
	}
	s := int(elapsed.Seconds())
	fmt.Fprintf(&b, "  %d:%02d", s/60, s%60)
	room := p.width - 1 - len([]rune(b.String()))
	if p.stage != "" && room > len(p.stage)+len("  …: ") {
		name := []rune(p.file)
		if keep := room - len(p.stage) - len("  : "); len(name) > keep {
			name = append([]rune("…"), name[len(name)-keep+1:]...)
		}
		b.WriteString("  " + string(name) + ": " + p.stage)
	}
	if r := []rune(b.String()); len(r) > p.width-1 {
		return string(r[:p.width-2]) + "…"
	}
	return b.String()
}
