package results

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/memscan/memscan/internal/atomicfile"
	"github.com/memscan/memscan/report"
)

// Files written into every run directory.
const (
	FileTextReport = "analysis_report.txt"
	FileReadme     = "README.md"
	FileSummary    = "summary.json"
	FileMsgpack    = "report.msgpack"
)

// WriteOptions tune Write.
type WriteOptions struct {
	Top   int  // allocations listed in the text report; 0 lists all in the report
	Plots bool // draw the PNG charts
	Jobs  int  // charts drawn at once
}

// Written says what Write produced.
type Written struct {
	Files  []string // paths relative to the run directory, in write order
	Charts ChartSet
	// ChartErr lists charts that could not be drawn; the other files were still written.
	ChartErr error
}

// Write renders run into dir (normally a fresh directory from NewRunDir): analysis_report.txt, summary.json and
// report.msgpack while the charts are drawn, then README.md and index.html, which embed exactly the charts that
// exist. Files lists the charts first, then analysis_report.txt, README.md, summary.json, report.msgpack and
// index.html.
func Write(ctx context.Context, dir string, run *report.Run, opts WriteOptions) (*Written, error) {
	out := &Written{}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The page's timelines need no chart: they are encoded while the charts are drawn, and the page itself, which
	// embeds the charts, is all that is left once they are.
	type encoded struct {
		set *pageTimelineSet
		err error
	}
	timelines := make(chan encoded, 1)
	go func() {
		set, err := newPageTimelineSet(run, pageOptions{})
		timelines <- encoded{set, err}
	}()
	defer func() {
		if timelines != nil {
			<-timelines // no goroutine outlives the call
		}
	}()
	drawn := make(chan error, 1)
	go func() {
		if !opts.Plots {
			drawn <- nil
			return
		}
		set, err := WritePlots(ctx, dir, run, opts.Jobs)
		if ctxErr := ctx.Err(); ctxErr != nil {
			drawn <- ctxErr
			return
		}
		if isWriteFailure(err) {
			drawn <- err // a chart that could not be written (a full disk) fails the run like any file
			return
		}
		out.Charts, out.ChartErr = set, err
		drawn <- nil
	}()
	text := []struct {
		name  string
		write func(io.Writer) error
	}{
		{FileTextReport, func(w io.Writer) error { return WriteText(w, run, TextOptions{Top: opts.Top}) }},
		{FileSummary, func(w io.Writer) error { return WriteJSON(w, run) }},
		{FileMsgpack, func(w io.Writer) error { return WriteMsgpack(w, run) }},
	}
	// The reports are independent too: each is written on its own (a long trace's summary.json alone takes a
	// while), and the first error in their order is returned.
	errs := make([]error, len(text))
	var wg sync.WaitGroup
	for i, s := range text {
		wg.Go(func() {
			if errs[i] = ctx.Err(); errs[i] == nil {
				errs[i] = WriteFile(filepath.Join(dir, s.name), s.write)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			cancel()
			<-drawn
			return out, err
		}
	}
	if err := <-drawn; err != nil {
		return out, err
	}
	for _, fs := range out.Charts.Inputs {
		for _, f := range fs {
			out.Files = append(out.Files, f.Path)
		}
	}
	for _, f := range out.Charts.Cross {
		out.Files = append(out.Files, f.Path)
	}
	readme := func(w io.Writer) error {
		return WriteMarkdown(w, run, MarkdownOptions{InputPlots: out.Charts.Inputs, CrossPlots: out.Charts.Cross})
	}
	if err := WriteFile(filepath.Join(dir, FileReadme), readme); err != nil {
		return out, err
	}
	out.Files = append(out.Files, FileTextReport, FileReadme, FileSummary, FileMsgpack)
	// The page embeds the charts, so it comes last.
	tls := <-timelines
	timelines = nil
	if tls.err != nil {
		return out, tls.err
	}
	if err := writeHTML(dir, run, tls.set); err != nil {
		return out, err
	}
	out.Files = append(out.Files, FileHTML)
	return out, nil
}

// WriteFile writes path atomically (package atomicfile): through a temporary file renamed over path when
// complete, so a full disk or a kill never leaves a truncated report, summary or chart under the final name.
// Every file memscan writes goes through it; a failure is an *atomicfile.Error naming the path.
func WriteFile(path string, fill func(io.Writer) error) error { return atomicfile.Write(path, fill) }

func mkdirAll(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return &atomicfile.Error{Path: dir, Err: err}
	}
	return nil
}

// WriteFileAtomic is WriteFile (every writer is atomic now), kept for the callers that name it so.
func WriteFileAtomic(path string, fill func(io.Writer) error) error {
	return atomicfile.Write(path, fill)
}
