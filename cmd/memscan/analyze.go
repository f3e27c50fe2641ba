package main

import (
	"context"
	"errors"
	"io"
)

// runAnalyze is replaced by the analyze work.
func runAnalyze(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return &exitError{code: exitUsage, err: errors.New("analyze: not built yet")}
}
