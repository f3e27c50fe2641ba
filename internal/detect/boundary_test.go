package detect_test

import (
	"context"
	"testing"

	"github.com/memscan/memscan/internal/detect"
	"github.com/memscan/memscan/internal/replay"
	"github.com/memscan/memscan/internal/traingen"
	"github.com/memscan/memscan/phases"
	"github.com/memscan/memscan/snapshot"
)

// The tests below put each trace detector's threshold between two literal values, the ones findings/thresholds.go
// documents (a 512 MiB saving, 1 GiB of idle segments after one whole iteration, 1.10x and 256 MiB of cache
// overhead, 1 MiB of growth over three iterations, two completed layers), so that changing a threshold fails a
// test instead of moving both sides of the comparison with it.

const gib = 1 << 30

// seriesDevice is a device whose trace allocated peak bytes and reserved res bytes, with no phases.
func seriesDevice(peak, res int64) *detect.Device {
	tr := []snapshot.TraceEntry{{Action: snapshot.ActionSegmentAlloc, Size: res}, {Action: snapshot.ActionAlloc, Size: peak}}
	d := &detect.Device{DeviceTrace: &replay.DeviceTrace{Trace: tr, Series: replay.Series{Allocated: []int64{0, peak}, Reserved: replay.StepsOf(0, []int64{res, res})}}}
	d.SetTimeline(&phases.Timeline{Events: len(tr), Setup: phases.NoSpan, OOM: -1})
	return d
}

// TestCacheOverheadBoundaries: reserved must exceed the peak allocated by more than 10 % and by at least 256 MiB.
func TestCacheOverheadBoundaries(t *testing.T) {
	for _, tc := range []struct {
		name      string
		peak, res int64
		fires     bool
	}{
		{"10 GiB peak, 11 GiB − 1 MiB reserved (under 1.10x)", 10 * gib, 11*gib - mib, false},
		{"10 GiB peak, 11 GiB + 1 MiB reserved (over 1.10x)", 10 * gib, 11*gib + mib, true},
		{"1 GiB peak, 255 MiB beyond it", gib, gib + 255*mib, false},
		{"1 GiB peak, 256 MiB beyond it", gib, gib + 256*mib, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, ok := detect.CacheOverhead(seriesDevice(tc.peak, tc.res), false)
			if ok != tc.fires {
				t.Errorf("cache-overhead fired %v (%+v), want %v", ok, f, tc.fires)
			}
		})
	}
}

// TestFragmentationSavingBoundary: expandable segments are advised from a saving of 512 MiB, not at 511 MiB.
func TestFragmentationSavingBoundary(t *testing.T) {
	c := healthy
	c.Scale = []float64{1, 3, 2, 4}
	in := prepare(t, c.Build())
	d := in.Devices[0]
	for _, tc := range []struct {
		saving int64
		fires  bool
	}{{511 * mib, false}, {512 * mib, true}, {513 * mib, true}} {
		f, ok, err := detect.Fragmentation(context.Background(), in.Snapshot, d, model{base: res(d), peak: res(d) - tc.saving})
		if err != nil || ok != tc.fires || ok && f.Value != float64(tc.saving) {
			t.Errorf("saving %d MiB: fired %v with %g (%v), want %v", tc.saving/mib, ok, f.Value, err, tc.fires)
		}
	}
}

// TestIdleCacheBoundaries: empty_cache() is advised for a setup buffer of 1 GiB (not 1 GiB − 2 MiB) that one whole
// iteration after it never touched.
func TestIdleCacheBoundaries(t *testing.T) {
	for _, tc := range []struct {
		name       string
		scratch    int64
		iterations int
		fires      bool
	}{
		{"1 GiB, one iteration after it", gib, 1, true},
		{"1 GiB − 2 MiB, one iteration after it", gib - 2*mib, 1, false},
		{"1.5 GiB, one iteration after it", 1536 * mib, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := healthy
			c.LogitsBytes, c.SetupScratchBytes, c.Iterations = 512*mib, tc.scratch, tc.iterations
			in, got := runDetect(t, c)
			d := in.Devices[0]
			complete := 0
			for _, it := range d.Timeline().Iterations {
				if it.Complete {
					complete++
				}
			}
			if complete != tc.iterations {
				t.Fatalf("%d complete iterations, want %d", complete, tc.iterations)
			}
			// The cache must be beyond the overhead thresholds, so that only the idle bytes decide.
			if _, ok := detect.CacheOverhead(d, false); !ok {
				t.Fatalf("the fixture's cache holds no overhead: reserved %d, peak %d", res(d), peak(d))
			}
			f, ok := got["idle-cache"]
			if ok != tc.fires || ok && (f.Value != float64(tc.scratch) || f.Phase != "setup") {
				t.Errorf("idle-cache fired %v (%+v), want %v for the %d-byte setup buffer", ok, f, tc.fires, tc.scratch)
			}
		})
	}
}

// TestLeakBoundaries: a site is a leak from 1 MiB of growth per iteration (not 1 MiB − 512 B), over three complete
// iterations (not two).
func TestLeakBoundaries(t *testing.T) {
	for _, tc := range []struct {
		name       string
		iterations int
		growth     int64
		fires      bool
	}{
		{"1 MiB per iteration over 3", 3, mib, true},
		{"1 MiB − 512 B per iteration over 3", 3, mib - 512, false},
		{"1 MiB per iteration over 2", 2, mib, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := healthy
			c.Keep, c.Iterations, c.LogitsBytes = true, tc.iterations, 2*mib
			s := c.Build()
			// The logits each iteration keeps shrink to the growth wanted; their 2 MiB segments stay.
			for i := range s.DeviceTraces[0] {
				if e := &s.DeviceTraces[0][i]; s.EntryStack(e) == traingen.TrainLogitsStack && e.Action != snapshot.ActionSegmentAlloc {
					e.Size = tc.growth
				}
			}
			for i := range s.Segments {
				for j := range s.Segments[i].Blocks {
					if b := &s.Segments[i].Blocks[j]; b.Stack == traingen.TrainLogitsStack {
						b.RequestedSize = tc.growth
					}
				}
			}
			in := prepare(t, s)
			f, ok := detect.Leak(in.Devices[0])
			if ok != tc.fires || ok && f.Value != float64(tc.growth) {
				t.Errorf("leak fired %v with %g bytes per iteration, want %v", ok, f.Value, tc.fires)
			}
		})
	}
}

// TestOOMExtrapolationBoundary: the step is projected from two completed layers; one is not enough.
func TestOOMExtrapolationBoundary(t *testing.T) {
	for _, tc := range []struct {
		oomAtLayer, done int
		extrapolated     bool
	}{{3, 2, true}, {2, 1, false}} {
		c := healthy
		c.Layers, c.OOMAtLayer, c.Iterations = 8, tc.oomAtLayer, 1
		in, got := runDetect(t, c)
		f, ok := got["oom"]
		if !ok {
			t.Fatalf("OOM at layer %d: no oom finding", tc.oomAtLayer)
		}
		x := detect.ExplainOOM(in.Devices[0], f.Event)
		if x.LayersDone != tc.done || (x.PerLayerBytes == c.ActivationBytes) != tc.extrapolated {
			t.Errorf("OOM at layer %d: %d layers done, %d bytes per layer; want %d done, extrapolated %v (%d per layer)",
				tc.oomAtLayer, x.LayersDone, x.PerLayerBytes, tc.done, tc.extrapolated, c.ActivationBytes)
		}
	}
}
