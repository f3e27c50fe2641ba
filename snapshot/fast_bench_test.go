package snapshot_test

import (
	"bytes"
	"context"
	"os"
	"sync"
	"testing"

	"github.com/memscan/memscan/internal/gen"
	"github.com/memscan/memscan/snapshot"
)

// Benchmarks are not part of CI's pass/fail; run them with
//
//	go test -run XXX -bench Decode ./snapshot/
//	MEMSCAN_BENCH_FILE=big.pickle go test -run XXX -bench DecodeFile -benchtime 3x ./snapshot/
//
// b.SetBytes makes the output include MB/s of pickle decoded.

var benchData = sync.OnceValues(func() ([]byte, error) {
	var buf bytes.Buffer
	_, err := gen.Write(&buf, gen.Config{Seed: 1, Entries: 200_000, Devices: 2, Stacks: gen.StacksPython, ShareStack: true})
	return buf.Bytes(), err
})

func BenchmarkDecodeFast(b *testing.B) {
	data, err := benchData()
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
	data, err := benchData()
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
	path := os.Getenv("MEMSCAN_BENCH_FILE")
	if path == "" {
		b.Skip("set MEMSCAN_BENCH_FILE to a snapshot pickle")
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	for b.Loop() {
		if _, err := snapshot.DecodeFile(context.Background(), path); err != nil {
			b.Fatal(err)
		}
	}
}
