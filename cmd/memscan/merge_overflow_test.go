package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/memscan/memscan/internal/merge"
)

// TestMergeOverflowCLI: summaries whose reserved bytes add up past 2^63−1 fail the merge (exit 2) with the file
// and field named, instead of printing a wrapped total.
func TestMergeOverflowCLI(t *testing.T) {
	dir := t.TempDir()
	for r := range 2 {
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("rank%d.summary.msgpack", r)))
		if err != nil {
			t.Fatal(err)
		}
		s := &merge.RankSummary{Kind: merge.SummaryKind, Version: merge.SummaryVersion, Rank: r, Stage: -1,
			File: fmt.Sprintf("rank%d_memory_snapshot.pickle", r), ReservedBytes: 1 << 62}
		if err := merge.WriteSummary(f, s); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	checkCLIErrors(t, []cliErrorCase{{"reserved past 2^63", []string{"merge", "--no-files", "--jobs", "1", dir}, exitFailed,
		filepath.Join(dir, "rank1.summary.msgpack") + ": rank1_memory_snapshot.pickle: reserved_bytes: the sum over ranks passes 9223372036854775807 bytes"}})
}
