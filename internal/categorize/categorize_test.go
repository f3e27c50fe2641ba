package categorize

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/memscan/memscan/snapshot"
)

// frameSpec is file:line:function; the first ":<digits>:" separates them, so C++ names and drive letters survive.
var frameSpec = regexp.MustCompile(`^(.*?):(\d+):(.*)$`)

// fr builds frames from "file:line:function" strings, innermost first.
func fr(specs ...string) []snapshot.Frame {
	out := make([]snapshot.Frame, len(specs))
	for i, s := range specs {
		m := frameSpec.FindStringSubmatch(s)
		if m == nil {
			panic("bad frame spec " + s)
		}
		line, _ := strconv.Atoi(m[2])
		out[i] = snapshot.Frame{Filename: m[1], Line: line, Name: m[3]}
	}
	return out
}

const (
	sp      = "/usr/lib/python3.11/site-packages/"
	user    = "/home/alice/proj/"
	modCall = sp + "torch/nn/modules/module.py:1747:_call_impl"
	modWrap = sp + "torch/nn/modules/module.py:1736:_wrapped_call_impl"
)

func TestDefaultRulesCompile(t *testing.T) {
	r := Default()
	if len(r.rules) < 20 {
		t.Fatalf("default rules: %d compiled, want at least 20", len(r.rules))
	}
	// Every default category must be produced by at least one rule (Unknown comes from the walk itself, Temporary
	// from lifetimes).
	produced := map[string]bool{}
	for _, ru := range r.rules {
		produced[ru.category] = true
	}
	for _, c := range DefaultCategories() {
		if c != Unknown && c != Temporary && !produced[c] {
			t.Errorf("no default rule produces category %q", c)
		}
	}
}

func TestDecideDefaults(t *testing.T) {
	tests := []struct {
		name     string
		frames   []snapshot.Frame
		category string
		rule     string
		site     string
		pass     string
	}{
		{
			name:     "user forward beats torch linear",
			frames:   fr(sp+"torch/nn/modules/linear.py:125:forward", modCall, modWrap, user+"moe_layer.py:88:forward", modCall, user+"train.py:40:train_step"),
			category: ExpertMoE, rule: "moe-files", site: user + "moe_layer.py:88:forward", pass: "user",
		},
		{
			name:     "torch linear decides when no user frame matches",
			frames:   fr(sp+"torch/nn/modules/linear.py:125:forward", modCall, modWrap, user+"model.py:61:forward", modCall, user+"train.py:40:main"),
			category: LinearMatMul, rule: "linear-files", site: "torch/nn/modules/linear.py:125:forward", pass: "framework",
		},
		{
			name:     "adamw init group",
			frames:   fr(sp+"torch/optim/adamw.py:95:_init_group", sp+"torch/optim/adamw.py:210:step", sp+"torch/optim/optimizer.py:487:wrapper", user+"train.py:77:main"),
			category: OptimizerState, rule: "torch-optim", site: "torch/optim/adamw.py:95:_init_group", pass: "framework",
		},
		{
			name:     "autograd backward from the python side",
			frames:   fr(sp+"torch/autograd/graph.py:825:_engine_run_backward", sp+"torch/autograd/__init__.py:347:backward", sp+"torch/_tensor.py:581:backward", user+"train.py:80:main"),
			category: Gradient, rule: "autograd-backward", site: "torch/autograd/graph.py:825:_engine_run_backward", pass: "framework",
		},
		{
			name: "accumulate grad from the autograd thread (C++ only)",
			frames: fr("??:0:torch::unwind::unwind()", "??:0:torch::CapturedTraceback::gather(bool, bool, bool)",
				"memory_snapshot.cpp:0:torch::cuda::(anonymous namespace)::gather_with_cpp()",
				"CUDACachingAllocator.cpp:0:c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long)",
				"??:0:torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor>&&)",
				"??:0:torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)"),
			category: Gradient, rule: "autograd-engine-native", site: "??:0:torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor>&&)", pass: "native",
		},
		{
			// stacks="all" on the H200: nll_loss's backward allocates its fp32 gradient on autograd's thread; the
			// loss's kernel decides before the engine's generic frames.
			name: "nll_loss backward from the autograd thread (C++ only)",
			frames: fr("??:0:torch::unwind::unwind()", "??:0:torch::CapturedTraceback::gather(bool, bool, bool)",
				"CUDACachingAllocator.cpp:0:c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(unsigned long, CUstream_st*)",
				"??:0:at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)",
				"RegisterCUDA_0.cpp:0:at::(anonymous namespace)::structured_nll_loss_backward_out_cuda_functional::set_output_raw_strided(long)",
				"Functions.cpp:0:torch::autograd::generated::NllLossBackward0_apply_functional(std::vector<at::Tensor>&&)",
				"??:0:torch::autograd::generated::NllLossBackward0::apply(std::vector<at::Tensor>&&)",
				"??:0:torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)"),
			category: LossLogits, rule: "loss-native", site: "RegisterCUDA_0.cpp:0:at::(anonymous namespace)::structured_nll_loss_backward_out_cuda_functional::set_output_raw_strided(long)", pass: "native",
		},
		{
			name:     "attention in user code",
			frames:   fr(sp+"torch/nn/functional.py:5500:scaled_dot_product_attention", user+"layers/attention.py:33:forward", modCall, user+"model.py:12:forward"),
			category: Attention, rule: "attention-files", site: user + "layers/attention.py:33:forward", pass: "user",
		},
		{
			name:     "deepep buffer",
			frames:   fr(sp+"deep_ep/buffer.py:210:dispatch", user+"moe.py:150:forward", modCall),
			category: Communication, rule: "deepep", site: "deep_ep/buffer.py:210:dispatch", pass: "user",
		},
		{
			name:     "nccl all_gather",
			frames:   fr(sp+"torch/distributed/distributed_c10d.py:3400:all_gather_into_tensor", sp+"torch/distributed/c10d_logger.py:81:wrapper", user+"train.py:20:sync"),
			category: Communication, rule: "collective-calls", site: "torch/distributed/distributed_c10d.py:3400:all_gather_into_tensor", pass: "framework",
		},
		{
			name:     "fsdp2 all-gather copy-in",
			frames:   fr(sp+"torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py:190:foreach_all_gather_copy_in", sp+"torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py:270:unshard", user+"train.py:20:step"),
			category: FSDP, rule: "fsdp", site: "torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py:190:foreach_all_gather_copy_in", pass: "framework",
		},
		{
			name:     "model.to(device) moves parameters",
			frames:   fr(sp+"torch/nn/modules/module.py:1326:convert", sp+"torch/nn/modules/module.py:942:_apply", sp+"torch/nn/modules/module.py:1340:to", user+"train.py:15:main"),
			category: Parameters, rule: "module-to-device", site: "torch/nn/modules/module.py:1326:convert", pass: "framework",
		},
		{
			name:     "embedding lookup",
			frames:   fr(sp+"torch/nn/functional.py:2551:embedding", sp+"torch/nn/modules/sparse.py:190:forward", modCall, user+"model.py:200:forward"),
			category: Embedding, rule: "embedding", site: "torch/nn/functional.py:2551:embedding", pass: "framework",
		},
		{
			name:     "rms norm in user code",
			frames:   fr(user+"model.py:40:_norm", user+"model.py:44:forward", modCall),
			category: Normalization, rule: "norm-functions", site: user + "model.py:40:_norm", pass: "user",
		},
		{
			name:     "relu via torch functional",
			frames:   fr(sp+"torch/nn/functional.py:1704:relu", user+"models.py:318:update_nodes", user+"models.py:90:forward", modCall),
			category: Activation, rule: "activation-functions", site: "torch/nn/functional.py:1704:relu", pass: "framework",
		},
		{
			name:     "cross entropy loss",
			frames:   fr(sp+"torch/nn/functional.py:3494:cross_entropy", user+"nn_utils.py:20:cross_entropy", user+"train.py:50:main"),
			category: LossLogits, rule: "loss", site: user + "nn_utils.py:20:cross_entropy", pass: "user",
		},
		{
			name:     "batch moved to device",
			frames:   fr(user+"data/loader.py:77:to_device", user+"train.py:30:main"),
			category: DataInput, rule: "data-functions", site: user + "data/loader.py:77:to_device", pass: "user",
		},
		{
			name:     "activation checkpoint recompute",
			frames:   fr(sp+"torch/utils/checkpoint.py:1120:recompute_fn", sp+"torch/utils/checkpoint.py:1000:unpack_hook", user+"train.py:80:main"),
			category: Autograd, rule: "checkpoint", site: "torch/utils/checkpoint.py:1120:recompute_fn", pass: "framework",
		},
		{
			name:     "windows paths",
			frames:   fr(`D:\Dev\a2\.venv\Lib\site-packages\torch\functional.py:422:einsum`, `D:\Dev\a2\.venv\Lib\site-packages\einops\einops.py:907:einsum`, `D:\Dev\a2\cs336_basics\model.py:117:forward`, `D:\Dev\a2\.venv\Lib\site-packages\torch\nn\modules\module.py:1762:_call_impl`),
			category: LinearMatMul, rule: "matmul-functions", site: `einops\einops.py:907:einsum`, pass: "user",
		},
		{
			name:     "plain forward falls back to activation",
			frames:   fr(user+"models.py:90:update_nodes", user+"models.py:70:forward", modCall, modWrap),
			category: Activation, rule: "forward-intermediate", site: user + "models.py:70:forward", pass: "fallback",
		},
		{
			name:     "nothing matches",
			frames:   fr(user+"script.py:10:main", user+"script.py:99:<module>"),
			category: Unknown, site: user + "script.py:10:main",
		},
		{
			name:     "only plumbing",
			frames:   fr("??:0:torch::unwind::unwind()", "??:0:_start"),
			category: Unknown, site: "??:0:torch::unwind::unwind()",
		},
		{
			name:     "no frames",
			frames:   nil,
			category: Unknown,
		},
	}
	r := Default()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := r.Decide(tc.frames)
			checkDecision(t, d, Decision{Category: tc.category, Rule: tc.rule, Frame: tc.site, Pass: tc.pass})
			if tc.frames == nil && d.Reason != ReasonNoStack {
				t.Errorf("reason %q, want %q", d.Reason, ReasonNoStack)
			}
		})
	}
}

// checkDecision compares the fields of got that want sets: category, rule and deciding frame always (empty rule
// and frame included), the walk pass and the user's site where want names them.
func checkDecision(t *testing.T, got, want Decision) {
	t.Helper()
	if got.Category != want.Category || got.Rule != want.Rule || got.Frame != want.Frame ||
		want.Pass != "" && got.Pass != want.Pass || want.Site != "" && got.Site != want.Site {
		t.Errorf("Decide = {cat %q rule %q frame %q site %q pass %q reason %q}, want {cat %q rule %q frame %q site %q pass %q}",
			got.Category, got.Rule, got.Frame, got.Site, got.Pass, got.Reason, want.Category, want.Rule, want.Frame, want.Site, want.Pass)
	}
}

func TestNoiseFramesNeverDecide(t *testing.T) {
	// module.py _call_impl would match no rule anyway; check the interpreter names from the viewer's hide list and
	// that a noise frame is never reported as the site.
	r := Default()
	frames := fr("??:0:_PyEval_EvalFrameDefault", "??:0:_PyObject_Call_Prepend", modCall, modWrap, user+"app.py:3:go")
	d := r.Decide(frames)
	if d.Site != user+"app.py:3:go" || d.FrameIndex != 4 {
		t.Fatalf("site = %q (frame %d), want the user frame at index 4", d.Site, d.FrameIndex)
	}
}

func TestPriorityBreaksTiesWithinFrame(t *testing.T) {
	// vllm's linear.py:create_weights matches both linear-files (60) and weight-init-functions (72).
	d := Default().Decide(fr(sp+"vllm/model_executor/layers/linear.py:300:create_weights", user+"serve.py:1:main"))
	if d.Rule != "weight-init-functions" || d.Category != Parameters {
		t.Fatalf("got %s/%s, want weight-init-functions/Parameters", d.Rule, d.Category)
	}
}

func TestUserRules(t *testing.T) {
	frames := fr(sp+"torch/nn/modules/linear.py:125:forward", modCall, user+"router_net.py:10:forward")
	// With the defaults, router_net.py:forward matches nothing, so torch's linear.py decides.
	if d := Default().Decide(frames); d.Category != LinearMatMul || d.Rule != "linear-files" {
		t.Fatalf("default decision %+v", d)
	}
	tests := []struct {
		name     string
		file     string
		category string
		rule     string
	}{
		{"yaml add rule", `
version: 1
new_categories: [Routing]
rules:
  - name: my-router
    category: Routing
    priority: 100
    file: [router_net]
`, "Routing", "my-router"},
		{"json override default by name", `{"new_categories":["Dense"],"rules":[{"name":"linear-files","category":"Dense","file":["linear.py"]}]}`, "Dense", "linear-files"},
		{"disable default", `
rules:
  - name: linear-files
    disabled: true
`, Activation, "forward-intermediate"},
		{"function regexp", `
new_categories: [Mine]
rules:
  - name: fwd
    category: Mine
    function_regexp: '^forward$'
    file: [router]
`, "Mine", "fwd"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Parse("user.rules", []byte(tc.file), nil)
			if err != nil {
				t.Fatal(err)
			}
			d := r.Decide(frames)
			if d.Category != tc.category || d.Rule != tc.rule {
				t.Fatalf("got %s/%s, want %s/%s", d.Category, d.Rule, tc.category, tc.rule)
			}
			cats := r.Categories()
			if cats[len(cats)-1] != Unknown {
				t.Errorf("Unknown must stay last: %v", cats)
			}
		})
	}
}

func TestUserNoiseAndFramework(t *testing.T) {
	// A user's own wrapper library can be declared framework, so the model file below it decides.
	frames := fr(user+"mylib/wrap.py:5:attention_wrapper", user+"model.py:9:moe_forward")
	if d := Default().Decide(frames); d.Category != Attention {
		t.Fatalf("default: %s, want Attention", d.Category)
	}
	r, err := Parse("u.yaml", []byte("framework:\n  - name: mylib\n    file: [/mylib/]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := r.Decide(frames); d.Category != ExpertMoE {
		t.Fatalf("with mylib as framework: %s (%s), want Expert/MoE", d.Category, d.Site)
	}
	// As plumbing (a training loop of the user's own) it never decides either, and is not the site.
	r, err = Parse("u.yaml", []byte("plumbing:\n  - name: mylib\n    file: [/mylib/]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := r.Decide(frames); d.Category != ExpertMoE || d.Site != user+"model.py:9:moe_forward" {
		t.Fatalf("with mylib as plumbing: %+v", d)
	}
	r, err = Parse("u.yaml", []byte("noise:\n  - name: mylib\n    file: [/mylib/]\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := r.Decide(frames); d.Category != ExpertMoE || d.FrameIndex != 1 {
		t.Fatalf("with mylib as noise: %+v", d)
	}
}

func TestBadRuleFiles(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"empty", "  \n", "bad.rules: empty file"},
		{"bad json", `{"rules": [}`, "invalid JSON"},
		{"unknown json field", `{"rulez": []}`, "rulez"},
		{"unknown yaml field", "rules:\n  - name: a\n    categroy: X\n    file: [x]\n", "categroy"},
		{"missing name", "rules:\n  - category: X\n    file: [x]\n", "rules[0].name"},
		{"missing category", "rules:\n  - name: a\n    file: [x]\n", `bad.rules:2:5: rules[0].category: "a": missing category`},
		{"nothing to match", "rules:\n  - name: a\n    category: X\n", "no file, function, module"},
		{"bad regexp", "rules:\n  - name: a\n    category: X\n    function_regexp: '(('\n", "function_regexp"},
		{"empty pattern", "rules:\n  - name: a\n    category: X\n    file: ['']\n", "file[0]: empty pattern"},
		{"duplicate", "rules:\n  - {name: a, category: Attention, file: [x]}\n  - {name: a, category: Gradient, file: [y]}\n", "bad.rules:3:12: rules[1].name: duplicate rule name"},
		{"version", "version: 7\n", "version"},
		{"native and fallback", "rules:\n  - {name: a, category: Attention, file: [x], native: true, fallback: true}\n", "native and fallback"},
		{"calls_back on a fallback rule", "rules:\n  - {name: a, category: Attention, file: [x], fallback: true, calls_back: true}\n", "calls_back applies"},
		{"plumbing without a pattern", "plumbing:\n  - {name: p}\n", `bad.rules:2:5: plumbing[0]: "p": no file`},
		{"wrong type", "rules: 3\n", "bad.rules:1:8: rules: expected an array, got 3"},
		// Strict parsing: what used to be ignored, truncated or taken silently.
		{"trailing data after a JSON object", `{"rules": []} {"rules": [{"name": "a"}]}`, "bad.rules:1:15: trailing data after the top-level value"},
		{"a second YAML document", "rules: []\n---\nrules:\n  - {name: a}\n", "bad.rules:2:1: a second YAML document"},
		{"version 1.5", "version: 1.5\n", "bad.rules:1:10: version: expected an integer, got 1.5"},
		{"version 0.9", `{"version": 0.9}`, "bad.rules:1:13: version: expected an integer, got 0.9"},
		{"duplicate YAML key", "rules: []\nversion: 1\nrules: []\n", `bad.rules:3:1: duplicate key "rules" (first at line 1)`},
		{"duplicate JSON key", "{\"version\": 1,\n \"version\": 1}", `bad.rules:2:2: duplicate key "version" (first at line 1)`},
		{"a field name misspelt", "rules:\n  - name: a\n    category: Attention\n    fle: [x]\n", `bad.rules:4:5: rules[0].fle: unknown key (did you mean "file"?)`},
		{"a category misspelt", "rules:\n  - {name: a, category: Atention, file: [x]}\n", `bad.rules:2:25: rules[0].category: "a": unknown category "Atention" (did you mean "Attention"?`},
		{"a new category not declared", "rules:\n  - {name: a, category: Rollout, file: [x]}\n", `unknown category "Rollout" (a new category must be listed under new_categories`},
		{"a control character in a new category", "new_categories: [\"Evil\\e[2J\"]\n", `bad.rules:1:18: new_categories[0]: "Evil\x1b[2J" holds a control character (U+001B)`},
		{"a line break in a category", "new_categories: [\"Fake\\nrow\"]\n", `new_categories[0]: category name "Fake\nrow" holds a control character`},
		{"a declared category that exists", "new_categories: [Attention]\n", `new_categories[0]: "Attention" is already a category`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("bad.rules", []byte(tc.data), nil)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "bad.rules") {
				t.Fatalf("error %q does not name the file and contain %q", err, tc.want)
			}
		})
	}
}

func TestLoadFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "rules.json")
	if err := os.WriteFile(p, []byte(`{"version":1,"new_categories":["X"],"rules":[{"name":"x","category":"X","function":["zzz"]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := LoadFile(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := r.Decide(fr(user + "a.py:1:zzz")); d.Category != "X" {
		t.Fatalf("got %s", d.Category)
	}
	if _, err := LoadFile(filepath.Join(t.TempDir(), "missing.yaml"), nil); err == nil {
		t.Fatal("missing file: no error")
	}
}

func TestCategorizerCachesPerStack(t *testing.T) {
	c := NewCategorizer(nil)
	s1 := &snapshot.Stack{Frames: fr(sp + "torch/optim/adam.py:90:_init_group")}
	s2 := &snapshot.Stack{Frames: fr(sp + "torch/optim/adam.py:90:_init_group")}
	for range 3 {
		if d := c.Stack(s1); d.Category != OptimizerState {
			t.Fatalf("got %s", d.Category)
		}
	}
	c.Stack(s2)
	if c.CacheSize() != 2 {
		t.Fatalf("cache size %d, want 2 (one per distinct *Stack)", c.CacheSize())
	}
	if d := c.Stack(nil); d.Category != Unknown || d.Reason != ReasonNoStack {
		t.Fatalf("nil stack: %+v", d)
	}
	// PyTorch writes an empty frame list where it recorded no stack: the same as none.
	if d := c.Stack(&snapshot.Stack{}); d.Category != Unknown || d.Reason != ReasonNoStack {
		t.Fatalf("frameless stack: %+v", d)
	}
}

func TestModulePath(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/usr/lib/python3.11/site-packages/torch/optim/adamw.py", "torch.optim.adamw"},
		{"d:/dev/x/.venv/lib/site-packages/torch/nn/modules/linear.py", "torch.nn.modules.linear"},
		{"/home/u/pytorch/torch/nn/functional.py", "torch.nn.functional"},
		{"/home/u/proj/model.py", "home.u.proj.model"},
		{"c:/proj/model.py", "proj.model"},
	}
	for _, tc := range tests {
		if got := modulePath(tc.in); got != tc.want {
			t.Errorf("modulePath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func BenchmarkDecide(b *testing.B) {
	r := Default()
	frames := fr("??:0:torch::unwind::unwind()", "??:0:_PyEval_EvalFrameDefault", sp+"torch/nn/modules/linear.py:125:forward",
		modCall, modWrap, user+"model.py:61:forward", modCall, modWrap, user+"train.py:40:main", "??:0:_start")
	b.ReportAllocs()
	for b.Loop() {
		r.Decide(frames)
	}
}

func TestExampleRuleFile(t *testing.T) {
	r, err := LoadFile(filepath.Join("testdata", "example_rules.yaml"), nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		frames   []snapshot.Frame
		category string
		rule     string
	}{
		{fr(user+"rollout/storage.py:30:_alloc_buffer", user+"train.py:1:main"), "Rollout Buffers", "rollout-buffers"},
		{fr(sp+"torch/functional.py:422:einsum", user+"model.py:5:forward"), Attention, "matmul-functions"},
		// team_lib is framework now, so the user's moe.py below it decides.
		{fr(user+"team_lib/attention_ops.py:10:run", user+"moe.py:20:forward"), ExpertMoE, "moe-files"},
		// The team's trainer is plumbing: its compute_loss does not make the forward under it Loss/Logits.
		{fr(user+"model.py:5:forward", user+"team_lib/trainer/loop.py:40:compute_loss"), Activation, "forward-intermediate"},
		// loss-files is disabled: a loss.py file with a generic function falls through to the fallback.
		{fr(user + "loss.py:3:forward"), Activation, "forward-intermediate"},
	}
	for _, tc := range tests {
		if d := r.Decide(tc.frames); d.Category != tc.category || d.Rule != tc.rule {
			t.Errorf("%v: got %s/%s, want %s/%s", tc.frames[0], d.Category, d.Rule, tc.category, tc.rule)
		}
	}
	cats := r.Categories()
	if !slices.Contains(cats, "Rollout Buffers") || cats[len(cats)-1] != Unknown {
		t.Errorf("categories %v", cats)
	}
}

// FuzzParse checks that no rule file makes Parse panic or hang, and that accepted files produce usable rules.
func FuzzParse(f *testing.F) {
	f.Add([]byte(defaultRulesYAML))
	f.Add([]byte(`{"rules":[{"name":"a","category":"X","file":["x"]}]}`))
	f.Add([]byte("rules:\n  - name: a\n    category: X\n    function_regexp: '(a|b)+'\n"))
	f.Add([]byte("noise: [{name: n, file: [q]}]\nframework: [{name: f, module: [torch]}]\n"))
	f.Add([]byte("plumbing: [{name: p, module: [lightning.pytorch.loops]}]\nrules: [{name: o, category: X, module: [torch.nn], calls_back: true}]\n"))
	if data, err := os.ReadFile(filepath.Join("testdata", "example_rules.yaml")); err == nil {
		f.Add(data)
	}
	frames := fr(sp+"torch/nn/modules/linear.py:125:forward", modCall, user+"model.py:61:forward", "??:0:torch::autograd::Engine::thread_main()")
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse("fuzz.rules", data, nil)
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.rules") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		d := r.Decide(frames)
		if d.Category == "" {
			t.Fatalf("empty category: %+v", d)
		}
	})
}

// TestDecideUserSite checks that the reported site is the user's own innermost frame even when a torch frame
// decides the category, and the deciding frame when the stack has no user frame.
func TestDecideUserSite(t *testing.T) {
	r := Default()
	tests := []struct {
		name        string
		frames      []snapshot.Frame
		site, frame string
	}{
		{
			name:   "torch linear init called from the user's model",
			frames: fr(sp+"torch/nn/modules/linear.py:106:__init__", user+"model.py:42:__init__", user+"train.py:9:main"),
			site:   user + "model.py:42:__init__", frame: "torch/nn/modules/linear.py:106:__init__",
		},
		{
			name:   "optimizer state with no user frame",
			frames: fr(sp+"torch/optim/adamw.py:154:_init_group", sp+"torch/optim/optimizer.py:485:wrapper"),
			site:   "torch/optim/adamw.py:154:_init_group", frame: "torch/optim/adamw.py:154:_init_group",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := r.Decide(tc.frames)
			if d.Site != tc.site || d.Frame != tc.frame {
				t.Errorf("site %q frame %q, want site %q frame %q", d.Site, d.Frame, tc.site, tc.frame)
			}
		})
	}
}
