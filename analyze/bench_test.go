package analyze

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/memscan/memscan/internal/realsnap"
	"github.com/memscan/memscan/load"
)

// Benchmarks are not part of CI's pass/fail:
//
//	go test -run XXX -bench DecodeAnalyze ./analyze/
//	MEMSCAN_BENCH_FILE=big.pickle go test -run XXX -bench DecodeAnalyzeFile -benchtime 3x ./analyze/

// BenchmarkDecodeAnalyze measures decode plus the full analysis of a generated 200k-entry snapshot.
func BenchmarkDecodeAnalyze(b *testing.B) {
	data, err := realsnap.BenchGenerated()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		in, err := load.Decode(context.Background(), "bench.pickle", bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Analyze(context.Background(), in, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeAnalyzeDevices4 is decode plus analysis of a generated four-device snapshot read from a file, as
// memscan analyze reads it (the decoder sizes each device's trace from the file size). Besides time and
// allocations it reports live-x-file: the heap still in use, with the decoded input and the report held, over
// the file size.
func BenchmarkDecodeAnalyzeDevices4(b *testing.B) {
	data, err := realsnap.BenchGenerated4()
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "rank0_memory_snapshot.pickle")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	var live uint64
	for b.Loop() {
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		in, err := load.DecodeFile(context.Background(), path)
		if err != nil {
			b.Fatal(err)
		}
		rep, err := Analyze(context.Background(), in, Options{})
		if err != nil {
			b.Fatal(err)
		}
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)
		live = max(live, after.HeapAlloc-min(after.HeapAlloc, before.HeapAlloc))
		runtime.KeepAlive(in)
		runtime.KeepAlive(rep)
	}
	b.ReportMetric(float64(live)/float64(len(data)), "live-x-file")
}

// BenchmarkAnalyzeOnly separates the analysis from decoding.
func BenchmarkAnalyzeOnly(b *testing.B) {
	data, err := realsnap.BenchGenerated()
	if err != nil {
		b.Fatal(err)
	}
	in, err := load.Decode(context.Background(), "bench.pickle", bytes.NewReader(data))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Analyze(context.Background(), in, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeAnalyzeFile runs decode and analysis on the file named by MEMSCAN_BENCH_FILE.
func BenchmarkDecodeAnalyzeFile(b *testing.B) {
	path := realsnap.BenchFile(b)
	for b.Loop() {
		in, err := load.DecodeFile(context.Background(), path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Analyze(context.Background(), in, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnalyzeFile decodes the file named by MEMSCAN_BENCH_FILE once and runs only the analysis each time:
// what to profile (-cpuprofile) when the analysis, not the decoder, is the question. cpu-s/op is the process's
// user and system time per analysis (every goroutine, the collector's included), which a machine shared with
// other work disturbs less than the wall time.
func BenchmarkAnalyzeFile(b *testing.B) {
	path := realsnap.BenchFile(b)
	in, err := load.DecodeFile(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	runtime.GC()
	cpu0 := processCPU()
	for b.Loop() {
		if _, err := Analyze(context.Background(), in, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((processCPU()-cpu0).Seconds()/float64(b.N), "cpu-s/op")
}

// processCPU is the user and system time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
