package results

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/memscan/memscan/merge"
)

// TestWriteCrossRankText merges eight ranks in two pipeline stages (rank r reserves r+1 GiB) and checks the text
// report's sections and the numbers they must carry.
func TestWriteCrossRankText(t *testing.T) {
	m := merge.New(merge.Options{Stages: 2, World: 8})
	for r := range 8 {
		res := int64(r+1) << 30
		m.Add(&merge.RankSummary{Kind: merge.SummaryKind, Version: merge.SummaryVersion, Rank: r, Iteration: 1, Stage: -1,
			File: fmt.Sprintf("rank%d_memory_snapshot.pickle", r), ReservedBytes: res, AllocatedBytes: res / 2, PeakBytes: res / 2})
	}
	var text bytes.Buffer
	if err := WriteCrossRankText(&text, m.Result(), 0); err != nil {
		t.Fatal(err)
	}
	// min 1 GiB, max 8 GiB at rank 7, sum 36 GiB.
	for _, want := range []string{"Cross-rank memory report: 8 ranks", "Per pipeline stage:", "Per rank:", "1.0 GiB", "8.0 GiB", "36.0 GiB"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
}
