package snapshot_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/memscan/memscan/internal/realsnap"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/snapshot"
)

// Benchmarks are not part of CI's pass/fail; run them with
//
//	go test -run XXX -bench Decode ./snapshot/
//	MEMSCAN_BENCH_FILE=big.pickle go test -run XXX -bench DecodeFile -benchtime 3x ./snapshot/
//
// b.SetBytes makes the output include MB/s of pickle decoded.

func BenchmarkDecodeFast(b *testing.B) {
	data, err := realsnap.BenchGenerated()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := snapshot.DecodeFastPickle(context.Background(), "bench", bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeReference(b *testing.B) {
	data, err := realsnap.BenchGenerated()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := snapshot.DecodeReferencePickle(context.Background(), "bench", data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeFile decodes the file named by MEMSCAN_BENCH_FILE through DecodeFile (streaming from disk).
func BenchmarkDecodeFile(b *testing.B) {
	path := realsnap.BenchFile(b)
	for b.Loop() {
		if _, err := load.DecodeFile(context.Background(), path); err != nil {
			b.Fatal(err)
		}
	}
}
