package results

import (
	"context"
	"io"
	"os"
	"path/filepath"

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

// Write renders run into dir (normally a fresh directory from NewRunDir): the charts first, so README.md can
// embed exactly the ones that exist, then analysis_report.txt, README.md, summary.json and report.msgpack.
func Write(ctx context.Context, dir string, run *report.Run, opts WriteOptions) (*Written, error) {
	out := &Written{}
	if opts.Plots {
		set, err := WritePlots(ctx, dir, run, opts.Jobs)
		if ctxErr := ctx.Err(); ctxErr != nil {
			return out, ctxErr
		}
		if isWriteFailure(err) {
			return out, err // a chart that could not be written (a full disk) fails the run like any file
		}
		out.Charts, out.ChartErr = set, err
		for _, fs := range set.Inputs {
			for _, f := range fs {
				out.Files = append(out.Files, f.Path)
			}
		}
		for _, f := range set.Cross {
			out.Files = append(out.Files, f.Path)
		}
	}
	steps := []struct {
		name  string
		write func(io.Writer) error
	}{
		{FileTextReport, func(w io.Writer) error { return WriteText(w, run, TextOptions{Top: opts.Top}) }},
		{FileReadme, func(w io.Writer) error {
			return WriteMarkdown(w, run, MarkdownOptions{InputPlots: out.Charts.Inputs, CrossPlots: out.Charts.Cross})
		}},
		{FileSummary, func(w io.Writer) error { return WriteJSON(w, run) }},
		{FileMsgpack, func(w io.Writer) error { return WriteMsgpack(w, run) }},
	}
	for _, s := range steps {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		if err := WriteFile(filepath.Join(dir, s.name), s.write); err != nil {
			return out, err
		}
		out.Files = append(out.Files, s.name)
	}
	// The page embeds the charts, so it comes last.
	if err := WriteHTML(dir, run); err != nil {
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
