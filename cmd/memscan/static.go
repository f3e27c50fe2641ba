package main

import (
	"context"
	"errors"
	"io"
)

// runStatic is replaced by the static work.
func runStatic(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return &exitError{code: exitUsage, err: errors.New("static: not built yet")}
}
