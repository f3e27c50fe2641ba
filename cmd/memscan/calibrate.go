package main

import (
	"context"
	"errors"
	"io"
)

// runCalibrate is replaced by the calibrate work.
func runCalibrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return &exitError{code: exitUsage, err: errors.New("calibrate: not built yet")}
}
