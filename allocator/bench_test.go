package allocator

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memscan/memscan/internal/realsnap"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/snapshot"
)

// benchTrace is realsnap.BenchStackless, the generated 2.4 M-event single-device snapshot, decoded once per test
// binary: the size the replay must handle in under a second.
var benchTrace = sync.OnceValues(func() (*snapshot.Snapshot, error) {
	raw, err := realsnap.BenchStackless()
	if err != nil {
		return nil, err
	}
	in, err := load.Decode(context.Background(), "bench.pickle", bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	return in.Snapshot, nil
})

func benchSnapshot(b *testing.B) *snapshot.Snapshot {
	b.Helper()
	s, err := benchTrace()
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkReplay2M4 measures one replay of the 2.4 M-event trace (Record once, outside the loop).
func BenchmarkReplay2M4(b *testing.B) {
	s := benchSnapshot(b)
	rec := Record(s.DeviceTraces[0], RecordOptions{Final: s.Segments, Extras: s.TraceExtras, Streams: s.TraceStreams})
	b.ReportMetric(float64(len(rec.Trace)), "events")
	defer reportCPU(b)()
	for b.Loop() {
		res, err := Replay(context.Background(), rec, Config{}, ReplayOptions{})
		if err != nil {
			b.Fatal(err)
		}
		// The generator's own allocator is simpler than PyTorch's, so only consistency is checked, not the peak.
		if res.Partial {
			b.Fatalf("replay partial: %s", res.PartialReason())
		}
	}
}

// BenchmarkRecordAndReplay2M4 measures reading the trace and replaying it under the recorded settings and one
// what-if: what memscan analyze does per input.
func BenchmarkRecordAndReplay2M4(b *testing.B) {
	s := benchSnapshot(b)
	whatIf := Config{ExpandableSegments: true}
	defer reportCPU(b)()
	for b.Loop() {
		if _, err := ReplaySnapshot(context.Background(), s, 0, &whatIf, ReplayOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// reportCPU starts measuring the process's CPU time and returns the function that reports it per operation: on a
// shared machine wall time depends on the neighbours, CPU time much less.
func reportCPU(b *testing.B) func() {
	before := cpuTime()
	return func() {
		b.ReportMetric(float64((cpuTime()-before).Nanoseconds())/float64(max(b.N, 1)), "cpu-ns/op")
	}
}

// BenchmarkRecord2M4 measures reading the 2.4 M-event trace (start state, recorded reserved, empty_cache runs).
func BenchmarkRecord2M4(b *testing.B) {
	s := benchSnapshot(b)
	defer reportCPU(b)()
	for b.Loop() {
		if rec := Record(s.DeviceTraces[0], RecordOptions{Final: s.Segments, Extras: s.TraceExtras, Streams: s.TraceStreams}); rec.Partial {
			b.Fatalf("partial: %v", rec.Issues)
		}
	}
}

// growingTrace is a trace whose live set keeps growing, as a leaking run's does: of every four allocations one is
// kept to the end, the others are freed within a few dozen events, youngest first. Sizes are log-uniform from
// 512 B to 64 MiB on two streams, so the kept blocks pin segments whose free remainders pile up in the free-block
// index while the live blocks grow by a quarter of the allocations. kept counts the blocks live at the end.
// growingStreams is the TraceStreams of growingTrace's events: streams 0 and 1.
var growingStreams = []uint64{0, 1}

func growingTrace(events int) (tr []snapshot.TraceEntry, kept int) {
	rng := uint64(0x9e3779b97f4a7c15)
	next := func() uint64 { // xorshift64*
		rng ^= rng >> 12
		rng ^= rng << 25
		rng ^= rng >> 27
		return rng * 2685821657736338717
	}
	tr = make([]snapshot.TraceEntry, 0, events)
	var recent []uint64
	addr := uint64(0x7f0000000000)
	for len(tr) < events {
		if len(recent) > 0 && (len(recent) > 48 || next()%3 == 0) {
			a := recent[len(recent)-1]
			recent = recent[:len(recent)-1]
			tr = append(tr, snapshot.TraceEntry{Action: snapshot.ActionFreeCompleted, Addr: a, Size: 1})
			continue
		}
		size := int64(512) << (next() % 18)
		size += int64(next() % uint64(size))
		addr += 1 << 12
		tr = append(tr, snapshot.TraceEntry{Action: snapshot.ActionAlloc, Addr: addr, Size: size, Stream: snapshot.StreamRef(next() % 2)})
		if next()%4 != 0 {
			recent = append(recent, addr)
		} else {
			kept++
		}
	}
	return tr, kept + len(recent)
}

// BenchmarkReplayGrowing replays growing traces of 1 M and 4 M events: the free-block index and the live blocks
// must cost O(log n) or less per event however the live set grows, so cpu-ns/event at 4 M stays within a small
// factor (the depth of the index, cache misses) of that at 1 M.
func BenchmarkReplayGrowing(b *testing.B) {
	for _, n := range []int{1 << 20, 4 << 20} {
		b.Run(fmt.Sprintf("events=%dM", n>>20), func(b *testing.B) {
			tr, kept := growingTrace(n)
			rec := Record(tr, RecordOptions{Streams: growingStreams})
			cpu := cpuTime()
			for b.Loop() {
				if _, err := Replay(context.Background(), rec, Config{}, ReplayOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu)/float64(b.N*n), "cpu-ns/event")
			b.ReportMetric(float64(kept), "live-at-end")
		})
	}
}

// cpuTime is the process's CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkReplayFile decodes the snapshot named by MEMSCAN_BENCH_FILE once and replays every device trace each
// time as memscan analyze does: Record, then the recorded settings (with the allocated series) and, unless they
// have it already, the same settings with expandable segments, side by side.
//
//	MEMSCAN_BENCH_FILE=big.pickle go test -run XXX -bench ReplayFile -benchtime 5x -cpuprofile cpu.out ./allocator/
func BenchmarkReplayFile(b *testing.B) {
	path := realsnap.BenchFile(b)
	in, err := load.DecodeFile(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	s := in.Snapshot
	recorded, _, _ := ConfigFromSettings(s.AllocatorSettings)
	var extra []Config
	if !recorded.ExpandableSegments {
		exp := recorded
		exp.ExpandableSegments = true
		extra = append(extra, exp)
	}
	events := 0
	for _, tr := range s.DeviceTraces {
		events += len(tr)
	}
	b.ReportMetric(float64(events), "events")
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		for dev, tr := range s.DeviceTraces {
			if len(tr) == 0 {
				continue
			}
			if _, err := ReplaySnapshot(context.Background(), s, dev, nil, ReplayOptions{AllocatedSeries: true}, extra...); err != nil {
				b.Fatal(err)
			}
		}
	}
}
