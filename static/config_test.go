package static

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/units"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc, want string
		yaml            bool
	}{
		{"unknown key", `{"model":{"preset":"llama3-8b","num_heads":32}}`, "model.num_heads: unknown key", false},
		{"unknown section", `{"modle":{}}`, "modle: unknown key", false},
		{"zero heads", `{"model":{"num_layers":2,"hidden_size":64,"num_attention_heads":0,"vocab_size":10}}`, "model.num_attention_heads: 0 (must be > 0)", false},
		{"tp does not divide heads", `{"model":{"preset":"llama3-8b"},"parallel":{"tp":3},"hardware":{"num_gpus":3}}`, "parallel.tp: 3 does not divide model.num_attention_heads (32)", false},
		{"heads do not divide hidden", `{"model":{"num_layers":2,"hidden_size":100,"num_attention_heads":3,"vocab_size":10}}`, "model.num_attention_heads: 3 does not divide model.hidden_size (100)", false},
		{"zero layers", `{"model":{"preset":"llama3-8b","num_layers":0}}`, "model.num_layers: 0 (must be > 0", false},
		{"negative batch", `{"model":{"preset":"llama3-8b"},"training":{"micro_batch_size":-2}}`, "training.micro_batch_size: -2 (must be > 0)", false},
		{"bad precision", `{"model":{"preset":"llama3-8b"},"training":{"precision":"fp64"}}`, `training.precision: "fp64" (must be one of`, false},
		{"bad zero", `{"model":{"preset":"llama3-8b"},"parallel":{"zero_stage":4}}`, "parallel.zero_stage: 4", false},
		{"layout mismatch", `{"model":{"preset":"llama3-8b"},"parallel":{"dp":2,"tp":2},"hardware":{"num_gpus":8}}`, "does not equal hardware.num_gpus (8)", false},
		{"kv heads", `{"model":{"preset":"llama3-8b","num_kv_heads":5}}`, "model.num_kv_heads: 5 does not divide model.num_attention_heads (32)", false},
		{"megatron pp does not divide layers", `{"framework":"megatron","model":{"preset":"llama3-8b"},"parallel":{"pp":3},"hardware":{"num_gpus":3}}`, "does not divide model.num_layers (32); Megatron-LM splits evenly", false},
		{"pp_layers do not add up", `{"model":{"preset":"llama3-8b"},"parallel":{"pp":2,"pp_layers":[16,15]},"hardware":{"num_gpus":2}}`, "parallel.pp_layers: the stages hold 31 layers; model.num_layers is 32", false},
		{"pp_layers per stage", `{"model":{"preset":"llama3-8b"},"parallel":{"pp":2,"virtual_stages":2,"pp_layers":[16,16]},"hardware":{"num_gpus":2}}`, "parallel.pp_layers: 2 entries; pp·virtual_stages = 4 stages need one each", false},
		{"1f1b with virtual stages", `{"model":{"preset":"llama3-8b"},"parallel":{"pp":2,"virtual_stages":2,"pp_schedule":"gpipe"},"hardware":{"num_gpus":2}}`, "parallel.pp_schedule: gpipe runs one stage per rank", false},
		{"unknown preset", `{"model":{"preset":"llama9"}}`, `model.preset: unknown preset "llama9"`, false},
		{"unknown gpu", `{"model":{"preset":"llama3-8b"},"hardware":{"gpu":"h900"}}`, `hardware.gpu: unknown GPU "h900"`, false},
		{"wrong type", `{"model":{"preset":"llama3-8b","num_layers":"many"}}`, `model.num_layers: expected an integer, got the string "many"`, false},
		{"syntax", "{\"model\": {\"preset\": \"llama3-8b\",}}", "line 1, column 34: invalid JSON: invalid character '}'", false},
		{"trailing", `{"model":{"preset":"llama3-8b"}} {}`, "trailing data", false},
		{"ep without experts", `{"model":{"preset":"llama3-8b"},"parallel":{"ep":2},"hardware":{"num_gpus":2}}`, "parallel.ep: 2 needs a mixture-of-experts model", false},
		{"global batch", `{"model":{"preset":"llama3-8b"},"training":{"global_batch_size":7,"micro_batch_size":2}}`, "training.global_batch_size: 7 is not a multiple", false},
		{"dropout", `{"model":{"preset":"llama3-8b"},"training":{"hidden_dropout":1.5}}`, "training.hidden_dropout: 1.5", false},
		{"custom gpu", `{"model":{"preset":"llama3-8b"},"hardware":{"custom":{"name":"x","memory_gb":24}}}`, "hardware.custom.bandwidth_tbs: 0 (must be > 0)", false},
		{"learned positions", `{"model":{"preset":"gpt2"},"training":{"seq_length":2048}}`, "training.seq_length: 2048 exceeds model.max_position_embeddings (1024)", false},
		{"yaml unknown", "model:\n  preset: llama3-8b\ntraining:\n  seq_lenght: 4096\n", "line 4, column 3: training.seq_lenght: unknown key (did you mean \"seq_length\"?)", true},
		{"yaml syntax", "model: [unclosed\n", "invalid YAML", true},
		// YAML errors are placed in the YAML as written, not at a byte offset into a JSON copy of it.
		{"yaml wrong type", "model:\n  preset: llama3-8b\ntraining:\n  seq_length: many\n", "line 4, column 15: training.seq_length: expected an integer, got the string \"many\"", true},
		{"yaml fraction", "model:\n  preset: llama3-8b\nparallel:\n  tp: 1.5\n", "line 4, column 7: parallel.tp: expected an integer, got 1.5", true},
		{"yaml duplicate key", "model:\n  preset: llama3-8b\nmodel:\n  preset: gpt2\n", `line 3, column 1: duplicate key "model" (first at line 1)`, true},
		{"yaml second document", "model:\n  preset: llama3-8b\n---\nmodel:\n  preset: gpt2\n", "line 3, column 1: a second YAML document", true},
		{"json duplicate key", `{"model":{"preset":"llama3-8b","preset":"gpt2"}}`, `line 1, column 32: duplicate key "preset" (first at line 1)`, false},
		{"yaml no model", "training:\n  seq_length: 4096\n", "model.num_layers: 0 (must be > 0; set model.preset", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.doc), tc.yaml)
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

// The YAML example and its JSON spelling resolve to the same config and estimate.
func TestYAMLEqualsJSON(t *testing.T) {
	y, err := LoadConfig("../testdata/static/llama2-70b-tp8-pp2.yaml")
	if err != nil {
		t.Fatal(err)
	}
	j, err := ParseConfig([]byte(`{"name":"llama2-70b-tp8-pp2","model":{"preset":"llama2-70b"},
		"training":{"micro_batch_size":1,"seq_length":4096,"global_batch_size":512,"precision":"bf16-mixed","optimizer_impl":"fused","attention":"flash","recompute":"selective","loss":"fused"},
		"parallel":{"tp":8,"pp":2,"sequence_parallel":true,"distributed_optimizer":true},"hardware":{"gpu":"h100-sxm","num_gpus":64}}`), false)
	if err != nil {
		t.Fatal(err)
	}
	ry, _ := Estimate(*y)
	rj, _ := Estimate(*j)
	if ry.Summary != rj.Summary {
		t.Errorf("YAML and JSON summaries differ:\n%+v\n%+v", ry.Summary, rj.Summary)
	}
}

// Every example config in testdata/static loads and estimates.
func TestExampleConfigs(t *testing.T) {
	files, _ := filepath.Glob("../testdata/static/*.*")
	more, _ := filepath.Glob("../testdata/static/megatron/*.json")
	files = append(files, more...)
	if len(files) < 5 {
		t.Fatalf("expected example configs, found %v", files)
	}
	for _, f := range files {
		c, err := LoadConfig(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if _, err := Estimate(*c); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// Golden: the README example's static_report.json. Regenerate with go test ./static -run Golden -update.
func TestGoldenReport(t *testing.T) {
	c, err := LoadConfig("../testdata/static/llama3-8b-fsdp8.json")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Estimate(*c)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := units.WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "llama3-8b-fsdp8.static_report.json")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if b.String() != string(want) {
		t.Errorf("static_report.json differs from %s; rerun with -update if the change is intended", golden)
	}
	for _, key := range []string{`"param_count"`, `"weight_memory_bytes"`, `"grad_memory_bytes"`, `"optimizer_memory_bytes"`,
		`"activation_memory_bytes"`, `"temporary_memory_bytes"`, `"persistent_memory_bytes"`, `"peak_memory_bytes"`, `"peak_stage"`,
		`"peak_reserved_bytes"`, `"operators"`, `"metadata"`, `"formula"`, `"persistent"`} {
		if !strings.Contains(b.String(), key) {
			t.Errorf("static_report.json lacks %s", key)
		}
	}
}
