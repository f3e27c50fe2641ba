package main

import (
	"context"
	"errors"
	"io"
)

// runGPUs is replaced by the gpus work.
func runGPUs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return &exitError{code: exitUsage, err: errors.New("gpus: not built yet")}
}
