package allocator

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/gen"
	"github.com/memscan/memscan/internal/traingen"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/snapshot"
)

var update = flag.Bool("update", false, "rewrite testdata/replay_digests.golden from this model")

// digestConfigs are the settings every digest trace is replayed under: the recorded settings (index 0, filled in
// per trace) and what-ifs that take each rule family's path, one of them on a device too small for the trace.
var digestConfigs = []struct {
	name  string
	cfg   Config
	small bool // capacity three quarters of the recorded settings' peak: failures, retries, releases
}{
	{name: "recorded"},
	{name: "expandable", cfg: Config{ExpandableSegments: true}},
	{name: "max_split_64mb", cfg: Config{MaxSplitSize: 64 * MiB}, small: true},
	{name: "roundup", cfg: Config{RoundupPower2Divisions: [16]int64{4, 4, 8, 8, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1}}},
	{name: "gc", cfg: Config{PerProcessMemoryFraction: 0.5, GarbageCollectionThreshold: 0.6}},
	{name: "small_device", small: true},
	{name: "expandable_small_device", cfg: Config{ExpandableSegments: true}, small: true},
}

// digestTraces are the traces the digests cover: generated snapshots (plain, growing, expandable, ending in an
// OOM, two devices on several streams), synthetic training loops (periodic, with a leak, with an OOM) and the
// benchmark's growing trace without final segments.
func digestTraces(t *testing.T) []struct {
	name string
	s    *snapshot.Snapshot
} {
	t.Helper()
	type named = struct {
		name string
		s    *snapshot.Snapshot
	}
	var out []named
	for _, c := range []gen.Config{
		{Name: "gen", Seed: 3, Entries: 60_000, Stacks: gen.StacksNone},
		{Name: "gen_grow", Seed: 4, Entries: 60_000, Stacks: gen.StacksNone, Grow: 0.2},
		{Name: "gen_expandable", Seed: 5, Entries: 40_000, Stacks: gen.StacksNone, Expandable: true},
		{Name: "gen_oom", Seed: 6, Entries: 40_000, Stacks: gen.StacksNone, OOM: true},
		{Name: "gen_2dev", Seed: 7, Entries: 60_000, Stacks: gen.StacksNone, Devices: 2},
	} {
		var buf bytes.Buffer
		if _, err := gen.Write(&buf, c); err != nil {
			t.Fatal(err)
		}
		in, err := load.Decode(context.Background(), c.Name+".pickle", &buf)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, named{c.Name, in.Snapshot})
	}
	for _, c := range []struct {
		name string
		loop traingen.TrainingLoop
	}{
		{"train", traingen.TrainingLoop{Iterations: 6, Layers: 6, WeightBytes: 64 << 20, ActivationBytes: 96 << 20, LogitsBytes: 200 << 20, Scale: []float64{1, 3, 2, 4, 1, 2}}},
		{"train_leak", traingen.TrainingLoop{Iterations: 5, Layers: 4, WeightBytes: 32 << 20, ActivationBytes: 50 << 20, LogitsBytes: 70 << 20, Keep: true, SetupScratchBytes: 300 << 20}},
		{"train_oom", traingen.TrainingLoop{Iterations: 3, Layers: 5, WeightBytes: 64 << 20, ActivationBytes: 128 << 20, LogitsBytes: 256 << 20, OOMAtLayer: 3}},
	} {
		out = append(out, named{c.name, c.loop.Build()})
	}
	tr, _ := growingTrace(60_000)
	out = append(out, named{"growing", &snapshot.Snapshot{DeviceTraces: [][]snapshot.TraceEntry{tr}, TraceStreams: growingStreams}})
	return out
}

// TestReplayDigests replays every digest trace under every digest configuration and compares a hash of each
// complete Result (every field, the timelines and created segments included) with the one recorded in
// testdata/replay_digests.golden: a change to the model's data structures must not change a single result. The
// property and real-snapshot tests check the model against invariants and PyTorch; this one pins its outputs, so
// that a faster structure is known to decide exactly as the one it replaced.
func TestReplayDigests(t *testing.T) {
	var lines []string
	for _, tc := range digestTraces(t) {
		recorded, _, _ := ConfigFromSettings(tc.s.AllocatorSettings)
		for dev, tr := range tc.s.DeviceTraces {
			if len(tr) == 0 {
				continue
			}
			rec := Record(tr, RecordOptions{Final: tc.s.Segments, Device: dev, Settings: recorded, Extras: tc.s.TraceExtras, Streams: tc.s.TraceStreams})
			var basePeak int64
			for i, dc := range digestConfigs {
				cfg := dc.cfg
				if i == 0 {
					cfg = recorded
				}
				opt := ReplayOptions{AllocatedSeries: true, TotalMemory: 8 << 30}
				if dc.small {
					opt.Capacity = basePeak * 3 / 4
				}
				res, a, err := replay(context.Background(), rec, cfg, opt)
				if err != nil {
					t.Fatalf("%s device %d %s: %v", tc.name, dev, dc.name, err)
				}
				if err := a.checkInvariants(); err != nil {
					t.Fatalf("%s device %d %s: %v", tc.name, dev, dc.name, err)
				}
				if i == 0 {
					basePeak = res.PeakReserved
				}
				raw, err := json.Marshal(res)
				if err != nil {
					t.Fatal(err)
				}
				lines = append(lines, fmt.Sprintf("%s dev%d %s events=%d peak=%d failed=%d retries=%d created=%d sha256=%x",
					tc.name, dev, dc.name, len(tr), res.PeakReserved, len(res.Failed), res.Retries, len(res.Created), sha256.Sum256(raw)))
			}
		}
	}
	lines = append(lines, sequenceDigests(t)...)
	checkGolden(t, filepath.Join("testdata", "replay_digests.golden"), lines)
}

// sequenceDigests drives the model with random operations (two streams, a private pool, empty_cache and pool
// releases) under every property configuration and digests the whole run: the state and each new block's address
// after every operation, the segment events, and the breakdown at the peak.
func sequenceDigests(t *testing.T) []string {
	t.Helper()
	var lines []string
	for ci, pc := range propertyConfigs {
		rng := rand.New(rand.NewPCG(11, uint64(ci)))
		a, err := New(pc.cfg, pc.opt)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		var live []uint64
		next := uint64(1)
		failed := 0
		for range 20_000 {
			var addr uint64
			switch r := rng.IntN(100); {
			case r < 55 || len(live) == 0:
				pool := DefaultPool
				if rng.IntN(10) == 0 {
					pool = PoolID{1, 2}
				}
				switch err := a.MallocIn(next, randomSize(rng), uint64(rng.IntN(2)), pool); {
				case isOOM(err):
					failed++
				case err != nil:
					t.Fatal(err)
				default:
					live = append(live, next)
					addr, _ = a.AddressOf(next)
				}
				next++
			case r < 98:
				i := rng.IntN(len(live))
				if err := a.Free(live[i]); err != nil {
					t.Fatal(err)
				}
				live[i] = live[len(live)-1]
				live = live[:len(live)-1]
			case r < 99:
				_ = a.ReleasePool(PoolID{1, 2}) // ErrNotFound when the pool is gone: nothing to do
			default:
				a.EmptyCache()
			}
			fmt.Fprintf(h, "%d %d %d %d %d %x\n", a.Reserved(), a.Allocated(), a.Requested(), a.Segments(), a.Retries(), addr)
		}
		raw, err := json.Marshal(struct {
			Events []SegmentEvent
			Peak   Fragmentation
			Now    Fragmentation
		}{a.Events(), a.PeakFragmentation(), a.Fragmentation()})
		if err != nil {
			t.Fatal(err)
		}
		h.Write(raw)
		lines = append(lines, fmt.Sprintf("sequence config%d %s peak=%d failed=%d events=%d sha256=%x", ci, pc.cfg, a.PeakReserved(), failed, len(a.Events()), h.Sum(nil)))
	}
	return lines
}

// checkGolden compares lines with the golden file, or rewrites it under -update.
func checkGolden(t *testing.T, path string, lines []string) {
	t.Helper()
	got := strings.Join(lines, "\n") + "\n"
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to record it)", err)
	}
	var want []string
	for sc := bufio.NewScanner(bytes.NewReader(raw)); sc.Scan(); {
		want = append(want, sc.Text())
	}
	if len(want) != len(lines) {
		t.Fatalf("%d digests, golden has %d", len(lines), len(want))
	}
	for i := range lines {
		if lines[i] != want[i] {
			t.Errorf("digest %d differs:\n got  %s\n want %s", i, lines[i], want[i])
		}
	}
}
