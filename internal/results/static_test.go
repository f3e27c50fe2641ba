package results

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/static"
)

// Counts in the console and Markdown views take the singular noun for one: "(1 micro-batch)", never
// "(1 micro-batches)".
func TestStaticViewPlurals(t *testing.T) {
	cases := []struct {
		gbs        int
		want, bad  string
		trainSteps int
	}{
		{8, "(1 micro-batch)", "1 micro-batches", 1},   // dp 8 × micro-batch 1 × 1 = 8
		{32, "(4 micro-batches)", "4 micro-batch)", 2}, // 32 / 8 = 4 micro-batches
	}
	for _, tc := range cases {
		cfg, err := static.LoadConfig("../../testdata/static/llama3-8b-fsdp8.json")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Training.GlobalBatchSize, cfg.Parallel.NumMicrobatches = tc.gbs, 0
		cfg.Training.TrainTokens, cfg.Training.TrainSteps = 0, tc.trainSteps
		r, err := static.Estimate(*cfg)
		if err != nil {
			t.Fatal(err)
		}
		var text, md strings.Builder
		if err := WriteStaticText(&text, r); err != nil {
			t.Fatal(err)
		}
		if err := WriteStaticMarkdown(&md, r); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text.String(), tc.want) || strings.Contains(text.String(), tc.bad) {
			t.Errorf("global batch %d: console view lacks %q or has %q", tc.gbs, tc.want, tc.bad)
		}
		for name, out := range map[string]string{"console": text.String(), "markdown": md.String()} {
			if tc.trainSteps == 1 && (strings.Contains(out, " 1 steps") || !strings.Contains(out, " 1 step:")) {
				t.Errorf("%s view with one training step: want \"1 step:\"", name)
			}
		}
	}
}

// renderStatic estimates cfg (after edit) and renders the console view, static_report.md and the JSON decoded
// into a generic map, so the tests read the keys exactly as users' scripts do.
func renderStatic(t *testing.T, path string, edit func(*static.Config)) (*static.Report, string, string, map[string]any) {
	t.Helper()
	cfg, err := static.LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(cfg)
	}
	r, err := static.Estimate(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	var text, md, js strings.Builder
	for _, w := range []func() error{
		func() error { return WriteStaticText(&text, r) },
		func() error { return WriteStaticMarkdown(&md, r) },
		func() error { return WriteStaticJSON(&js, r) },
	} {
		if err := w(); err != nil {
			t.Fatal(err)
		}
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(js.String()), &m); err != nil {
		t.Fatalf("static_report.json: %v", err)
	}
	return r, text.String(), md.String(), m
}

// jsonKeys lists the keys of the object at key in m ("" = m itself).
func jsonKeys(t *testing.T, m map[string]any, key string) []string {
	t.Helper()
	obj := m
	if key != "" {
		var ok bool
		if obj, ok = m[key].(map[string]any); !ok {
			t.Fatalf("static_report.json has no object %q", key)
		}
	}
	return slices.Sorted(maps.Keys(obj))
}

// The views show the new parts of the report model: the framework, PyTorch's attention kernel choice, how
// reserved was predicted, the LoRA split and the predicted out-of-memory point. Expected figures are derived
// from the configs' dimensions by hand, not read back from the report.
func TestStaticViewNewSections(t *testing.T) {
	const gib = 1 << 30
	// Llama-3 8B: hidden 4096, 8 KV heads of 128 (k/v out 1024), ffn 14336, 32 layers.
	const h, kv, ffn, layers = 4096, 1024, 14336, 32
	// LoRA r=16 on all seven linears: r·(in + out) per adapter pair.
	loraParams := int64(16 * layers * (2*(h+h) + 2*(h+kv) + 3*(h+ffn)))
	cases := []struct {
		name      string
		config    string
		edit      func(*static.Config)
		text, md  []string // substrings each view must show
		notInText []string
		json      map[string][]string // object → its exact keys
		check     func(t *testing.T, r *static.Report, m map[string]any)
	}{
		{
			name:   "qlora",
			config: "../../testdata/static/llama3-8b-qlora-rtx4090.json",
			text: []string{
				"Framework: hf (",
				"LoRA r=16 on q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj: " +
					commas(loraParams) + " adapter params (fp32, " + units.Bytes(4*loraParams) + "); frozen nf4 base ",
				// One dequantized bf16 weight: the largest is an MLP projection, ffn × hidden.
				"; dequantization temporary " + units.Bytes(2*ffn*h) + "\n",
				"Attention: sdpa → flash (", "keeps no s² tensor",
				"Reserved: ", "(caching-allocator replay of the predicted allocation sequence; ",
			},
			md: []string{
				"- Framework: hf\n", "## LoRA\n", "| rank | 16 |\n", "| adapter_params | " + commas(loraParams) + " |\n",
				"| base_dtype | nf4 |\n", "| adapter_bytes | " + commas(4*loraParams) + " (" + units.Bytes(4*loraParams) + ") |\n",
				"| dequant_temp_bytes | " + commas(2*ffn*h) + " (", "| reserved_source | allocator replay |\n",
			},
			notInText: []string{"Out of memory"},
			json: map[string][]string{
				"lora": {"adapter_bytes", "adapter_dtype", "adapter_params", "base_dtype", "dequant_temp_bytes", "frozen_base_bytes", "rank", "targets"},
			},
			check: func(t *testing.T, r *static.Report, m map[string]any) {
				if got := m["lora"].(map[string]any)["adapter_params"]; got != float64(loraParams) {
					t.Errorf("lora.adapter_params = %v, want %d", got, loraParams)
				}
			},
		},
		{
			// fp32 has no flash kernel and grouped-query heads (32 query, 8 KV) rule out memory-efficient
			// attention, so SDPA runs the math kernel.
			name:   "fp32 math",
			config: "../../testdata/static/h200/llama1b-eager-b2-s1024.json",
			edit:   func(c *static.Config) { c.Training.Precision, c.Training.Attention = "fp32", "sdpa" },
			text: []string{
				"Attention: sdpa → math (SDPA falls back to the math kernel: flash needs fp16/bf16 and memory-efficient attention has no grouped-query heads (32 query, 8 KV heads)); keeps the b·h·s² scores and probabilities\n",
			},
			md:        []string{"## Attention\n\nsdpa → math (", "(32 query, 8 KV heads)); keeps the b·h·s² scores and probabilities.\n"},
			notInText: []string{"LoRA", "Out of memory"},
			json:      map[string][]string{"attention": {"kernel", "requested", "why"}},
			check: func(t *testing.T, r *static.Report, m map[string]any) {
				a := m["attention"].(map[string]any)
				if a["requested"] != "sdpa" || a["kernel"] != "math" {
					t.Errorf("attention = %v, want sdpa → math", a)
				}
			},
		},
		{
			// batch 8 × 8192 tokens: the SwiGLU product entering down_proj is b·s·ffn bf16 values.
			name:   "oom",
			config: "../../testdata/static/h200/llama8b-oom-b8-s8192-snap.json",
			text: []string{
				"Out of memory at step 1 forward, layer 9 mlp.down_proj: " + units.Bytes(8*8192*ffn*2) + " requested with ",
				"(the GPU less CUDA context and NCCL)\n\nMEMORY PER GPU",
				", what the step would need on a GPU large enough\n",
			},
			md:   []string{"**Out of memory at step 1 forward, layer 9 mlp.down_proj: " + units.Bytes(8*8192*ffn*2) + " requested with "},
			json: map[string][]string{"oom": {"allocated_bytes", "layer", "limit_bytes", "operator", "phase", "request_bytes", "step"}},
			check: func(t *testing.T, r *static.Report, m map[string]any) {
				o := m["oom"].(map[string]any)
				if o["request_bytes"] != float64(8*8192*ffn*2) || o["layer"] != float64(9) || o["phase"] != "forward" {
					t.Errorf("oom = %v", o)
				}
				// The limit is the GPU's memory less what the CUDA context and NCCL hold (under 1 GiB here).
				if lim, c := o["limit_bytes"].(float64), float64(r.Fit.CapacityBytes); lim >= c || lim < c-gib {
					t.Errorf("oom.limit_bytes = %v, want the capacity %v less the CUDA context and NCCL", lim, c)
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, text, md, m := renderStatic(t, tc.config, tc.edit)
			for _, want := range tc.text {
				if !strings.Contains(text, want) {
					t.Errorf("console view lacks %q:\n%s", want, text)
				}
			}
			for _, bad := range tc.notInText {
				if strings.Contains(text, bad) {
					t.Errorf("console view shows %q", bad)
				}
			}
			for _, want := range tc.md {
				if !strings.Contains(md, want) {
					t.Errorf("static_report.md lacks %q", want)
				}
			}
			// Keys every report carries, whatever its config.
			if m["summary"].(map[string]any)["reserved_source"] != r.Summary.ReservedSource || r.Summary.ReservedSource == "" {
				t.Errorf("summary.reserved_source = %v", m["summary"].(map[string]any)["reserved_source"])
			}
			if m["metadata"].(map[string]any)["framework"] != "hf" {
				t.Errorf("metadata.framework = %v, want hf", m["metadata"].(map[string]any)["framework"])
			}
			for obj, want := range tc.json {
				if got := jsonKeys(t, m, obj); !slices.Equal(got, want) {
					t.Errorf("static_report.json %s keys = %v, want %v", obj, got, want)
				}
			}
			tc.check(t, r, m)
		})
	}
}

// Reserved says how it was predicted and how far above peak allocated it is; a config that names its
// attention kernel gets no attention line (the workload line names it), and no framework line without one.
func TestStaticViewReservedLine(t *testing.T) {
	// Megatron's distributed optimizer keeps a persistent gradient buffer, which keeps the flat allowance.
	r, text, md, _ := renderStatic(t, "../../testdata/static/llama2-70b-tp8-pp2.yaml", nil)
	s := r.Summary
	want := "Reserved: " + units.Bytes(s.PeakReservedBytes) + " (flat allowance: allocator rounding + allocator.fragmentation_fraction; " +
		units.Bytes(s.PeakReservedBytes-s.PeakMemoryBytes) + " above peak allocated)\n"
	if s.ReservedSource != "flat allowance" || !strings.Contains(text, want) || !strings.Contains(md, strings.TrimSuffix(want, "\n")+".\n") {
		t.Errorf("reserved source %q; views lack %q", s.ReservedSource, want)
	}
	for _, bad := range []string{"Attention:", "Framework:", "LoRA", "Out of memory"} {
		if strings.Contains(text, bad) {
			t.Errorf("console view shows %q for a Megatron-style config with explicit flash", bad)
		}
	}
	if !strings.Contains(md, "## Attention\n\nflash (explicit); keeps no s² tensor") {
		t.Error("static_report.md lacks the explicit attention choice")
	}
}

// A replayed config's Reserved line ends with the replayed pool at its peak: its segment count and its cached
// bytes, also in static_report.json. Every segment holds at least one 2 MiB block, and the pool's peak came from a
// request that a live block then used.
func TestStaticViewReservedSegments(t *testing.T) {
	r, text, md, m := renderStatic(t, "../../testdata/static/h200/llama1b-eager-b2-s1024.json", nil)
	s := r.Summary
	if got := m["summary"].(map[string]any)["reserved_segments"]; got != float64(s.ReservedSegments) {
		t.Errorf("summary.reserved_segments = %v, want %d", got, s.ReservedSegments)
	}
	if s.ReservedSource != "allocator replay" {
		t.Fatalf("reserved source %q, want the allocator replay", s.ReservedSource)
	}
	if s.ReservedSegments <= 0 || int64(s.ReservedSegments)*2<<20 > s.PeakReservedBytes {
		t.Errorf("%d segments in %d reserved bytes", s.ReservedSegments, s.PeakReservedBytes)
	}
	if f := s.ReservedFreeAtPeakBytes; f < 0 || f >= s.PeakReservedBytes {
		t.Errorf("%d B cached at the peak; reserved %d, peak allocated %d", f, s.PeakReservedBytes, s.PeakMemoryBytes)
	}
	want := fmt.Sprintf(" above peak allocated); %d segments, %s cached at the peak", s.ReservedSegments, units.Bytes(s.ReservedFreeAtPeakBytes))
	for view, out := range map[string]string{"console": text, "markdown": md} {
		if !strings.Contains(out, want) {
			t.Errorf("%s view lacks %q", view, want)
		}
	}
}

// TestStaticViewPrecisionLabel: the header names the precision the report models (bf16-mixed, not just its
// bf16 compute dtype), and inference names its weight dtype.
func TestStaticViewPrecisionLabel(t *testing.T) {
	for _, tc := range []struct {
		path, head, md string
		edit           func(*static.Config)
	}{
		{"../../testdata/static/llama3-8b-fsdp8.json", "memscan static — llama3-8b-fsdp8 (train, bf16-mixed)\n", "- Mode: train, precision bf16-mixed\n", nil},
		{"../../testdata/static/llama3-8b-fsdp8.json", "(train, fp16-mixed)\n", "precision fp16-mixed\n", func(c *static.Config) { c.Training.Precision = "fp16-mixed" }},
		{"../../testdata/static/llama2-7b-inference.json", "(inference, weights bf16)\n", "- Mode: inference, precision weights bf16\n", nil},
	} {
		_, text, md, _ := renderStatic(t, tc.path, tc.edit)
		if !strings.Contains(text, tc.head) || !strings.Contains(md, tc.md) {
			t.Errorf("%s: header %q / markdown lacks %q", tc.path, strings.SplitN(text, "\n", 2)[0], tc.md)
		}
	}
}
