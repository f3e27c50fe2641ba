package main

import (
	"context"
	"errors"
	"io"
)

// runMerge is replaced by the merge work.
func runMerge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return &exitError{code: exitUsage, err: errors.New("merge: not built yet")}
}
