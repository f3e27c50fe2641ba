package tracer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/memscan/memscan/load"
)

// BenchmarkDecodeTracer decodes a synthetic tracer file: the fixture's tensors repeated 3000 times (21000
// tensors, about 30 MB with indent=4 like the tracer writes).
func BenchmarkDecodeTracer(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join("testdata", "small_rank0.json"))
	if err != nil {
		b.Fatal(err)
	}
	var doc map[string]map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		b.Fatal(err)
	}
	tensors := doc["cuda:0"]["tensors"].([]any)
	var many []any
	for range 3000 {
		many = append(many, tensors...)
	}
	doc["cuda:0"]["tensors"] = many
	doc["cuda:0"]["peak_memory_mb"] = 1e6
	data, err := json.MarshalIndent(doc, "", "    ")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		in, err := load.Decode(context.Background(), "bench.json", bytes.NewReader(data))
		if err != nil {
			b.Fatal(err)
		}
		// json.MarshalIndent sorts keys, so "cpu" comes first.
		if n := len(in.Tracer.Devices[1].Tensors); n != len(many) {
			b.Fatalf("decoded %d tensors, want %d", n, len(many))
		}
	}
}
