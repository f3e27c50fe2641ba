package static

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/memscan/memscan/internal/testutil"
)

// goldenSeries reads one metric of a Megatron golden-values file: step -> value (NaN entries skipped).
func goldenSeries(t *testing.T, path, metric string) []float64 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]struct {
		Values map[string]any `json:"values"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	m, ok := doc[metric]
	if !ok {
		return nil
	}
	steps := make([]int, 0, len(m.Values))
	for k := range m.Values {
		n, err := strconv.Atoi(k)
		if err != nil {
			t.Fatalf("%s: step %q: %v", path, k, err)
		}
		steps = append(steps, n)
	}
	sort.Ints(steps)
	var out []float64
	for _, s := range steps {
		var v float64
		switch x := m.Values[strconv.Itoa(s)].(type) {
		case float64:
			v = x
		case string:
			v, err = strconv.ParseFloat(x, 64)
			if err != nil {
				continue
			}
		default:
			continue
		}
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			out = append(out, v)
		}
	}
	return out
}

// TestMegatronGolden checks the estimator against Megatron-LM's measured CI runs (peak allocated and
// end-of-step allocated on the last rank, which Megatron's TensorBoard writer logs).
func TestMegatronGolden(t *testing.T) {
	dir := testutil.SharedDir(t, "research_data", "megatron_golden")
	gpuFor := map[string]string{"dgx_h100": "h100-sxm", "dgx_a100": "a100-80gb-sxm", "dgx_gb200": "gb200"}
	type row struct {
		config string
		// Bounds: |error| of weights+grads+optimizer vs end-of-step allocated, and of peak allocated vs the
		// measured peak. The 3 %/10 % targets apply to fully specified runs; see the notes for the others.
		statesTol, peakTol float64
		note               string
		platform           string // only this golden file belongs to the layout ("" = all)
	}
	rows := map[string]row{
		"gpt3_7b_tp4_pp1_memory_speed": {"gpt3_7b_tp4_pp1_memory_speed.json", 0.03, 0.10, "fully specified", ""},
		// Last rank of PP=4 with 8 virtual chunks: ≈1.3 GiB stays allocated at the end of the step beyond
		// weights, main grads and optimizer shards; not modelled, so model states are checked at 7 %.
		"gpt3_7b_tp1_pp4_memory_speed": {"gpt3_7b_tp1_pp4_memory_speed.json", 0.07, 0.10, "unexplained end-of-step residue", ""},
		// World size not recorded: dp chosen from the H100 end-of-step memory, so only the peak is an independent
		// check; the A100 "lts" container logs ≈0.5 GiB less at the end of the step for the same config.
		"gpt3_15b_8t_release":                     {"gpt3_15b_8t_release.json", 0.05, 0.10, "dp inferred", ""},
		"mixtral_8x7b_alltoall_tp2pp4ep4_release": {"mixtral_8x7b_alltoall_tp2pp4ep4_release.json", 0.05, 0.10, "dp inferred", ""},
		// Same last-stage residue as the 7B PP=4 × 8 virtual chunks run (≈1 GiB).
		"mixtral_8x7b_tp1pp4ep8vpp8_release": {"mixtral_8x7b_tp1pp4ep8vpp8_release.json", 0.07, 0.10, "dp inferred; VPP residue", ""},
		// Uses --cross-entropy-loss-fusion (loss fused_jit: 4 B/logit more in the loss forward, 3.9 GiB here).
		// Its H100/A100 golden files carry the values of the plain release layout, so only GB200 is compared.
		"gpt3_15b_8t_release_sm_gb200": {"gpt3_15b_8t_release_sm_gb200.json", 0.05, 0.10, "dp inferred; fused cross entropy", "dgx_gb200"},
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*__golden_values_*.json"))
	checked := 0
	for _, f := range files {
		base := filepath.Base(f)
		tc := strings.SplitN(base, "__", 2)[0]
		rw, ok := rows[tc]
		if !ok {
			continue
		}
		platform := strings.TrimSuffix(base[strings.LastIndex(base, "dgx_"):], ".json")
		if rw.platform != "" && rw.platform != platform {
			continue
		}
		t.Run(tc+"/"+platform, func(t *testing.T) {
			end := goldenSeries(t, f, "mem-allocated-bytes")
			peaks := goldenSeries(t, f, "mem-max-allocated-bytes")
			if len(end) == 0 || len(peaks) == 0 {
				t.Skipf("%s has no memory series", base)
			}
			measuredEnd := end[len(end)-1]
			measuredPeak := 0.0
			for _, p := range peaks {
				measuredPeak = math.Max(measuredPeak, p)
			}
			c, err := LoadConfig(filepath.Join("..", "testdata", "static", "megatron", rw.config))
			if err != nil {
				t.Fatal(err)
			}
			c.Hardware.GPU = gpuFor[platform]
			r, err := Estimate(*c)
			if err != nil {
				t.Fatal(err)
			}
			last := r.Stages[len(r.Stages)-1] // Megatron logs the last rank = last pipeline stage
			states := float64(last.Weights + last.Grads + last.Optimizer)
			peak := float64(last.PeakAllocated)
			es, ep := states/measuredEnd-1, peak/measuredPeak-1
			t.Logf("%-45s %-9s states %6.2f GiB vs end %6.2f GiB (%+5.1f%%)  peak %6.2f vs %6.2f GiB (%+5.1f%%)  [%s]",
				tc, platform, states/gib, measuredEnd/gib, 100*es, peak/gib, measuredPeak/gib, 100*ep, rw.note)
			if math.Abs(es) > rw.statesTol {
				t.Errorf("weights+grads+optimizer %.2f GiB vs measured end-of-step %.2f GiB: %+.1f%% (bound %.0f%%)", states/gib, measuredEnd/gib, 100*es, 100*rw.statesTol)
			}
			if math.Abs(ep) > rw.peakTol {
				t.Errorf("peak allocated %.2f GiB vs measured %.2f GiB: %+.1f%% (bound %.0f%%)", peak/gib, measuredPeak/gib, 100*ep, 100*rw.peakTol)
			}
		})
		checked++
	}
	if checked == 0 {
		t.Fatal(fmt.Sprintf("no golden files matched in %s", dir))
	}
}

// csvConfig builds a config from one row of the Megatron functional-test CSV, or returns why the row is out of
// scope (features the estimator does not model, or missing layout facts).
func csvConfig(x map[string]string) (*Config, string) {
	on := func(k string) bool { return x[k] == "True" }
	atoi := func(k string, def int) int {
		if v, err := strconv.Atoi(x[k]); err == nil {
			return v
		}
		return def
	}
	switch {
	case x["suite"] != "gpt" || x["world_size"] == "" || x["num-layers"] == "":
		return nil, "not a GPT row with a known world size"
	case strings.Contains(x["test_case"], "grpo") || strings.Contains(x["test_case"], "distill"):
		return nil, "RL / distillation workload"
	case x["recompute-method"] != "" && (x["recompute-method"] != "uniform" || atoi("recompute-num-layers", 1) != 1):
		return nil, "feature not modelled"
	case x["fp8-format"] != "" || on("use-torch-fsdp2") || on("use-megatron-fsdp") || on("cpu-offloading") ||
		on("optimizer-cpu-offload") || x["mtp-num-layers"] != "" || on("multi-latent-attention") || x["num-experts"] != "" ||
		x["decoder-first-pipeline-num-layers"] != "" || x["decoder-last-pipeline-num-layers"] != "" || on("account-for-embedding-in-pipeline-split") ||
		on("account-for-loss-in-pipeline-split") || x["hybrid-layer-pattern"] != "" || x["recompute-modules"] != "":
		return nil, "feature not modelled"
	}
	L, pp := atoi("num-layers", 0), atoi("pipeline-model-parallel-size", 1)
	c := DefaultConfig()
	c.Model = ModelConfig{Type: "gpt", NumLayers: L, HiddenSize: atoi("hidden-size", 0), NumAttentionHeads: atoi("num-attention-heads", 0),
		NumKVHeads: atoi("num-query-groups", 0), FFNHiddenSize: atoi("ffn-hidden-size", 0), VocabSize: atoi("vocab-size", 50257),
		MakeVocabDivisibleBy: atoi("make-vocab-size-divisible-by", 128), TieWordEmbeddings: !on("untie-embeddings-and-output-weights"),
		PositionEmbedding: "learned", MaxPositionEmbeddings: atoi("seq-length", 0), Norm: "layernorm", Activation: "gelu", LinearBias: true}
	if x["position-embedding-type"] == "rope" {
		c.Model.PositionEmbedding = "rope"
	}
	if x["normalization"] == "RMSNorm" {
		c.Model.Norm = "rmsnorm"
	}
	if on("swiglu") {
		c.Model.Activation = "swiglu"
	} else if on("squared-relu") {
		c.Model.Activation = "squared-relu"
	}
	// Megatron defaults the rows do not override: dropout 0.1, fused vocab-parallel cross entropy, fused Adam.
	c.Training = TrainingConfig{MicroBatchSize: atoi("micro-batch-size", 1), SeqLength: atoi("seq-length", 0), GlobalBatchSize: atoi("global-batch-size", 0),
		Precision: "bf16-mixed", Optimizer: "adamw", OptimizerImpl: "fused", Attention: "flash", AttentionDropout: 0.1, HiddenDropout: 0.1,
		Recompute: "none", Loss: "fused", Kernels: "fused"}
	if g := x["recompute-granularity"]; g != "" {
		// Uniform with one layer per chunk checkpoints every layer's input: recompute_layers 0 = all layers.
		c.Training.Recompute = g
	}
	if on("cross-entropy-loss-fusion") {
		c.Training.Loss = "fused_jit" // the table has no fusion-impl column; Megatron's default impl is native
	}
	if on("fp16") {
		// Megatron forces fp32 gradient accumulation only for bf16: with fp16 the main_grad buffer is fp16.
		c.Training.Precision, c.Training.GradPrecision = "fp16-mixed", "fp16"
	}
	// Megatron's default transformer implementation is Transformer Engine; "local" runs its own modules with the
	// unfused DotProductAttention, as does attention-backend unfused under Transformer Engine.
	c.Training.TransformerEngine = x["transformer-impl"] != "local"
	if x["transformer-impl"] == "local" || x["attention-backend"] == "unfused" {
		c.Training.Attention = "standard"
	}
	v := 1
	if n := atoi("num-layers-per-virtual-pipeline-stage", 0); n > 0 && L%(pp*n) == 0 {
		v = L / pp / n
	}
	c.Parallel = ParallelConfig{TP: atoi("tensor-model-parallel-size", 1), PP: pp, CP: atoi("context-parallel-size", 1), EP: 1, VirtualStages: v,
		SequenceParallel: on("sequence-parallel"), DistributedOptimizer: on("use-distributed-optimizer"), PPSchedule: "1f1b", GradBuffer: "persistent"}
	c.Hardware.NumGPUs = atoi("world_size", 0)
	// The GPU matters for Transformer Engine's workspace (32 MiB from Hopper on, 4 MiB on Ampere). Rows without a
	// platform keep the default H100.
	switch strings.TrimSuffix(x["platform"], "_2nd") {
	case "dgx_a100":
		c.Hardware.GPU = "a100-80gb-sxm"
	case "dgx_gb200":
		c.Hardware.GPU = "gb200"
	}
	if err := c.Resolve(); err != nil {
		return nil, "layout: " + err.Error()
	}
	return &c, ""
}

// TestMegatronCSV models every in-scope GPT row of the functional-test table (mostly a 12-layer, h=512 model with
// many parallel layouts) and checks the peak-allocated and end-of-step error distributions. Some rows come from
// golden files whose layout differs from the row's knobs (no platform recorded) or use features modelled only
// approximately (fused cross entropy), so the bound is on the median; every row's error is logged with -v.
func TestMegatronCSV(t *testing.T) {
	path := filepath.Join(testutil.SharedDir(t, "research_data"), "megatron_functional_test_memory.csv")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	head := recs[0]
	var peakErr, endErr, statesErr []float64
	skipped := map[string]int{}
	for _, rec := range recs[1:] {
		x := map[string]string{}
		for i, k := range head {
			x[k] = rec[i]
		}
		c, why := csvConfig(x)
		if c == nil {
			skipped[strings.SplitN(why, ":", 2)[0]]++
			continue
		}
		r, err := Estimate(*c)
		if err != nil {
			t.Errorf("%s: %v", x["test_case"], err)
			continue
		}
		last := r.Stages[len(r.Stages)-1]
		mp, _ := strconv.ParseFloat(x["max_allocated_GiB"], 64)
		me, _ := strconv.ParseFloat(x["allocated_end_GiB"], 64)
		ep := float64(last.PeakAllocated)/gib/mp - 1
		peakErr = append(peakErr, ep)
		ee := math.NaN()
		if me > 0 {
			// Megatron logs allocated_bytes.all.current after the step: model states plus what stays allocated
			// besides them (workspaces, persistent buffers, fp32 main-grad copies), i.e. EndOfStepAllocated.
			ee = float64(last.EndOfStepAllocated)/gib/me - 1
			endErr = append(endErr, ee)
			statesErr = append(statesErr, float64(last.Weights+last.Grads+last.Optimizer)/gib/me-1)
		}
		t.Logf("%-60s %-13s peak %7.3f vs %7.3f GiB %+6.1f%%  end %7.3f vs %7.3f GiB %+6.1f%%", x["test_case"], x["platform"],
			float64(last.PeakAllocated)/gib, mp, 100*ep, float64(last.EndOfStepAllocated)/gib, me, 100*ee)
	}
	if len(peakErr) < 100 {
		t.Fatalf("only %d rows modelled (skipped %v)", len(peakErr), skipped)
	}
	medAbs := func(v []float64) float64 {
		a := make([]float64, len(v))
		for i, e := range v {
			a[i] = math.Abs(e)
		}
		sort.Float64s(a)
		return a[len(a)/2]
	}
	maxAbs := func(v []float64) float64 {
		m := 0.0
		for _, e := range v {
			m = math.Max(m, math.Abs(e))
		}
		return m
	}
	t.Logf("%d rows modelled, skipped %v; peak: median |error| %.1f%% (max %.1f%%); end-of-step allocated: median %.1f%% (max %.1f%%); weights+grads+optimizer alone vs end of step: median %.1f%%",
		len(peakErr), skipped, 100*medAbs(peakErr), 100*maxAbs(peakErr), 100*medAbs(endErr), 100*maxAbs(endErr), 100*medAbs(statesErr))
	if m := medAbs(peakErr); m > 0.04 {
		t.Errorf("median |peak error| %.1f%% over %d rows exceeds 4%%", 100*m, len(peakErr))
	}
	if m := medAbs(endErr); m > 0.04 {
		t.Errorf("median |end-of-step error| %.1f%% over %d rows exceeds 4%%", 100*m, len(endErr))
	}
}
