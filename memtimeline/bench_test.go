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

// BenchmarkDecodePlot decodes plot-form timelines of 1 and 2 million points with eight categories, the size of a
// long profiler export: the cost per point must stay flat (it was 7.8 µs through encoding/json's tokens).
func BenchmarkDecodePlot(b *testing.B) {
	for _, n := range []int{1_000_000, 2_000_000} {
		var buf bytes.Buffer
		buf.WriteString("[[")
		for i := range n {
			if i > 0 {
				buf.WriteByte(',')
			}
			fmt.Fprintf(&buf, "%d", i)
		}
		buf.WriteString("],[")
		for i := range n {
			if i > 0 {
				buf.WriteByte(',')
			}
			fmt.Fprintf(&buf, "[0,%d,%d,5,6,7,8,9,10]", i%1000*1000, (i*7)%5000*100)
		}
		buf.WriteString("]]")
		data := buf.Bytes()
		b.Run(fmt.Sprintf("points=%dM", n/1_000_000), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				in, err := load.Decode(context.Background(), "timeline.json", bytes.NewReader(data))
				if err != nil || in.Timeline.Points() != n {
					b.Fatal(err)
				}
			}
		})
	}
}
