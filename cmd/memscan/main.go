// Command memscan tells people who train large models where their GPU memory went and whether their next
// configuration will fit.
//
// Usage:
//
//	memscan analyze [flags] INPUT...     analyze snapshots, tracer JSON, memory timelines and training logs
//	memscan static --config FILE         predict memory for a model/training configuration
//	memscan gpus                         list the GPU catalogue
//	memscan calibrate --config CFG RUNTIME...  compare predictions with measurements
//	memscan compare BEFORE AFTER         diff two runs
//	memscan export --format F INPUT      write pprof, Perfetto, collapsed stacks, JSON or a sliced pickle
//	memscan merge SUMMARIES...|DIR       join per-rank summaries into one cross-rank report
//
// Exit status: 0 ok; 1 usage error; 2 no input could be analyzed; 3 some inputs failed (the rest were analyzed).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/spf13/pflag"
)

// Exit codes shared by every subcommand.
const (
	exitOK      = 0
	exitUsage   = 1
	exitFailed  = 2
	exitPartial = 3
)

// exitError carries an exit code with the error that caused it.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// parseFlags parses the arguments of the command fs is named after. With --help (help set) it prints usage and
// the flag defaults to stdout and reports helped: the command then returns err, which is nil.
func parseFlags(fs *pflag.FlagSet, args []string, help *bool, usage string, stdout io.Writer) (helped bool, err error) {
	if err := fs.Parse(args); err != nil {
		return false, usageErrorf("%s: %v (see memscan %s --help)", fs.Name(), err, fs.Name())
	}
	if !*help {
		return false, nil
	}
	fmt.Fprint(stdout, usage)
	fs.SetOutput(stdout)
	fs.PrintDefaults()
	return true, nil
}

// command is one subcommand; run gets the arguments after the subcommand name.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"analyze", "analyze snapshots, tracer JSON, memory timelines and training logs", runAnalyze},
		{"static", "predict training/inference memory per GPU from a config", runStatic},
		{"gpus", "list the GPU catalogue used by static", runGPUs},
		{"calibrate", "compare static predictions with runtime measurements", runCalibrate},
		{"compare", "diff two runs (snapshots, tracer JSON or run directories)", runCompare},
		{"export", "export to pprof, Perfetto, collapsed stacks, JSON or a sliced pickle", runExport},
		{"merge", "merge per-rank summaries into one cross-rank report", runMerge},
		{"view", "serve the interactive page of a snapshot or run directory on a local HTTP server", runView},
		{"version", "print the version", runVersion},
	}
}

const version = "0.1.0"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes memscan with args and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(stdout)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], stdout, stderr)
		return exitCode(err, stderr)
	}
	fmt.Fprintf(stderr, "memscan: unknown command %q (see memscan --help)\n", args[0])
	return exitUsage
}

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.code != exitOK {
			fmt.Fprintf(stderr, "memscan: %v\n", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "memscan: %v\n", err)
	return exitFailed
}

func printUsage(w io.Writer) {
	var b strings.Builder
	b.WriteString("memscan — where did the GPU memory go, and will the next configuration fit?\n\n")
	b.WriteString("Usage: memscan COMMAND [flags] [args]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-10s %s\n", c.name, c.summary)
	}
	b.WriteString("\nRun 'memscan COMMAND --help' for the flags of a command.\n")
	b.WriteString("\nExit status: 0 ok; 1 usage error; 2 no input could be analyzed; 3 some inputs failed.\n")
	io.WriteString(w, b.String())
}

func runVersion(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fmt.Fprintf(stdout, "memscan %s\n", version)
	return nil
}
