package analyze

import (
	"bytes"
	"context"
	"testing"

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
