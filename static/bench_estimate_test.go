package static

import (
	"path/filepath"
	"testing"
)

// BenchmarkEstimateReplayed estimates a single-GPU training config whose reserved memory comes from the
// allocator replay (the path searches such as --max-batch-size repeat many times).
func BenchmarkEstimateReplayed(b *testing.B) {
	c, err := LoadConfig(filepath.Join("..", "testdata", "static", "h200", "llama1b-bf16-b4-s2048-ckpt.json"))
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := Estimate(*c); err != nil {
			b.Fatal(err)
		}
	}
}
