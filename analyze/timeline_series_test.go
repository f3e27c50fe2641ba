package analyze

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/snapshot"
)

// TestTimelineSeriesReservedContinuous checks the replayed series of the bundled example around its peak: at every
// sampled point the segments hold at least the live bytes, and reserved memory only drops where the trace frees
// a segment. A gap in the drawn reserved line after the peak was a drawing fault; this pins that the data has none.
func TestTimelineSeriesReservedContinuous(t *testing.T) {
	ctx := context.Background()
	in, err := load.DecodeFile(ctx, filepath.Join("..", "testdata", "example", "rank0_memory_snapshot.pickle"))
	if err != nil {
		t.Fatal(err)
	}
	for _, maxPoints := range []int{0, 200} { // the default, and heavy downsampling
		r, err := Analyze(ctx, in, Options{MaxTimelinePoints: maxPoints})
		if err != nil {
			t.Fatal(err)
		}
		sp := partOf[*report.SnapshotReport](t, r)
		if len(sp.Timeline) == 0 || r.Peak == nil {
			t.Fatal("the example has a trace: want a timeline and a peak")
		}
		s := sp.Timeline[0]
		trace := in.Snapshot.DeviceTraces[s.Device]
		peakAt := -1
		for i, idx := range s.Index {
			if s.Reserved[i] < s.Allocated[i] {
				t.Errorf("max %d: point %d (event %d): reserved %d below allocated %d", maxPoints, i, idx, s.Reserved[i], s.Allocated[i])
			}
			if idx == r.Peak.EventIndex {
				peakAt = i
			}
			if i > 0 && s.Reserved[i] < s.Reserved[i-1] && !segmentFreedBetween(trace, s.Index[i-1], idx) {
				t.Errorf("max %d: reserved drops from %d to %d between events %d and %d with no segment freed", maxPoints, s.Reserved[i-1], s.Reserved[i], s.Index[i-1], idx)
			}
		}
		if peakAt < 0 || s.Allocated[peakAt] != r.Peak.Bytes {
			t.Errorf("max %d: the peak (event %d, %d bytes) is not a sampled point", maxPoints, r.Peak.EventIndex, r.Peak.Bytes)
		}
	}
}

func segmentFreedBetween(trace []snapshot.TraceEntry, from, to int) bool {
	for j := from + 1; j <= to && j < len(trace); j++ {
		if trace[j].Action == snapshot.ActionSegmentFree || trace[j].Action == snapshot.ActionSegmentUnmap {
			return true
		}
	}
	return false
}
