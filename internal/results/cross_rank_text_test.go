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

// TestWriteCrossRankTextOutlierCount: the text says how many ranks are outliers, shows at most maxRows of them
// on stdout, and the file (maxRows 0) lists them all. Ranks 0-59 reserve 10 GiB, ranks 60-99 20 GiB: the median
// is 10 GiB and the 40 larger ranks are outliers, 100 % above it.
func TestWriteCrossRankTextOutlierCount(t *testing.T) {
	m := merge.New(merge.Options{})
	for r := range 100 {
		res := int64(10) << 30
		if r >= 60 {
			res *= 2
		}
		m.Add(&merge.RankSummary{Kind: merge.SummaryKind, Version: merge.SummaryVersion, Rank: r, Iteration: 1, Stage: -1,
			File: fmt.Sprintf("rank%d.pickle", r), ReservedBytes: res, PeakBytes: 1 << 30})
	}
	c := m.Result()
	for _, tc := range []struct{ maxRows, lines int }{{10, 10}, {0, 40}} {
		var b bytes.Buffer
		if err := WriteCrossRankText(&b, c, tc.maxRows); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !strings.Contains(out, "Outlier ranks by reserved: 40 of 100 ranks are more than 10% above the median") ||
			strings.Contains(out, "Outlier ranks by peak") {
			t.Errorf("maxRows %d:\n%s", tc.maxRows, out)
		}
		if shownNote := strings.Contains(out, "(the 10 largest shown; all in the report files)"); shownNote != (tc.maxRows > 0) {
			t.Errorf("maxRows %d: note of the rows not shown: %v", tc.maxRows, shownNote)
		}
		if n := strings.Count(out, "+100.0%"); n != tc.lines {
			t.Errorf("maxRows %d: %d outlier lines, want %d", tc.maxRows, n, tc.lines)
		}
	}
}
