package allocator

import (
	"bytes"
	"context"
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
	rec := Record(s.DeviceTraces[0], RecordOptions{Final: s.Segments})
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
	var before syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	return func() {
		var after syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
		cpu := time.Duration(after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano())
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(max(b.N, 1)), "cpu-ns/op")
	}
}

// BenchmarkRecord2M4 measures reading the 2.4 M-event trace (start state, recorded reserved, empty_cache runs).
func BenchmarkRecord2M4(b *testing.B) {
	s := benchSnapshot(b)
	defer reportCPU(b)()
	for b.Loop() {
		if rec := Record(s.DeviceTraces[0], RecordOptions{Final: s.Segments}); rec.Partial {
			b.Fatalf("partial: %v", rec.Issues)
		}
	}
}
