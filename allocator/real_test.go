package allocator

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/realsnap"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/snapshot"
)

// gpuRun is the part of runs.json these tests read: PyTorch's own max_memory_reserved over the run and the
// reserved bytes of the dumped snapshot.
type gpuRun struct {
	Name          string `json:"name"`
	Snapshot      string `json:"snapshot"`
	PeakReserved  int64  `json:"peak_reserved"`
	PeakAllocated int64  `json:"peak_allocated"`
	Segsum        *struct {
		Reserved int64 `json:"reserved"`
		Segments int   `json:"segments"`
	} `json:"segsum"`
}

func loadRuns(t *testing.T) (string, []gpuRun) {
	t.Helper()
	var runs []gpuRun
	dir := realsnap.GPURuns(t, &runs)
	return dir, runs
}

func decode(t testing.TB, path string) *snapshot.Snapshot {
	t.Helper()
	in, err := load.DecodeFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if in.Snapshot == nil {
		t.Fatalf("%s: not a snapshot", path)
	}
	return in.Snapshot
}

// TestGPURunsBaseline replays every complete H200 trace under its recorded settings: the peak reserved must equal
// PyTorch's max_memory_reserved to the byte, and the model must create segments of the recorded sizes in the
// recorded order, placing every allocation at the recorded address.
func TestGPURunsBaseline(t *testing.T) {
	dir, runs := loadRuns(t)
	n := 0
	for _, run := range runs {
		if run.Snapshot == "" {
			continue
		}
		n++
		t.Run(run.Name, func(t *testing.T) {
			s := decode(t, filepath.Join(dir, run.Snapshot))
			sr, err := ReplaySnapshot(context.Background(), s, 0, nil, ReplayOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rec, base := sr.Recording, sr.Baseline
			if rec.Partial || base.Partial {
				t.Fatalf("complete trace replayed as partial: %s", base.PartialReason())
			}
			if rec.PeakReserved != run.PeakReserved {
				t.Errorf("recorded peak from segment events %d, PyTorch max_memory_reserved %d", rec.PeakReserved, run.PeakReserved)
			}
			if base.PeakReserved != run.PeakReserved {
				t.Errorf("baseline peak reserved %d, PyTorch %d (%+d)", base.PeakReserved, run.PeakReserved, base.PeakReserved-run.PeakReserved)
			}
			if run.Segsum != nil && base.FinalReserved != run.Segsum.Reserved {
				t.Errorf("final reserved %d, snapshot %d", base.FinalReserved, run.Segsum.Reserved)
			}
			if i := FirstSizeMismatch(rec.Created, base.Created); i >= 0 {
				t.Errorf("segment sizes differ first at creation %d of %d recorded / %d replayed", i, len(rec.Created), len(base.Created))
			}
			if base.FirstDivergence != -1 {
				t.Errorf("baseline reserved departs from the recording at event %d", base.FirstDivergence)
			}
			if base.PeakFragmentation.Allocated > run.PeakAllocated || base.PeakFragmentation.Reserved != base.PeakReserved {
				t.Errorf("fragmentation at the peak %+v: allocated above PyTorch's max_memory_allocated %d", base.PeakFragmentation, run.PeakAllocated)
			}
			if base.AddressMismatches != 0 {
				t.Errorf("%d allocations at another address, first at event %d", base.AddressMismatches, base.FirstAddressMismatch)
			}
			for _, o := range base.OOMs {
				if !o.Reproduced {
					t.Errorf("oom at event %d not reproduced", o.Index)
				}
			}
			if len(base.Failed) != 0 {
				t.Errorf("baseline failed %d allocations, first %+v", len(base.Failed), base.Failed[0])
			}
			checkFinalLayout(t, s, 0, sr)
			t.Logf("peak %d, %d segments, %d empty_cache, capacity %d (%s), frag at peak %+v", base.PeakReserved, len(base.Created), base.EmptyCacheCalls, base.Capacity, base.CapacitySource, base.PeakFragmentation)
		})
	}
	if n == 0 {
		t.Fatal("runs.json lists no snapshot runs")
	}
}

// TestRealSnapshots replays every device trace of the public snapshots. Most start after the process's first
// allocation: the final segments hold more than the trace's segment events add up to (manifest totals decide
// which), and then, and only then, the replay must say it is partial and by how many bytes. Every baseline must
// follow the recorded reserved memory and reach the recorded peak.
func TestRealSnapshots(t *testing.T) {
	dir, manifest := realsnap.Load(t)
	traced := 0
	for _, m := range manifest {
		t.Run(m.File, func(t *testing.T) {
			s := decode(t, filepath.Join(dir, m.File))
			var total int64
			for _, seg := range s.Segments {
				total += seg.TotalSize
			}
			if total != m.Segsum.Reserved {
				t.Fatalf("decoded reserved %d, PyTorch %d", total, m.Segsum.Reserved)
			}
			for dev, tr := range s.DeviceTraces {
				if len(tr) == 0 {
					continue
				}
				traced++
				var final int64
				for _, seg := range s.Segments {
					if seg.Device == dev {
						final += seg.TotalSize
					}
				}
				late := final - netSegmentBytes(tr)
				sr, err := ReplaySnapshot(context.Background(), s, dev, &Config{ExpandableSegments: true}, ReplayOptions{})
				if err != nil {
					t.Fatal(err)
				}
				base := sr.Baseline
				if late > 0 {
					want := "starts after " + units.Bytes(late) + " of segments were already reserved"
					if !base.Partial || !strings.Contains(base.PartialReason(), want) || !sr.WhatIf.Partial {
						t.Errorf("device %d: trace starts %d bytes in; partial %v %q", dev, late, base.Partial, base.PartialReason())
					}
				} else if base.Partial {
					t.Errorf("device %d: complete trace called partial: %s", dev, base.PartialReason())
				}
				if base.PeakReserved != sr.Recording.PeakReserved || base.FirstDivergence != -1 {
					t.Errorf("device %d: baseline peak %d, recorded %d, diverges at %d", dev, base.PeakReserved, sr.Recording.PeakReserved, base.FirstDivergence)
				}
				if i := FirstSizeMismatch(sr.Recording.Created, base.Created); i >= 0 {
					t.Errorf("device %d: segment sizes differ first at creation %d", dev, i)
				}
				if base.AddressMismatches != 0 {
					t.Errorf("device %d: %d allocations at another address, first at event %d", dev, base.AddressMismatches, base.FirstAddressMismatch)
				}
				for _, o := range base.OOMs {
					if !o.Reproduced {
						t.Errorf("device %d: oom at event %d not reproduced", dev, o.Index)
					}
				}
				checkFinalLayout(t, s, dev, sr)
			}
		})
	}
	if traced == 0 {
		t.Fatal("no real snapshot has a trace")
	}
}

// h200Capacity is the usable capacity of the H200 the runs were measured on, from the oom event of the 8B run
// (reserved then + device_free): the same GPU, driver and torch as every other run.
const h200Capacity = 149381316608

// TestGPURunsWhatIf checks what-ifs against what the issue reports was measured on the H200: the variable-length
// run reserves 61.6 GiB with expandable_segments:True (73.6 GiB by default), and a max_split_size setting makes
// that run reserve far more than the default does.
func TestGPURunsWhatIf(t *testing.T) {
	dir, runs := loadRuns(t)
	var varlen *gpuRun
	for i := range runs {
		if runs[i].Name == "llama1b-varlen-b4-snap" {
			varlen = &runs[i]
		}
	}
	if varlen == nil {
		t.Skip("runs.json has no llama1b-varlen-b4-snap")
	}
	s := decode(t, filepath.Join(dir, varlen.Snapshot))
	expandable, err := ParseConf("expandable_segments:True")
	if err != nil {
		t.Fatal(err)
	}
	sr, err := ReplaySnapshot(context.Background(), s, 0, &expandable, ReplayOptions{Capacity: h200Capacity})
	if err != nil {
		t.Fatal(err)
	}
	const measured = 61.6 * (1 << 30) // GiB, as the issue gives it (one decimal)
	if got := float64(sr.WhatIf.PeakReserved); got < measured*0.995 || got > measured*1.005 {
		t.Errorf("expandable what-if reserves %.2f GiB, measured 61.6 GiB", got/(1<<30))
	}
	if f := sr.WhatIf.PeakFragmentation; f.Free >= sr.Baseline.PeakFragmentation.Free/4 {
		t.Errorf("expandable segments should remove most of the %d free bytes at the peak; %d remain", sr.Baseline.PeakFragmentation.Free, f.Free)
	}
	split, err := ParseConf("max_split_size_mb:512")
	if err != nil {
		t.Fatal(err)
	}
	sr, err = ReplaySnapshot(context.Background(), s, 0, &split, ReplayOptions{Capacity: h200Capacity})
	if err != nil {
		t.Fatal(err)
	}
	if w := sr.WhatIf; w.PeakReserved <= sr.Baseline.PeakReserved*5/4 || w.PeakReserved > h200Capacity || len(w.Failed) != 0 {
		t.Errorf("max_split_size_mb:512 reserves %d (default %d, capacity %d, %d failed requests); want far more than the default, within the device",
			w.PeakReserved, sr.Baseline.PeakReserved, int64(h200Capacity), len(w.Failed))
	}
}

// checkFinalLayout replays the baseline again keeping the model, checks its structure, and compares its final
// memory with the snapshot's own segments: the same segments (mapped ranges) at the same addresses, cut into the
// same blocks, the same ones allocated.
func checkFinalLayout(t *testing.T, s *snapshot.Snapshot, dev int, sr *SnapshotReplay) {
	t.Helper()
	_, a, err := replay(context.Background(), sr.Recording, sr.RecordedSettings, ReplayOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.checkInvariants(); err != nil {
		t.Fatalf("device %d: %v", dev, err)
	}
	got := a.layout()
	want := map[uint64][]blockView{}
	for _, seg := range s.Segments {
		if seg.Device != dev {
			continue
		}
		for _, b := range seg.Blocks {
			// A block freed on the caller's side but not yet returned is still allocated in the model.
			want[seg.Address] = append(want[seg.Address], blockView{b.Address, b.Size, b.State.Active()})
		}
	}
	if len(got) != len(want) {
		t.Errorf("device %d: model ends with %d segments, snapshot has %d", dev, len(got), len(want))
	}
	bad := 0
	for addr, wb := range want {
		if gb := got[addr]; !slices.Equal(gb, wb) {
			if bad == 0 {
				t.Errorf("device %d: segment 0x%x: model blocks %v, snapshot %v", dev, addr, gb, wb)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("device %d: %d of %d segments differ", dev, bad, len(want))
	}
}

// TestGPURunsOOMOnAnotherDevice: the 8B run's trace ends in an OOM on the H200. With an 80 GB device given for
// the what-if, the baseline still replays the recorded run on its own device (capacity from the oom event) and
// reproduces the OOM, while the same settings on the smaller device run out of memory earlier.
func TestGPURunsOOMOnAnotherDevice(t *testing.T) {
	path := filepath.Join(realsnap.SharedDir(t, "gpu_runs"), "llama8b-oom-b8-s8192-snap.pickle.gz")
	s := decode(t, path)
	small := UsableCapacity(80_000_000_000)
	sr, err := ReplaySnapshot(context.Background(), s, 0, &Config{}, ReplayOptions{Capacity: small})
	if err != nil {
		t.Fatal(err)
	}
	base, what := sr.Baseline, sr.WhatIf
	if base.CapacitySource != "oom event" || base.Capacity != h200Capacity || base.PeakReserved != sr.Recording.PeakReserved ||
		len(base.OOMs) != 1 || !base.OOMs[0].Reproduced || len(base.Failed) != 0 {
		t.Errorf("baseline: capacity %d (%s), peak %d (recorded %d), ooms %+v, failed %d", base.Capacity, base.CapacitySource, base.PeakReserved, sr.Recording.PeakReserved, base.OOMs, len(base.Failed))
	}
	if what.CapacitySource != "input" || what.Capacity != small || len(what.Failed) == 0 || what.PeakReserved > small ||
		what.Failed[0].Index >= base.OOMs[0].Index {
		t.Errorf("what-if on 80 GB: capacity %d (%s), peak %d, failed %d (first %+v), recorded oom at %d",
			what.Capacity, what.CapacitySource, what.PeakReserved, len(what.Failed), what.Failed, base.OOMs[0].Index)
	}
}

// netSegmentBytes is what the trace's segment events add to reserved.
func netSegmentBytes(trace []snapshot.TraceEntry) int64 {
	var n int64
	for i := range trace {
		switch trace[i].Action {
		case snapshot.ActionSegmentAlloc, snapshot.ActionSegmentMap:
			n += trace[i].Size
		case snapshot.ActionSegmentFree, snapshot.ActionSegmentUnmap:
			n -= trace[i].Size
		}
	}
	return n
}
