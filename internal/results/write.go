package results

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

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
	if err := WriteHTML(dir, run); err != nil {
		return out, err
	}
	out.Files = append(out.Files, FileHTML)
	return out, nil
}

// WriteFile creates path and fills it through a buffer, reporting the first write or close error with the path.
func WriteFile(path string, fill func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	if err := fill(bw); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func mkdirAll(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", dir, err)
	}
	return nil
}

// WriteFileAtomic writes path through a temporary file in the same directory, so a failed or interrupted write
// (memscan export) never leaves a truncated file under the final name.
func WriteFileAtomic(path string, fill func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	bw := bufio.NewWriterSize(tmp, 1<<16)
	if err := fill(bw); err != nil {
		tmp.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil { // CreateTemp makes 0600; exports are ordinary files
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
