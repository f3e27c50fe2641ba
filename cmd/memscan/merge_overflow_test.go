package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/merge"
)

// TestMergeOneBadSummary: among 100 summaries, one claiming 2^63−1 reserved bytes used to end the whole merge
// (exit 2, the sum over ranks overflowing); it is past what one rank can hold, so that file alone fails, named
// with its field, and the other 99 are merged (exit 3), their sum exact.
func TestMergeOneBadSummary(t *testing.T) {
	dir := t.TempDir()
	var want int64
	for r := range 100 {
		res := int64(r+1) << 30
		if r == 42 {
			res = math.MaxInt64
		} else {
			want += res
		}
		f, err := os.Create(filepath.Join(dir, fmt.Sprintf("rank%d.summary.msgpack", r)))
		if err != nil {
			t.Fatal(err)
		}
		s := &merge.RankSummary{Kind: merge.SummaryKind, Version: merge.SummaryVersion, Rank: r, Iteration: 1, Stage: -1,
			File: fmt.Sprintf("rank%d_memory_snapshot.pickle", r), ReservedBytes: res}
		if err := merge.WriteSummary(f, s); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	code, stdout, stderr := runCLI(t, "merge", "--no-files", "--format", "json", "--stages", "4", dir)
	if code != exitPartial {
		t.Fatalf("exit %d, want %d; stderr %s", code, exitPartial, stderr)
	}
	bad := filepath.Join(dir, "rank42.summary.msgpack") + ": rank summary: reserved_bytes: 9223372036854775807: a rank's byte count must be 0 to"
	if !strings.Contains(stderr, bad) || !strings.Contains(stderr, "1 of 100 files or folders could not be read") {
		t.Errorf("stderr %q lacks %q", stderr, bad)
	}
	var c merge.CrossRank
	if err := json.Unmarshal([]byte(stdout), &c); err != nil {
		t.Fatal(err)
	}
	if c.Ranks != 99 || c.Reserved.Sum != want || c.RankSet.MissingRanks != 1 || c.RankSet.Missing[0].First != 42 {
		t.Errorf("ranks %d, reserved sum %d (want %d), missing %+v", c.Ranks, c.Reserved.Sum, want, c.RankSet.Missing)
	}
}
