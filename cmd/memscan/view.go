package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/categorize"
	"github.com/memscan/memscan/results"
)

const viewHelp = `Usage: memscan view [--http ADDR] FILE|RUNDIR

Serve memscan's interactive page from a local HTTP server and print its address. For a snapshot FILE it
analyzes the file and sends each device's timeline when the page asks for it, with no size limit: use it for
traces too large to embed in index.html. A trace of more than 8 million events stays on the server, which sends
each zoom's per-pixel extremes and each hovered moment's live blocks as the page asks. For a run directory
(what memscan analyze wrote) it serves the directory: its index.html, README.md, PNGs and reports. Stop it with
Ctrl-C.

In the page: drag across the timeline to zoom, double-click to reset, hover for the moment and the largest live
blocks with their stacks, click to pin them; the tables sort by a click on a header and filter as you type.

Flags:
%s
Exit status: 0 stopped; 1 usage error; 2 the input could not be analyzed or the address not listened on.
`

func runView(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("view", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	addr := fs.String("http", "localhost:8080", "address to listen on, host:port (port 0 picks a free one)")
	rules := fs.String("rules", "", "category rule file (YAML or JSON) that extends or overrides the built-in rules")
	help := fs.BoolP("help", "h", false, "show this help")
	if err := fs.Parse(args); err != nil {
		return usageErrorf("view: %v (see memscan view --help)", err)
	}
	if *help {
		fmt.Fprintf(stdout, viewHelp, fs.FlagUsages())
		return nil
	}
	if fs.NArg() != 1 {
		return usageErrorf("view: want one FILE or RUNDIR, got %d (see memscan view --help)", fs.NArg())
	}
	target := fs.Arg(0)
	handler, what, err := viewHandler(ctx, target, *rules)
	if err != nil {
		return &exitError{code: exitFailed, err: fmt.Errorf("view: %w", err)}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return &exitError{code: exitFailed, err: fmt.Errorf("view: %w", err)}
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stderr, "memscan view: serving %s at http://%s/ (Ctrl-C to stop)\n", what, ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return &exitError{code: exitFailed, err: fmt.Errorf("view: %w", err)}
	case <-ctx.Done():
	}
	shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shut); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("view: stopping the server: %w", err)
	}
	return nil
}

// viewHandler serves a run directory as files, or the live page of a snapshot file after analyzing it.
func viewHandler(ctx context.Context, target, rules string) (http.Handler, string, error) {
	info, err := os.Stat(target)
	if err != nil {
		return nil, "", err
	}
	if info.IsDir() {
		if _, err := os.Stat(filepath.Join(target, results.FileHTML)); err != nil {
			return nil, "", fmt.Errorf("%s has no %s: give a run directory of memscan analyze, or a snapshot file", target, results.FileHTML)
		}
		return http.FileServer(http.Dir(target)), "run directory " + target, nil
	}
	opts := analyze.Options{}
	if rules != "" {
		if opts.Rules, err = categorize.LoadFile(rules, categorize.Default()); err != nil {
			return nil, "", err
		}
	}
	rep, err := analyze.AnalyzeFile(ctx, target, opts)
	if err != nil {
		return nil, "", err
	}
	run := &analyze.Run{Version: analyze.ReportVersion, Tool: "memscan " + version, Inputs: []*analyze.Report{rep}}
	h, err := results.PageHandler(run)
	if err != nil {
		return nil, "", err
	}
	return h, "the analysis of " + target, nil
}
