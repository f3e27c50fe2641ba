package results

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"runtime"

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
	Jobs  int  // reports, charts and page timelines written at once; 0: one per CPU
}

// Written says what Write produced.
type Written struct {
	Files  []string // paths relative to the run directory, in write order
	Charts ChartSet
	// ChartErr lists charts that could not be drawn; the other files were still written.
	ChartErr error
}

// Write renders run into dir (normally a fresh directory from NewRunDir): analysis_report.txt, summary.json,
// report.msgpack, the charts and the page's timelines as one pool of opts.Jobs tasks, then README.md and
// index.html, which embed exactly the charts that exist. Files lists the charts first, then analysis_report.txt,
// README.md, summary.json, report.msgpack and index.html.
func Write(ctx context.Context, dir string, run *report.Run, opts WriteOptions) (*Written, error) {
	out := &Written{}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Every piece is independent of the others: the page's timelines need no chart, the reports nothing but the
	// run. They share one pool of tasks, the costliest first (runTasks).
	rows := 0
	for _, p := range snapshotInputs(run) {
		rows += len(p.IterationTable)
		for _, tl := range p.Iterations {
			rows += len(tl.Iterations)
		}
	}
	text := []struct {
		name  string
		write func(io.Writer) error
		cost  float64 // microseconds: a long training loop's iteration rows take most of the reports' time
	}{
		{FileTextReport, func(w io.Writer) error { return WriteText(w, run, TextOptions{Top: opts.Top}) }, 5_000},
		{FileSummary, func(w io.Writer) error { return WriteJSON(w, run) }, 2_000 + 2.5*float64(rows)},
		{FileMsgpack, func(w io.Writer) error { return WriteMsgpack(w, run) }, 1_000 + 0.5*float64(rows)},
	}
	errs := make([]error, len(text))
	var tasks []task
	for i, s := range text {
		tasks = append(tasks, task{cost: s.cost, do: func() {
			if errs[i] = ctx.Err(); errs[i] == nil {
				errs[i] = WriteFile(filepath.Join(dir, s.name), s.write)
			}
			if errs[i] != nil {
				cancel() // a report that cannot be written fails the run: the charts left are not drawn
			}
		}})
	}
	enc, encode := timelineTasks(run)
	tasks = append(tasks, encode...)
	var charts *chartPlan
	if opts.Plots {
		var err error
		if charts, err = planCharts(dir, run); err != nil {
			return out, err
		}
		tasks = append(tasks, charts.tasks(ctx)...)
	}
	jobs := opts.Jobs
	if jobs < 1 {
		jobs = runtime.GOMAXPROCS(0)
	}
	runTasks(jobs, tasks)
	for _, err := range errs {
		if err != nil {
			return out, err
		}
	}
	if charts != nil {
		set, err := charts.result(ctx)
		if ctxErr := ctx.Err(); ctxErr != nil {
			return out, ctxErr
		}
		if isWriteFailure(err) {
			return out, err // a chart that could not be written (a full disk) fails the run like any file
		}
		out.Charts, out.ChartErr = set, err
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
	tls, err := pageTimelineSetOf(run, enc, pageOptions{})
	if err != nil {
		return out, err
	}
	if err := writeHTML(dir, run, tls); err != nil {
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
