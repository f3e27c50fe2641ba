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
// Exit status: 0 ok; 1 usage error; 2 no input could be analyzed; 3 some inputs failed (the rest were analyzed);
// 4 the results could not be written; 130 interrupted by SIGINT, 143 by SIGTERM.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/memscan/memscan/internal/atomicfile"
	"github.com/memscan/memscan/internal/suggest"
	"github.com/memscan/memscan/internal/units"
)

// Exit codes shared by every subcommand; an interrupted command exits with 128 + the signal's number.
const (
	exitOK          = 0
	exitUsage       = 1
	exitFailed      = 2
	exitPartial     = 3
	exitWriteFailed = 4
	exitInterrupted = 130 // SIGINT; SIGTERM gives 143
)

// Exit statuses every command documents besides its own.
var (
	writeFailedDoc = exitDoc{exitWriteFailed, "the results could not be written (a full disk, a folder that vanished); nothing partial is left under a final name"}
	interruptedDoc = exitDoc{exitInterrupted, "interrupted by SIGINT (143: by SIGTERM); what was being written is removed"}
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
	ctx, stop := notifySignals(context.Background(), os.Stderr, os.Exit)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes memscan with args and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printUsage(stdout)
		return exitUsage
	}
	switch args[0] {
	case "-h", "--help":
		printUsage(stdout)
		return exitOK
	case "help":
		return exitCode(ctx, runHelp(ctx, args[1:], stdout, stderr), stderr)
	case "--version":
		args = append([]string{"version"}, args[1:]...)
	}
	c, err := lookupCommand(args[0])
	if err != nil {
		return exitCode(ctx, err, stderr)
	}
	return exitCode(ctx, c.run(ctx, args[1:], stdout, stderr), stderr)
}

// lookupCommand finds the command name; an unknown one is a usage error that offers the closest names.
func lookupCommand(name string) (command, error) {
	names := []string{"help"}
	for _, c := range commands() {
		if c.name == name {
			return c, nil
		}
		names = append(names, c.name)
	}
	if strings.HasPrefix(name, "-") {
		return command{}, usageErrorf("%s is not a command: flags go after the command, as in memscan COMMAND [flags] (see memscan --help)", name)
	}
	return command{}, usageErrorf("unknown command %q%s (see memscan --help)", name, suggest.Hint(name, names, suggest.Quoted))
}

// runHelp is `memscan help [COMMAND]`: the overview, or the help of one command as COMMAND --help prints it.
func runHelp(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	switch {
	case len(args) == 0:
		printUsage(stdout)
		return nil
	case len(args) > 1:
		return usageErrorf("help: want one command, got %d arguments (memscan help COMMAND)", len(args))
	case args[0] == "help":
		printUsage(stdout)
		return nil
	}
	c, err := lookupCommand(args[0])
	if err != nil {
		return err
	}
	return c.run(ctx, []string{"--help"}, stdout, stderr)
}

// exitCode prints err and returns the exit status it means: an interruption's (128 + the signal), a usage
// error's, a write failure's, or the code the command chose.
func exitCode(ctx context.Context, err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var sig *interrupted
	if errors.As(context.Cause(ctx), &sig) {
		fmt.Fprintf(stderr, "memscan: %v\n", sig)
		return sig.exitCode()
	}
	var ee *exitError
	code := exitFailed
	if errors.As(err, &ee) {
		code = ee.code
		if ee.err == nil || code == exitOK {
			return code
		}
	}
	var we *atomicfile.Error
	if code != exitUsage && errors.As(err, &we) {
		code = exitWriteFailed
	}
	// Errors name files, and a file name may hold what a terminal acts on (an ESC): shown escaped.
	fmt.Fprintf(stderr, "memscan: %s\n", units.Terminal(err.Error()))
	return code
}

func printUsage(w io.Writer) {
	var b strings.Builder
	b.WriteString("memscan — where did the GPU memory go, and will the next configuration fit?\n\n")
	b.WriteString("Usage: memscan COMMAND [flags] [args]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(&b, "  %-10s %s\n", c.name, c.summary)
	}
	b.WriteString("\nRun 'memscan help COMMAND' (or 'memscan COMMAND --help') for the flags of a command;\n'memscan --version' prints the version.\n")
	b.WriteString("\nExit status: 0 ok; 1 usage error; 2 no input could be analyzed; 3 some inputs failed; 4 the results\n")
	b.WriteString("could not be written; 130 interrupted (143 by SIGTERM).\n")
	io.WriteString(w, b.String())
}

var versionHelp = helpDoc{
	usage:       []string{"memscan version", "memscan --version"},
	description: "Print the version of memscan.",
	examples:    []string{"memscan version"},
	exits: []exitDoc{
		{exitOK, "the version was printed"},
		{exitUsage, "usage error (a flag or an argument was given)"},
	},
}

func runVersion(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c := newCmdLine("version", versionHelp, stderr)
	if helped, err := c.parse(args, stdout); helped || err != nil {
		return err
	}
	if c.NArg() > 0 {
		return usageErrorf("version: unexpected argument %q", c.Arg(0))
	}
	fmt.Fprintf(stdout, "memscan %s\n", version)
	return nil
}
