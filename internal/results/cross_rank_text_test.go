package results

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/merge"
	"github.com/memscan/memscan/internal/units"
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

// TestWriteCrossRankTextUnknown merges eight identical summaries whose paths name no iteration and that have no
// pipeline stage: the per-rank table prints "-" for what is unknown, never −1, and the statistics agree.
func TestWriteCrossRankTextUnknown(t *testing.T) {
	const res = int64(40194015232) // one snapshot's reserved bytes, eight times
	m := merge.New(merge.Options{})
	for r := range 8 {
		m.Add(&merge.RankSummary{Kind: merge.SummaryKind, Version: merge.SummaryVersion, Rank: r, Iteration: -1, Stage: -1,
			File: fmt.Sprintf("copy%d.pickle", r), ReservedBytes: res, AllocatedBytes: res / 4, PeakBytes: res / 2})
	}
	var text bytes.Buffer
	if err := WriteCrossRankText(&text, m.Result(), 0); err != nil {
		t.Fatal(err)
	}
	out := text.String()
	if strings.Contains(out, "-1") {
		t.Errorf("unknown iteration or stage printed as -1:\n%s", out)
	}
	if !strings.Contains(out, "imbalance (max/median − 1): reserved 0.0%, peak 0.0%") {
		t.Errorf("identical ranks must have no imbalance:\n%s", out)
	}
	// reserved row: min, median, p90 and max are all the one value.
	r := units.Bytes(res)
	if !strings.Contains(out, "reserved  "+strings.Repeat(r+"  ", 4)) {
		t.Errorf("reserved row does not repeat %s four times:\n%s", r, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasSuffix(line, "copy3.pickle") && !strings.HasPrefix(strings.Fields(line)[1], "-") {
			t.Errorf("rank 3's iteration is unknown, want -: %q", line)
		}
	}
}
