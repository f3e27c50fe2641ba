package analyze

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
)

// TestStagesAndBytesRead: AnalyzeFile tells the stages of one input in the order they run, each once where it
// runs once, and counts the file's bytes as it decodes them, so a progress display can follow one large file.
func TestStagesAndBytesRead(t *testing.T) {
	cases := []struct {
		file string
		want []Stage
	}{
		// A snapshot with a trace: the allocator model replays it before the trace replay and reports after the
		// categories.
		{filepath.Join("..", "testdata", "example", "rank0_memory_snapshot.pickle"),
			[]Stage{StageDecode, StageTotals, StageAllocator, StageTrace, StageCategories, StageAllocator}},
		{filepath.Join("..", "tracer", "testdata", "small_rank0.json"), []Stage{StageDecode, StageRuntime}},
		{filepath.Join("..", "trainlog", "testdata", "megatron.log"), []Stage{StageDecode, StageRuntime}},
	}
	for _, tc := range cases {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			var got []Stage
			var read atomic.Int64
			_, err := AnalyzeFile(context.Background(), tc.file, Options{Read: &read, Stage: func(s Stage) { got = append(got, s) }})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("stages %q, want %q", got, tc.want)
			}
			fi, err := os.Stat(tc.file)
			if err != nil {
				t.Fatal(err)
			}
			if read.Load() != fi.Size() {
				t.Errorf("read %d bytes, the file has %d", read.Load(), fi.Size())
			}
		})
	}
}
