package gen_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/memscan/memscan/internal/gen"
	"github.com/memscan/memscan/internal/replay"
	"github.com/memscan/memscan/internal/testutil"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/snapshot"
)

// TestWriteConsistent decodes generated snapshots of every generation and stack mode and checks the allocator
// invariants real snapshots satisfy, and that the Stats the generator reports match what was written.
func TestWriteConsistent(t *testing.T) {
	for _, g := range gen.Generations() {
		for _, stacks := range []gen.Stacks{gen.StacksNone, gen.StacksPython, gen.StacksAll} {
			cfg := gen.Config{Seed: 5, Generation: g, Stacks: stacks, Devices: 2, Entries: 2000, ShareStack: stacks != gen.StacksAll,
				Expandable: g == gen.Gen28, OOM: true}
			t.Run(fmt.Sprintf("%s-%s", g, stacks), func(t *testing.T) {
				var buf bytes.Buffer
				st, err := gen.Write(&buf, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if st.Bytes != int64(buf.Len()) {
					t.Errorf("Stats.Bytes %d, wrote %d", st.Bytes, buf.Len())
				}
				in, err := load.Decode(context.Background(), "gen.pickle", &buf)
				if err != nil {
					t.Fatal(err)
				}
				s := in.Snapshot
				if s.BareList != (g == gen.GenList) {
					t.Errorf("BareList %v for generation %s", s.BareList, g)
				}
				var reserved, allocated int64
				blocks := 0
				for _, sg := range s.Segments {
					reserved += sg.TotalSize
					var sum, alloc int64
					addr := sg.Address
					for i, b := range sg.Blocks {
						if b.Address != addr {
							t.Fatalf("segment %#x block %d at %#x, want %#x", sg.Address, i, b.Address, addr)
						}
						if i > 0 && b.State == snapshot.BlockInactive && sg.Blocks[i-1].State == snapshot.BlockInactive {
							t.Fatalf("segment %#x: adjacent inactive blocks", sg.Address)
						}
						if b.State == snapshot.BlockActiveAllocated {
							alloc += b.Size
							if b.RequestedSize > b.Size {
								t.Fatalf("requested %d > size %d", b.RequestedSize, b.Size)
							}
						}
						addr += uint64(b.Size)
						sum += b.Size
					}
					if sum != sg.TotalSize || alloc != sg.AllocatedSize {
						t.Fatalf("segment %#x: blocks %d/%d, recorded %d/%d", sg.Address, sum, alloc, sg.TotalSize, sg.AllocatedSize)
					}
					allocated += alloc
					blocks += len(sg.Blocks)
				}
				if reserved != st.ReservedBytes || allocated != st.AllocatedBytes || blocks != st.Blocks || len(s.Segments) != st.Segments {
					t.Errorf("decoded %d/%d bytes %d blocks %d segments, Stats %+v", reserved, allocated, blocks, len(s.Segments), st)
				}
				if g != gen.GenList {
					entries := 0
					for _, tr := range s.DeviceTraces {
						entries += len(tr)
					}
					if len(s.DeviceTraces) != 2 || entries != st.Entries || st.Entries < 1900 {
						t.Errorf("%d devices, %d entries, Stats %d", len(s.DeviceTraces), entries, st.Entries)
					}
					last := s.DeviceTraces[0][len(s.DeviceTraces[0])-2]
					if last.Action != snapshot.ActionOOM || s.EntryExtra(&last).DeviceFree == 0 {
						t.Errorf("device 0 does not end with an OOM: %+v", last)
					}
				}
			})
		}
	}
}

func TestWriteDeterministic(t *testing.T) {
	cfg := gen.Config{Seed: 9, Entries: 3000, Stacks: gen.StacksAll}
	var a, b bytes.Buffer
	if _, err := gen.Write(&a, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := gen.Write(&b, cfg); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("same seed, different bytes")
	}
}

// TestTargetBytes checks that --size lands near the requested size.
func TestTargetBytes(t *testing.T) {
	var buf bytes.Buffer
	st, err := gen.Write(&buf, gen.Config{Seed: 2, TargetBytes: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	if st.Bytes < 2<<20 || st.Bytes > 8<<20 {
		t.Errorf("asked for 4 MiB, wrote %d bytes", st.Bytes)
	}
}

// TestRankSetStages checks that earlier pipeline stages get longer traces and more live memory.
func TestRankSetStages(t *testing.T) {
	rs := gen.RankSet{Ranks: 8, Stages: 4, Base: gen.Config{Seed: 1, Entries: 4000}}
	for r := range 8 {
		if got, want := rs.StageOf(r), r/2; got != want {
			t.Errorf("rank %d in stage %d, want %d", r, got, want)
		}
	}
	first, last := rs.RankConfig(0), rs.RankConfig(7)
	if first.Entries <= last.Entries || first.LiveScale <= last.LiveScale {
		t.Errorf("stage 0 %+v not larger than stage 3 %+v", first, last)
	}
	dir := t.TempDir()
	paths, err := gen.WriteRankSet(dir, rs)
	if err != nil || len(paths) != 8 {
		t.Fatalf("%v, %d files", err, len(paths))
	}
	if paths[3] != gen.RankPath(dir, 3) {
		t.Errorf("path %s, want %s", paths[3], gen.RankPath(dir, 3))
	}
}

// TestGrowKeepsTheLiveSetGrowing: with Grow, the live requested bytes replayed from the trace rise from quarter to
// quarter of it, and the final state holds many more live blocks than the same run without; the trace still replays
// to the final state's live bytes.
func TestGrowKeepsTheLiveSetGrowing(t *testing.T) {
	liveBlocks := func(s *snapshot.Snapshot) (n int, requested int64) {
		for _, sg := range s.Segments {
			for _, b := range sg.Blocks {
				if b.State == snapshot.BlockActiveAllocated {
					n++
					requested += b.RequestedSize
				}
			}
		}
		return n, requested
	}
	base := testutil.Generated(t, gen.Config{Seed: 9, Entries: 16000}).Snapshot
	grow := testutil.Generated(t, gen.Config{Seed: 9, Entries: 16000, Grow: 0.1}).Snapshot
	nBase, _ := liveBlocks(base)
	nGrow, reqGrow := liveBlocks(grow)
	if nGrow < 3*nBase {
		t.Errorf("%d live blocks at the end with Grow, %d without; want far more", nGrow, nBase)
	}
	r, err := replay.Run(context.Background(), grow, 0, func(kind, ex string) { t.Errorf("replay: %s: %s", kind, ex) })
	if err != nil {
		t.Fatal(err)
	}
	n := len(r.Allocated)
	for q := 1; q < 4; q++ {
		if a, b := r.Allocated[q*n/4-1], r.Allocated[(q+1)*n/4-1]; b <= a {
			t.Errorf("live bytes %d at quarter %d, %d at quarter %d: not growing", a, q, b, q+1)
		}
	}
	if r.Allocated[n-1] != reqGrow {
		t.Errorf("replayed live bytes %d at the end, the final state holds %d", r.Allocated[n-1], reqGrow)
	}
}
