package static

import (
	"strings"
	"testing"
)

// Hostile sizes fail fast with the key and its limit, never as a wrapped or saturated number; documents of the
// wrong shape name the expected one.
func TestLimitsAndShapes(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{`{"model":{"preset":"llama3-8b"},"training":{"seq_length":281474976710656}}`, "training.seq_length: 281474976710656 exceeds the limit of 16777216"},
		{`{"model":{"preset":"llama3-8b","vocab_size":1152921504606846976}}`, "model.vocab_size: 1152921504606846976 exceeds the limit of 16777216"},
		{`{"model":{"preset":"llama3-8b","num_layers":1000000000}}`, "model.num_layers: 1000000000 exceeds the limit of 4096"},
		{`{"model":{"preset":"llama3-8b"},"hardware":{"num_gpus":1099511627776}}`, "hardware.num_gpus: 1099511627776 exceeds the limit"},
		// 8 B · 32 · 32 heads · (2^24)² = 2.3e18 B of scores, only where the kernel forms them (math, unfused).
		{`{"model":{"preset":"llama3-8b"},"training":{"micro_batch_size":32,"seq_length":16777216,"attention":"math"}}`, "the attention scores (micro-batch × heads × sequence²) would take 2.31e+18 bytes"},
		{`{"model":{"preset":"llama3-8b"},"training":{"micro_batch_size":1048576,"seq_length":16777216}}`, "the logits (micro-batch × sequence × vocab) would take"},
		{`{"model":{"preset":"llama3-8b"},"training":{"seq_length":1e300}}`, "training.seq_length: expected an integer, got 1e300"},
		{`{"model":{"preset":"llama3-8b"},"training":{"train_tokens":1e300}}`, "training.train_tokens: 1e+300 exceeds the limit"},
		{`{"model":{"preset":"llama3-8b"},"training":{"lora":{"rank":100000000}}}`, "training.lora.rank: 100000000 exceeds the limit of 65536"},
		{`[{"model":{"preset":"llama3-8b"}}]`, `config: expected an object such as {"model": {"preset": "llama3-8b"}}, got an array`},
		{`"llama3-8b"`, "config: expected an object such as"},
		{`{"model":["llama3-8b"]}`, "model: expected an object, got an array"},
		{`{"training":{"lora":{"rank":4,"targets":{"q_proj":true}}},"model":{"preset":"llama3-8b"}}`, `training.lora.targets: expected "all-linear" or a list of module names`},
		{"- model: llama3-8b\n", "config: expected an object such as"},
		// Floats: a correction of 1e308 printed "FITS: -8.0 EiB needed"; a custom GPU of 9.3e12 GB or 1e-300
		// TFLOPS gave a negative capacity, +Inf hours or a 0-byte static_report.json.
		{`{"model":{"preset":"llama3-8b"},"corrections":{"weights":1e308}}`, "corrections.weights: 1e+308 (must be in [0.01, 100]; 1 means no correction)"},
		{`{"model":{"preset":"llama3-8b"},"corrections":{"optimizer":0}}`, "corrections.optimizer: 0 (must be in [0.01, 100]"},
		{`{"model":{"preset":"llama3-8b"},"hardware":{"custom":{"memory_gb":9.3e12,"bandwidth_tbs":3,"bf16_tflops":1000}}}`, "hardware.custom.memory_gb: 9.3e+12 exceeds the limit of 100000"},
		{`{"model":{"preset":"llama3-8b"},"hardware":{"custom":{"memory_gb":80,"bandwidth_tbs":3,"bf16_tflops":1e-300}}}`, "hardware.custom.bf16_tflops: 1e-300 is below the smallest rate"},
		{`{"model":{"preset":"llama3-8b"},"hardware":{"custom":{"memory_gb":-80,"bandwidth_tbs":3,"bf16_tflops":1000}}}`, "hardware.custom.memory_gb: -80 (must be > 0)"},
		{`{"model":{"preset":"llama3-8b"},"allocator":{"nccl_mib":1e15}}`, "allocator.nccl_mib: 1e+15 exceeds the limit of 1048576 MiB"},
		{`{"model":{"preset":"llama3-8b"},"hardware":{"mfu":1e400}}`, "hardware.mfu: 1e400 is out of range"},
		{"model:\n  preset: llama3-8b\nhardware:\n  mfu: .nan\n", "line 4, column 8: hardware.mfu: .nan is not a finite number"},
	} {
		_, err := ParseConfig([]byte(tc.doc), !strings.HasPrefix(tc.doc, "{") && !strings.HasPrefix(tc.doc, "["))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%.80s: error %v, want it to contain %q", tc.doc, err, tc.want)
		}
	}
	// Flash works in tiles: the same sizes resolve (logits 16 B · 32 · 2^24 · 128256 = 1.10e18 B, under 2^60).
	for _, att := range []string{"flash", "sdpa", "efficient"} {
		if _, err := ParseConfig([]byte(`{"model":{"preset":"llama3-8b"},"training":{"micro_batch_size":32,"seq_length":16777216,"attention":"`+att+`"}}`), false); err != nil {
			t.Errorf("16M tokens × 32 under %s: %v", att, err)
		}
	}
	if _, err := ParseConfig([]byte(`{"model":{"preset":"gpt2"},"name":"`+strings.Repeat("x", maxConfigBytes)+`"}`), false); err == nil ||
		!strings.Contains(err.Error(), "a static config is at most") {
		t.Errorf("oversized config: %v", err)
	}
	// At the limits everything still estimates with exact (non-negative, finite) numbers.
	c := DefaultConfig()
	c.Model.Preset = "llama3-405b"
	c.Training.SeqLength, c.Training.MicroBatchSize = 1<<20, 1
	r, err := Estimate(c)
	if err != nil {
		t.Fatal(err)
	}
	if r.Summary.PeakMemoryBytes <= 0 || r.Summary.DeviceTotalBytes < r.Summary.PeakMemoryBytes {
		t.Errorf("1M-token 405B: peak %d, device %d", r.Summary.PeakMemoryBytes, r.Summary.DeviceTotalBytes)
	}
}

// FuzzParseConfig: any input either fails with an error or yields a config that estimates without panicking,
// within the documented limits (so quickly), with non-negative peaks in their order.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		`{"model":{"preset":"llama3-8b"},"parallel":{"tp":2},"hardware":{"num_gpus":2}}`,
		`{"model":{"num_layers":1,"hidden_size":8,"num_attention_heads":2,"vocab_size":3},"mode":"inference"}`,
		`{"framework":"hf","model":{"preset":"gpt2"},"training":{"precision":"amp-bf16","micro_batch_size":4}}`,
		`{"framework":"torchtune","model":{"preset":"llama3.2-1b"},"training":{"lora":{"rank":8,"base_dtype":"nf4"},"packed_sequences":true}}`,
		`{"mode":"inference","model":{"preset":"llama3-8b"},"inference":{"kv_cache":{"implementation":"paged"}}}`,
		`{"framework":"torchtitan","model":{"preset":"llama3-8b"},"training":{"recompute":"selective","float8":true,"compile":true},"hardware":{"num_gpus":8}}`,
		`[]`, `{"model":{"num_layers":-1}}`, `{"training":{"seq_length":9223372036854775807}}`,
	} {
		f.Add([]byte(s), false)
	}
	f.Add([]byte("model:\n  preset: mixtral-8x7b\nparallel:\n  ep: 2\nhardware:\n  num_gpus: 2\n"), true)
	f.Fuzz(func(t *testing.T, data []byte, y bool) {
		c, err := ParseConfig(data, y)
		if err != nil {
			return
		}
		r, err := Estimate(*c)
		if err != nil {
			t.Fatalf("resolved config failed to estimate: %v", err)
		}
		s := r.Summary
		if s.PeakMemoryBytes < 0 || s.PeakReservedBytes < s.PeakMemoryBytes || s.DeviceTotalBytes < s.PeakReservedBytes {
			t.Fatalf("%q: peak %d reserved %d device %d", data, s.PeakMemoryBytes, s.PeakReservedBytes, s.DeviceTotalBytes)
		}
	})
}
