package load_test

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/memscan/memscan/load"
)

// TestDecodeFilesParallelMatchesSequential decodes the same files with one worker and with several: the results
// must be identical and in input order.
func TestDecodeFilesParallelMatchesSequential(t *testing.T) {
	var paths []string
	for i := 0; i < 6; i++ {
		paths = append(paths,
			filepath.Join("..", "tracer", "testdata", "small_rank0.json"),
			filepath.Join("..", "tracer", "testdata", "run_r1_small.json"),
			filepath.Join("..", "tracer", "testdata", "missing.json"))
	}
	seq := load.DecodeFiles(context.Background(), paths, 1)
	for _, jobs := range []int{2, 4, 16} {
		par := load.DecodeFiles(context.Background(), paths, jobs)
		if len(par) != len(seq) {
			t.Fatalf("jobs=%d: %d results, want %d", jobs, len(par), len(seq))
		}
		for i := range seq {
			if par[i].Path != paths[i] {
				t.Errorf("jobs=%d: result %d is %s, want %s", jobs, i, par[i].Path, paths[i])
			}
			if (seq[i].Err == nil) != (par[i].Err == nil) {
				t.Errorf("jobs=%d: %s: err %v vs %v", jobs, paths[i], seq[i].Err, par[i].Err)
			}
			if !reflect.DeepEqual(seq[i].Input, par[i].Input) {
				t.Errorf("jobs=%d: %s decodes differently in parallel", jobs, paths[i])
			}
		}
	}
	if seq[1].Input == nil || seq[1].Input.Tracer.Rank != 1 || seq[2].Err == nil {
		t.Errorf("rank from _r1_ = %+v, missing file err = %v", seq[1].Input, seq[2].Err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, d := range load.DecodeFiles(ctx, paths[:3], 2) {
		if !errors.Is(d.Err, context.Canceled) {
			t.Errorf("%s: err = %v after cancel", d.Path, d.Err)
		}
	}
}
