package main

import (
	"fmt"
	"io"
	"time"

	"github.com/memscan/memscan/internal/results"
)

// writeRun writes one run directory of a command (results.WriteRun); a latest that cannot be updated is a
// warning on stderr.
func writeRun(root, name string, stderr io.Writer, fill func(dir string) error) (string, error) {
	dir, latestErr, err := results.WriteRun(root, name, time.Now(), fill)
	if latestErr != nil {
		fmt.Fprintf(stderr, "memscan: warning: %v\n", latestErr)
	}
	return dir, err
}
