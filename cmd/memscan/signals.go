package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// interrupted is the cause of a context cancelled by a signal: SIGINT (Ctrl-C) or SIGTERM, which Slurm,
// Kubernetes and timeout(1) send before they kill.
type interrupted struct{ sig syscall.Signal }

func (e *interrupted) Error() string { return "interrupted by " + signalName(e.sig) }

// exitCode is the shell's convention for a process ended by a signal: 128 + its number (130 SIGINT, 143 SIGTERM).
func (e *interrupted) exitCode() int { return 128 + int(e.sig) }

func signalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return s.String()
}

// interruptGrace is how long a command may take to stop after the first signal: reads and writes check the
// context between blocks, so this is only for a call the kernel does not interrupt (a stalled network file
// system). A second signal ends the process at once.
const interruptGrace = 10 * time.Second

// notifySignals returns a context cancelled, with an *interrupted cause, by the first SIGINT or SIGTERM, and a
// function that stops listening. The command then stops at its next check, removes what it was writing and
// returns; if it has not returned after interruptGrace, or at a second signal, the process exits at once with the
// signal's exit status, leaving at most a staging directory that the next run removes.
func notifySignals(parent context.Context, stderr io.Writer, exit func(int)) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		var first *interrupted
		select {
		case s := <-ch:
			first = &interrupted{sig: s.(syscall.Signal)}
			cancel(first)
		case <-done:
			return
		}
		select {
		case s := <-ch:
			fmt.Fprintf(stderr, "memscan: %s again: stopping now\n", signalName(s.(syscall.Signal)))
		case <-time.After(interruptGrace):
			fmt.Fprintf(stderr, "memscan: %s: not stopped after %v; stopping now\n", first, interruptGrace)
		case <-done:
			return
		}
		exit(first.exitCode())
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(nil)
	}
}
