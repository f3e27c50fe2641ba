package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/internal/detect"
	"github.com/memscan/memscan/internal/replay"
	"github.com/memscan/memscan/load"
)

// TestTrainingLeakFile: a --training --leak file decodes, and the leak detector names the logits' site and their
// size (512 MiB) as the growth per iteration; without --leak it finds nothing.
func TestTrainingLeakFile(t *testing.T) {
	for _, leak := range []bool{true, false} {
		path := filepath.Join(t.TempDir(), "train.pickle")
		args := []string{"--training", "4", "-o", path}
		if leak {
			args = append(args, "--leak")
		}
		var out bytes.Buffer
		if err := run(args, &out, &out); err != nil {
			t.Fatal(err)
		}
		in, err := load.DecodeFile(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		s := in.Snapshot
		r, err := replay.ReplayDevice(context.Background(), s, 0)
		if err != nil {
			t.Fatal(err)
		}
		f, ok := detect.Leak(detect.Prepare(r, categorize.NewCategorizer(nil)))
		if ok != leak {
			t.Fatalf("leak=%v: finding %v %+v", leak, ok, f)
		}
		if leak && (f.Value != 512<<20 || !strings.Contains(f.Evidence, "model.py:85:forward")) {
			t.Errorf("leak finding %+v, want 512 MiB per iteration at model.py:85:forward", f)
		}
	}
}
