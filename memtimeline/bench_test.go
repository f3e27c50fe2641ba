package memtimeline_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/memscan/memscan/load"
)

// BenchmarkDecodeRaw decodes a raw event list of 100k create/destroy pairs, the form whose per-number cost
// dominates large profiler exports.
func BenchmarkDecodeRaw(b *testing.B) {
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i := range 100_000 {
		if i > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, "[%d,2,%d,4],[%d,4,-%d,4]", 1000*i+1000, 512+i, 1000*i+1500, 512+i)
	}
	buf.WriteByte(']')
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		in, err := load.Decode(context.Background(), "timeline.raw.json", bytes.NewReader(data))
		if err != nil || in.Timeline == nil {
			b.Fatal(in, err)
		}
	}
}
