package main

import (
	"context"
	"errors"
	"io"
)

// runCompare is replaced by the compare work.
func runCompare(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return &exitError{code: exitUsage, err: errors.New("compare: not built yet")}
}
