package main

import (
	"context"
	"errors"
	"io"
)

// runExport is replaced by the export work.
func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return &exitError{code: exitUsage, err: errors.New("export: not built yet")}
}
