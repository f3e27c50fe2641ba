package results

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/load"
)

// TestTrainingLogPeakPlaces checks that the allocated and reserved peaks each name where they happened. In the
// Megatron fixture allocated peaks on rank 0 (max allocated 2623.58 MB at iteration 2) while reserved peaks on
// rank 1 (max cached 2700 MB at iteration 2).
func TestTrainingLogPeakPlaces(t *testing.T) {
	ctx := context.Background()
	in, err := load.DecodeFile(ctx, filepath.Join("..", "trainlog", "testdata", "megatron.log"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := analyze.AnalyzeLog(ctx, in, analyze.RuntimeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, &analyze.Run{Inputs: []*analyze.Report{r}}, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`peak allocated [0-9.]+ GiB \(rank 0, iteration 2\), peak reserved [0-9.]+ GiB \(rank 1, iteration 2\)\n`)
	if !re.MatchString(buf.String()) {
		t.Errorf("the peak line does not place each peak:\n%s", buf.String())
	}
}
