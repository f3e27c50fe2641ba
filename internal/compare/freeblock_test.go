package compare_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/internal/compare"
	"github.com/memscan/memscan/internal/pipeline"
	"github.com/memscan/memscan/internal/realsnap"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/report"
	"github.com/memscan/memscan/snapshot"
)

// totalRows indexes a diff's allocator totals by name.
func totalRows(d compare.Diff) map[string]compare.Delta {
	m := map[string]compare.Delta{}
	for _, r := range d.Totals {
		m[r.Name] = r
	}
	return m
}

// checkTotal fails unless the named row is before → after with the matching delta.
func checkTotal(t *testing.T, rows map[string]compare.Delta, name string, before, after int64) {
	t.Helper()
	r, ok := rows[name]
	if !ok || r.Before != before || r.After != after || r.Delta != after-before {
		t.Errorf("%s: %d → %d (Δ %d), want %d → %d (Δ %d)", name, r.Before, r.After, r.Delta, before, after, after-before)
	}
}

// TestCompareFreeTotals: every allocator total of the diff is the baseline's before and the other input's after,
// each with its own value, so a swapped or shared pair of fields shows.
func TestCompareFreeTotals(t *testing.T) {
	snap := func(name string, tot report.Totals) compare.Input {
		return compare.Input{Report: &report.Report{Header: report.Header{File: name, Format: "pickle-v4"}, Part: &report.SnapshotReport{Totals: tot}}}
	}
	b := snap("before.pickle", report.Totals{ReservedBytes: 1000, AllocatedBytes: 600, RequestedBytes: 590, ActiveBytes: 650,
		InactiveBytes: 350, InternalFreeBytes: 10, ExternalFreeBytes: 400, LargestFreeBlockBytes: 300, Segments: 3, Blocks: 9})
	a := snap("after.pickle", report.Totals{ReservedBytes: 2000, AllocatedBytes: 700, RequestedBytes: 680, ActiveBytes: 720,
		InactiveBytes: 1280, InternalFreeBytes: 20, ExternalFreeBytes: 1300, LargestFreeBlockBytes: 900, Segments: 5, Blocks: 11})
	c, err := compare.Compare("memscan test", b, []compare.Input{a})
	if err != nil {
		t.Fatal(err)
	}
	rows := totalRows(c.Diffs[0])
	for _, w := range []struct {
		name          string
		before, after int64
	}{
		{"reserved_bytes", 1000, 2000}, {compare.AllocatedBasis, 600, 700}, {"requested_bytes", 590, 680}, {"active_bytes", 650, 720},
		{"inactive_bytes", 350, 1280}, {"internal_free_bytes", 10, 20}, {"external_free_bytes", 400, 1300},
		{"largest_free_block_bytes", 300, 900}, {"segments", 3, 5}, {"blocks", 9, 11},
	} {
		checkTotal(t, rows, w.name, w.before, w.after)
	}
}

// segsumRun is a run of runs.json with PyTorch's own totals of its dumped snapshot (torch.cuda._memory_viz segsum).
type segsumRun struct {
	Name   string `json:"name"`
	Segsum *struct {
		Segments int   `json:"segments"`
		Reserved int64 `json:"reserved"`
		FreeInt  int64 `json:"free_int"`
		FreeExt  int64 `json:"free_ext"`
	} `json:"segsum"`
}

// TestCompareRealFreeBlocks compares the H200 Llama run with its variable-length twin, whose cache fragments:
// reserved, segments and the internal and external free bytes on each side are PyTorch's own totals (runs.json),
// and the largest free block on each side is the largest inactive block of that snapshot, found here from the
// decoded blocks.
func TestCompareRealFreeBlocks(t *testing.T) {
	var runs []segsumRun
	dir := realsnap.GPURuns(t, &runs)
	ctx := context.Background()
	names := []string{"llama1b-bf16-b4-s2048-snap", "llama1b-varlen-b4-snap"}
	var ins []compare.Input
	var largest []int64
	var sums []segsumRun
	for _, name := range names {
		for _, r := range runs {
			if r.Name == name && r.Segsum != nil {
				sums = append(sums, r)
			}
		}
		in, err := load.DecodeFile(ctx, filepath.Join(dir, name+".pickle.gz"))
		if err != nil {
			t.Fatal(err)
		}
		rep, err := analyze.Analyze(ctx, in, analyze.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var big int64
		for _, seg := range in.Snapshot.Segments {
			for _, b := range seg.Blocks {
				if b.State == snapshot.BlockInactive {
					big = max(big, b.Size)
				}
			}
		}
		largest = append(largest, big)
		ins = append(ins, compare.Input{Report: rep, Segments: pipeline.SegmentIDs(in.Snapshot)})
	}
	if len(sums) != 2 {
		t.Fatalf("runs.json has segsum for %d of %v", len(sums), names)
	}
	if largest[0] == largest[1] {
		t.Fatalf("both snapshots' largest free block is %d: the pair cannot show a swap", largest[0])
	}
	c, err := compare.Compare("memscan test", ins[0], ins[1:])
	if err != nil {
		t.Fatal(err)
	}
	rows := totalRows(c.Diffs[0])
	b, a := sums[0].Segsum, sums[1].Segsum
	checkTotal(t, rows, "reserved_bytes", b.Reserved, a.Reserved)
	checkTotal(t, rows, "segments", int64(b.Segments), int64(a.Segments))
	checkTotal(t, rows, "internal_free_bytes", b.FreeInt, a.FreeInt)
	checkTotal(t, rows, "external_free_bytes", b.FreeExt, a.FreeExt)
	checkTotal(t, rows, "largest_free_block_bytes", largest[0], largest[1])
}
