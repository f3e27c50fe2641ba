package analyze_test

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/report"
)

// Example decodes the bundled example snapshot and prints its allocator totals and the top of its peak. The
// totals satisfy reserved = requested + internal free + external free, as PyTorch's _memory_viz stats reports.
func Example() {
	ctx := context.Background()
	rep, err := analyze.AnalyzeFile(ctx, filepath.Join("..", "testdata", "example", "rank0_memory_snapshot.pickle"), analyze.Options{TopN: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("format:", rep.Format, rep.TorchFormat)
	// The allocator totals are in the part only a snapshot has.
	if s, ok := rep.Part.(*report.SnapshotReport); ok {
		fmt.Println("reserved:", s.ReservedBytes)
		fmt.Println("requested + internal + external:", s.RequestedBytes+s.InternalFreeBytes+s.ExternalFreeBytes)
	}
	fmt.Println("peak:", units.Bytes(rep.Peak.Bytes), "led by", rep.Peak.Categories[0].Name)
	for _, a := range rep.Top {
		fmt.Println(units.Bytes(a.Size), a.Category, a.Site)
	}
	// Output:
	// format: pickle-v4 2.10+
	// reserved: 1264582656
	// requested + internal + external: 1264582656
	// peak: 1.2 GiB led by Loss/Logits
	// 62.5 MiB Parameters/Weights /home/alice/gpt-small/model.py:92:__init__
	// 62.5 MiB Gradient /home/alice/gpt-small/train.py:58:train_step
	// 62.5 MiB Optimizer State /home/alice/gpt-small/train.py:66:main
}
