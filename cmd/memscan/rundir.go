package main

import (
	"fmt"
	"io"
	"time"

	"github.com/memscan/memscan/results"
)

// writeRun writes one run directory of a command: fill writes the files into a staging directory, which is
// renamed into place only when fill succeeds (a failure, such as a full disk, leaves no half-written run for
// latest or a reader to find) and then made latest. A latest that cannot be updated is a warning: the run itself
// is complete.
func writeRun(root, name string, stderr io.Writer, fill func(dir string) error) (string, error) {
	stage, err := results.NewStagedRunDir(root, name, time.Now())
	if err != nil {
		return "", err
	}
	if err := fill(stage.Dir); err != nil {
		stage.Discard()
		return "", err
	}
	dir, err := stage.Commit()
	if err != nil {
		return "", err
	}
	if err := results.UpdateLatest(root, dir); err != nil {
		fmt.Fprintf(stderr, "memscan: warning: %v\n", err)
	}
	return dir, nil
}
