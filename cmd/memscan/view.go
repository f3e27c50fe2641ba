package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/internal/pipeline"
)

var viewHelp = helpDoc{
	usage: []string{"memscan view [--http ADDR] [--rules FILE] FILE|RUNDIR"},
	description: `
Serve memscan's interactive page from a local HTTP server and print its address. For a snapshot FILE it
analyzes the file and sends each device's timeline when the page asks for it, with no size limit: use it for
traces too large to embed in index.html. A trace of more than 8 million events stays on the server, which sends
each zoom's per-pixel extremes and each hovered moment's live blocks as the page asks. For a run directory
(what memscan analyze wrote) it serves the directory: its index.html, README.md, PNGs and reports. Stop it with
Ctrl-C.

In the page: drag across the timeline to zoom, double-click to reset, hover for the moment and the largest live
blocks with their stacks, click to pin them; the tables sort by a click on a header and filter as you type.`,
	examples: []string{
		"memscan view rank0_memory_snapshot.pickle                 # then open the address it prints",
		"memscan view --http localhost:0 results/latest            # a run directory, on a free port",
	},
	exits: []exitDoc{
		{exitOK, "the server was stopped (Ctrl-C)"},
		{exitUsage, "usage error (bad flag, not one FILE or RUNDIR, unreadable rule file)"},
		{exitFailed, "the input could not be analyzed or the address not listened on"},
	},
}

func runView(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("view", viewHelp, stderr)
	var rules string
	addr := c.String("http", "localhost:8080", "address to listen on, host:port (port 0 picks a free one)")
	c.rulesFlag(&rules)
	if helped, err := c.parse(args, stdout); helped || err != nil {
		return err
	}
	if c.NArg() != 1 {
		return usageErrorf("view: want one FILE or RUNDIR, got %d (see memscan view --help)", c.NArg())
	}
	opts := analyze.Options{}
	var err error
	if opts.Rules, err = c.loadRules(rules); err != nil {
		return err
	}
	handler, what, err := pipeline.View(ctx, c.Arg(0), opts, "memscan "+version)
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
