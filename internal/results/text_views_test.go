package results

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/report"
)

// TestTrainingLogPeakPlaces checks that the allocated and reserved peaks each name where they happened, with
// their sizes. In the Megatron fixture allocated peaks on rank 0 at iteration 2 ("max allocated:
// 2623.57861328125" MB = 2 751 021 568 bytes = 2.56 GiB) while reserved peaks on rank 1 at iteration 2
// ("max cached: 2700.00" MB = 2 831 155 200 bytes = 2.64 GiB).
func TestTrainingLogPeakPlaces(t *testing.T) {
	ctx := context.Background()
	in, err := load.DecodeFile(ctx, filepath.Join("..", "..", "trainlog", "testdata", "megatron.log"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := analyze.AnalyzeLog(ctx, in, analyze.RuntimeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lg := r.Part.(*report.LogReport).Log; lg.PeakAllocatedBytes != 2_751_021_568 || lg.PeakReservedBytes != 2_831_155_200 {
		t.Errorf("peaks %d allocated, %d reserved; want 2751021568 and 2831155200", lg.PeakAllocatedBytes, lg.PeakReservedBytes)
	}
	var buf bytes.Buffer
	if err := WriteText(&buf, &report.Run{Inputs: []*report.Report{r}}, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	const want = "peak allocated 2.6 GiB (rank 0, iteration 2), peak reserved 2.6 GiB (rank 1, iteration 2)\n"
	if !strings.Contains(buf.String(), want) {
		t.Errorf("the peak line does not read %q:\n%s", want, buf.String())
	}
}
