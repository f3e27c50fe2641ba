package snapshot_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"

	"github.com/memscan/memscan/internal/realsnap"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/snapshot"
)

// This is an external test package because internal/testutil imports snapshot.

// torchFormatOf maps the manifest's torch version (inferred by its authors from the repositories' pins and the
// keys present) to the generation marker memscan should infer from the keys alone.
var torchFormatOf = map[string]string{
	"2.0.x": "2.0-history",
	">=2.1 (block address/frames, is_expandable)": "list",
	"2.1":                         "2.1+",
	"2.2":                         "2.2+",
	"2.3-2.4":                     "2.3+",
	"2.5-2.7":                     "2.5+",
	"2.5-2.8 (no traces to tell)": "2.5+",
	"2.8":                         "2.8+",
	">=2.10":                      "2.10+",
}

func TestRealSnapshotsMatchManifest(t *testing.T) {
	dir, manifest := realsnap.Load(t)
	listed := map[string]bool{}
	for _, want := range manifest {
		listed[want.File] = true
		t.Run(want.File, func(t *testing.T) {
			path := filepath.Join(dir, want.File)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// The reference decoder is checked against the manifest; the public path must agree with it.
			s, err := snapshot.DecodeReferenceForTest(context.Background(), path, data)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			in, err := load.DecodeFile(context.Background(), path)
			if err != nil {
				t.Fatalf("DecodeFile: %v", err)
			}
			if !reflect.DeepEqual(in.Snapshot, s) {
				t.Error("DecodeFile builds a different model than the reference decoder")
			}
			if got, w := in.Format, fmt.Sprintf("pickle-v%d", want.Proto); got != w || s.Protocol != want.Proto {
				t.Errorf("format = %q (protocol %d), want %q", got, s.Protocol, w)
			}
			if w, ok := torchFormatOf[want.Torch]; !ok {
				t.Errorf("manifest torch %q has no expected TorchFormat in this test", want.Torch)
			} else if s.TorchFormat != w {
				t.Errorf("TorchFormat = %q, want %q (manifest torch %q)", s.TorchFormat, w, want.Torch)
			}
			if isList := string(want.TopKeys) == `"list"`; s.BareList != isList {
				t.Errorf("BareList = %v, manifest top_keys %s", s.BareList, want.TopKeys)
			}
			if len(s.Segments) != want.Segments {
				t.Errorf("segments = %d, want %d", len(s.Segments), want.Segments)
			}
			blocks := 0
			states := map[string]int{}
			streams := map[uint64]bool{}
			pools := map[snapshot.PoolID]bool{}
			expandable := 0
			devices := map[int]bool{}
			for _, seg := range s.Segments {
				blocks += len(seg.Blocks)
				for _, b := range seg.Blocks {
					states[b.State.String()]++
				}
				streams[seg.Stream] = true
				pools[seg.Pool] = true
				if seg.IsExpandable {
					expandable++
				}
				devices[seg.Device] = true
			}
			if blocks != want.Blocks {
				t.Errorf("blocks = %d, want %d", blocks, want.Blocks)
			}
			if len(states) != len(want.States) {
				t.Errorf("block states = %v, want %v", states, want.States)
			}
			for k, n := range want.States {
				if states[k] != n {
					t.Errorf("state %s: %d blocks, want %d", k, states[k], n)
				}
			}
			if len(streams) != want.Streams {
				t.Errorf("distinct segment streams = %d, want %d", len(streams), want.Streams)
			}
			if expandable != want.Expand {
				t.Errorf("expandable segments = %d, want %d", expandable, want.Expand)
			}
			// The manifest lists distinct pool ids; an empty entry means the file predates segment_pool_id, which
			// then defaults to (0, 0).
			wantPools := map[snapshot.PoolID]bool{}
			for _, p := range want.Pools {
				if len(p) == 2 {
					wantPools[snapshot.PoolID{p[0], p[1]}] = true
				} else {
					wantPools[snapshot.PoolID{}] = true
				}
			}
			if len(s.Segments) > 0 && fmt.Sprint(sortedPools(pools)) != fmt.Sprint(sortedPools(wantPools)) {
				t.Errorf("pools = %v, want %v", sortedPools(pools), sortedPools(wantPools))
			}

			// Trace lengths per device and action counts.
			if want.TraceLens == nil {
				if s.DeviceTraces != nil {
					t.Errorf("device traces = %d lists, want none", len(s.DeviceTraces))
				}
			} else {
				lens := make([]int, len(s.DeviceTraces))
				for i, tr := range s.DeviceTraces {
					lens[i] = len(tr)
				}
				if fmt.Sprint(lens) != fmt.Sprint(want.TraceLens) {
					t.Errorf("trace lengths = %v, want %v", lens, want.TraceLens)
				}
			}
			actions := map[string]int{}
			for dev, tr := range s.DeviceTraces {
				if len(tr) > 0 {
					devices[dev] = true
				}
				for _, e := range tr {
					actions[s.ActionName(&e)]++
				}
			}
			if want.Actions != nil && fmt.Sprint(actions) != fmt.Sprint(want.Actions) {
				t.Errorf("actions = %v, want %v", actions, want.Actions)
			}
			devList := make([]int, 0, len(devices))
			for d := range devices {
				devList = append(devList, d)
			}
			sort.Ints(devList)
			if fmt.Sprint(devList) != fmt.Sprint(want.Devices) {
				t.Errorf("devices = %v, want %v", devList, want.Devices)
			}
			if want.ExtAnn != nil && len(s.ExternalAnnotations) != *want.ExtAnn {
				t.Errorf("external annotations = %d, want %d", len(s.ExternalAnnotations), *want.ExtAnn)
			}

			reserved, allocated, freeInt, freeExt := snapshot.SegsumForTest(s)
			if reserved != want.Segsum.Reserved || allocated != want.Segsum.Allocated ||
				freeInt != want.Segsum.FreeInt || freeExt != want.Segsum.FreeExt {
				t.Errorf("segsum = reserved %d allocated %d free_int %d free_ext %d, want %d %d %d %d",
					reserved, allocated, freeInt, freeExt,
					want.Segsum.Reserved, want.Segsum.Allocated, want.Segsum.FreeInt, want.Segsum.FreeExt)
			}
			if reserved != allocated+freeInt+freeExt {
				t.Errorf("reserved %d != allocated+free_int+free_ext %d", reserved, allocated+freeInt+freeExt)
			}
			if w := s.Validate(); len(w) > 0 {
				t.Errorf("real snapshot reported %d contradictions, first: %s", len(w), w[0])
			}
		})
	}
	// Every pickle in the folder must be covered by the manifest, so a new file cannot slip in untested.
	files, _ := filepath.Glob(filepath.Join(dir, "*.pickle"))
	for _, f := range files {
		if !listed[filepath.Base(f)] {
			t.Errorf("%s is not in manifest.json", filepath.Base(f))
		}
	}
}

func sortedPools(m map[snapshot.PoolID]bool) []snapshot.PoolID {
	out := make([]snapshot.PoolID, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i][0] != out[j][0] {
			return out[i][0] < out[j][0]
		}
		return out[i][1] < out[j][1]
	})
	return out
}
