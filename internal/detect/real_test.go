package detect_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/categorize"
	"github.com/memscan/memscan/internal/detect"
	"github.com/memscan/memscan/internal/realsnap"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/load"
)

// gpuRun is the part of ../shared/gpu_runs/runs.json these tests read: what PyTorch measured on the H200.
type gpuRun struct {
	Name  string `json:"name"`
	Model struct {
		L, H, Heads, KV, V int
	} `json:"model"`
	Settings struct {
		B, S int
	} `json:"settings"`
	OOM           string `json:"oom"`
	PeakAllocated int64  `json:"peak_allocated"`
	PeakReserved  int64  `json:"peak_reserved"`
}

func (r *gpuRun) UnmarshalJSON(b []byte) error {
	type plain gpuRun
	var raw struct {
		plain
		Model    map[string]any `json:"model"`
		Settings map[string]any `json:"settings"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*r = gpuRun(raw.plain)
	num := func(m map[string]any, k string) int { f, _ := m[k].(float64); return int(f) }
	r.Model.L, r.Model.H, r.Model.Heads, r.Model.KV, r.Model.V = num(raw.Model, "L"), num(raw.Model, "h"), num(raw.Model, "heads"), num(raw.Model, "kv"), num(raw.Model, "V")
	r.Settings.B, r.Settings.S = num(raw.Settings, "b"), num(raw.Settings, "s")
	return nil
}

type realRun struct {
	run *gpuRun
	in  *detect.Input
	got map[findings.ID]findings.Finding
}

// loadReal decodes one shared H200 snapshot, runs the detectors and returns them with PyTorch's measurements.
func loadReal(t *testing.T, name string) realRun {
	t.Helper()
	var runs []gpuRun
	dir := realsnap.GPURuns(t, &runs)
	var run *gpuRun
	for i := range runs {
		if runs[i].Name == name {
			run = &runs[i]
		}
	}
	if run == nil {
		t.Fatalf("%s not in runs.json", name)
	}
	dec, err := load.DecodeFile(context.Background(), filepath.Join(dir, name+".pickle.gz"))
	if err != nil {
		t.Fatal(err)
	}
	in := prepare(t, dec.Snapshot)
	fs, err := detect.Detect(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	got := map[findings.ID]findings.Finding{}
	for _, f := range fs {
		got[f.ID] = f
	}
	return realRun{run, in, got}
}

// TestRealHealthyRuns: the fixed-shape runs reserve at most 1.10x their peak (PyTorch's own numbers), so no leak,
// no cache-overhead, no empty_cache and no fragmentation advice; the replayed peak is PyTorch's. What they are
// told is the loss: at the bf16 peak (the start of the backward) Loss/Logits holds the bf16 logits (2 bytes ×
// N = b·s·V), HF's fp32 log-probabilities and autograd's two fp32 gradients (4N each): 14N, whether the gradients
// are placed by their C++ stacks (NllLossBackward0, LogSoftmaxBackward0) or by their size; computed over 1024 of
// the b·s tokens at a time the peak drops by 14N·(1 − 1024/(b·s)).
func TestRealHealthyRuns(t *testing.T) {
	for _, name := range []string{"llama1b-bf16-b4-s2048-snap", "llama1b-bf16-b4-s2048-stacksall-snap"} {
		t.Run(name, func(t *testing.T) {
			r := loadReal(t, name)
			if float64(r.run.PeakReserved) > findings.CacheOverheadRatio*float64(r.run.PeakAllocated) {
				t.Fatalf("run reserves %d for %d: not the healthy case", r.run.PeakReserved, r.run.PeakAllocated)
			}
			loss, ok := r.got[findings.LossLogits]
			if len(r.got) != 1 || !ok {
				t.Errorf("findings on a healthy run: %v, want the loss's only", r.got)
			}
			tokens := int64(r.run.Settings.B * r.run.Settings.S)
			n := tokens * int64(r.run.Model.V)
			if held := shareOf(peakLive(r.in.Devices[0]).ByCategory, categorize.LossLogits); held < 14*n || held >= 14*n+1<<20 {
				t.Errorf("Loss/Logits at the peak %d, want 14·%d (+ the loss's scalars)", held, n)
			}
			if want := 14 * n * (tokens - 1024) / tokens; math.Abs(float64(loss.SavedBytes-want)) > 1<<20 {
				t.Errorf("chunked loss saves %d at the peak, want 14N·(1 − 1024/%d) = %d", loss.SavedBytes, tokens, want)
			}
			// The replay counts requested bytes, PyTorch rounded blocks: within 0.01 %.
			_, peak := r.in.Devices[0].PeakIndex()
			if math.Abs(float64(peak-r.run.PeakAllocated)) > 1e-4*float64(r.run.PeakAllocated) {
				t.Errorf("peak %d, PyTorch measured %d", peak, r.run.PeakAllocated)
			}
		})
	}
}

// TestRealVarlenFragmentation: the varying sequence lengths fragment the cache; the finding states its saving in
// bytes, bounded by what PyTorch reserved beyond its peak.
func TestRealVarlenFragmentation(t *testing.T) {
	r := loadReal(t, "llama1b-varlen-b4-snap")
	f, ok := r.got["fragmentation"]
	if !ok {
		t.Fatalf("no fragmentation finding: %v", r.got)
	}
	excess := r.run.PeakReserved - r.run.PeakAllocated
	if f.Unit != findings.Bytes || f.Value < float64(findings.FragmentationMinSavingBytes) || f.Value > float64(excess) {
		t.Errorf("saving %g %s, want bytes up to PyTorch's excess %d", f.Value, f.Unit, excess)
	}
	if !strings.Contains(f.Advice, "pad or bucket") || strings.Contains(f.Advice, "KV cache") {
		t.Errorf("a training run whose shapes vary gets other advice: %s", f.Advice)
	}
	if _, ok := r.got["leak"]; ok {
		t.Errorf("leak on a run whose shapes only vary: %v", r.got["leak"])
	}
	if _, ok := r.got["idle-cache"]; ok {
		t.Errorf("empty_cache advised for memory that longer batches need again: %v", r.got["idle-cache"])
	}
}

// TestRealUnknownAtPeak: with Python-only stacks, autograd's allocations carry no stack; lifetimes place them, so
// Unknown stays within 5 % of the live bytes at the peak.
func TestRealUnknownAtPeak(t *testing.T) {
	for _, name := range []string{"llama1b-bf16-b4-s2048-snap", "llama1b-varlen-b4-snap", "llama8b-oom-b8-s8192-snap"} {
		t.Run(name, func(t *testing.T) {
			r := loadReal(t, name)
			pk := peakLive(r.in.Devices[0])
			if u := float64(shareOf(pk.ByCategory, categorize.Unknown)) / float64(pk.Bytes); u > 0.05 {
				t.Errorf("Unknown %.1f %% of the peak's %d bytes: %v", 100*u, pk.Bytes, pk.ByCategory)
			}
			if r.run.OOM == "" && shareOf(pk.ByCategory, categorize.OptimizerState) == 0 {
				t.Errorf("no optimizer state at a training peak after step 1: %v", pk.ByCategory)
			}
		})
	}
}

// TestRealKVCache: at the inference peak (prefill of 32 × 2048 tokens) the KV Cache category holds exactly
// Hugging Face's cache: keys and values for every layer, KV head and position, in bf16.
func TestRealKVCache(t *testing.T) {
	r := loadReal(t, "llama1b-infer-b32-p2048-g128-snap")
	m := r.run.Model
	want := int64(2 * m.L * r.run.Settings.B * m.KV * (m.H / m.Heads) * r.run.Settings.S * 2)
	pk := peakLive(r.in.Devices[0])
	if got := shareOf(pk.ByCategory, categorize.KVCache); got != want {
		t.Errorf("KV Cache at the peak %d, want 2·%d·%d·%d·%d·%d·2 = %d (%v)", got, m.L, r.run.Settings.B, m.KV, m.H/m.Heads, r.run.Settings.S, want, pk.ByCategory)
	}
}

// TestRealOOM: the OOM's live set is what PyTorch's message says was allocated, and the layer count is the model's.
func TestRealOOM(t *testing.T) {
	r := loadReal(t, "llama8b-oom-b8-s8192-snap")
	f, ok := r.got["oom"]
	if !ok {
		t.Fatalf("no oom finding: %v", r.got)
	}
	m := regexp.MustCompile(`Of the allocated memory ([0-9.]+) GiB is allocated by PyTorch`).FindStringSubmatch(r.run.OOM)
	if m == nil {
		t.Fatalf("no allocated figure in %q", r.run.OOM)
	}
	gib, _ := strconv.ParseFloat(m[1], 64)
	x := detect.ExplainOOM(r.in.Devices[0], f.Event)
	if got := float64(x.Live.Bytes) / (1 << 30); math.Abs(got-gib) > 0.01 {
		t.Errorf("live at the OOM %.2f GiB, PyTorch says %.2f GiB", got, gib)
	}
	if x.Layers != r.run.Model.L || x.LayersDone < 1 || x.LayersDone >= x.Layers {
		t.Errorf("layers %d (done %d), the model has %d", x.Layers, x.LayersDone, r.run.Model.L)
	}
	if x.ProjectedBytes <= x.CapacityBytes || f.Value != float64(x.ProjectedBytes-x.CapacityBytes) {
		t.Errorf("projection %d within capacity %d", x.ProjectedBytes, x.CapacityBytes)
	}
	// The request and the free memory read as PyTorch's message writes them; the projection is the allocated total
	// the forward would reach, not what the rest of it needs.
	for _, re := range []string{`Tried to allocate ([0-9.]+ [KMG]iB)`, `of which ([0-9.]+ [KMG]iB) is free`} {
		m := regexp.MustCompile(re).FindStringSubmatch(r.run.OOM)
		if m == nil || !strings.Contains(f.Evidence, " "+m[1]+" ") {
			t.Errorf("evidence does not show PyTorch's %v: %s", m, f.Evidence)
		}
	}
	if want := "by the last layer the forward alone would hold about " + units.Bytes(x.ProjectedBytes) + " allocated, " +
		units.Bytes(x.ProjectedBytes-x.CapacityBytes) + " beyond the " + units.Bytes(x.CapacityBytes); !strings.Contains(f.Evidence, want) || strings.Contains(f.Evidence, "the rest of") {
		t.Errorf("evidence lacks %q: %s", want, f.Evidence)
	}
	if _, ok := r.got["fragmentation"]; ok {
		t.Errorf("fragmentation on an OOM whose cache held only %d free", x.ReservedBytes-x.Live.Bytes)
	}
}

// TestRealVarlenExpandableReplay: with package allocator's replay the saving is what the H200 measured: the same
// run under expandable_segments:True reserved 61.6 GiB (stated to 0.1 GiB).
func TestRealVarlenExpandableReplay(t *testing.T) {
	r := loadReal(t, "llama1b-varlen-b4-snap")
	d, f := replayedFragmentation(t, r)
	_, res := d.MaxReservedIndex()
	if res != r.run.PeakReserved {
		t.Errorf("max reserved %d, PyTorch measured %d", res, r.run.PeakReserved)
	}
	if withExp := float64(res) - f.Value; math.Abs(withExp/(1<<30)-61.6) > 0.05 {
		t.Errorf("expandable segments would reserve %.2f GiB, the H200 reserved 61.6 GiB", withExp/(1<<30))
	}
}

// replayedFragmentation is r's fragmentation finding with package allocator's replay, which it must have used.
func replayedFragmentation(t *testing.T, r realRun) (*detect.Device, findings.Finding) {
	t.Helper()
	d := r.in.Devices[0]
	f, ok, err := detect.Fragmentation(context.Background(), r.in.Snapshot, d, detect.Replayer{Snapshot: r.in.Snapshot})
	if err != nil || !ok || f.Basis != "allocator replay" {
		t.Fatalf("fragmentation with the allocator model: %+v %v %v", f, ok, err)
	}
	return d, f
}

// peakLive is the live set at d's allocated peak.
func peakLive(d *detect.Device) findings.LiveSet {
	j, _ := d.PeakIndex()
	return d.LiveAt(j, 10)
}

// TestRealInferFragmentation: the inference run's reserved memory tops out at a late 2 MiB small-pool cudaMalloc,
// long after its allocated peak. The finding names that cudaMalloc for what it is, states the cache at the
// allocated peak (reserved then minus PyTorch's peak allocated), bounds the saving by PyTorch's excess, and, as
// KV Cache blocks sit among the free memory the large cudaMallocs could not use, advises a static KV cache.
func TestRealInferFragmentation(t *testing.T) {
	r := loadReal(t, "llama1b-infer-b32-p2048-g128-snap")
	d, f := replayedFragmentation(t, r)
	resIdx, res := d.MaxReservedIndex()
	if res != r.run.PeakReserved || f.Event != resIdx {
		t.Fatalf("judged at event %d (max reserved %d), want the event of PyTorch's %d", f.Event, res, r.run.PeakReserved)
	}
	if e := d.Trace[resIdx]; e.Size != 2<<20 || !strings.Contains(f.Evidence, fmt.Sprintf("at event %d (", resIdx)+"iteration 1 decode): a cudaMalloc of 2.0 MiB for the small pool") {
		t.Errorf("the cudaMalloc that set the maximum (%d bytes) is not named as a small-pool one: %s", e.Size, f.Evidence)
	}
	peakIdx, _ := d.PeakIndex()
	freeAtPeak := d.Reserved.At(peakIdx) - r.run.PeakAllocated
	if want := "reserved) held " + units.Bytes(freeAtPeak) + " free"; !strings.Contains(f.Evidence, want) {
		t.Errorf("evidence lacks the free memory at the allocated peak %q: %s", want, f.Evidence)
	}
	if excess := r.run.PeakReserved - r.run.PeakAllocated; f.Value > float64(excess) {
		t.Errorf("saving %g beyond PyTorch's excess %d", f.Value, excess)
	}
	if !strings.Contains(f.Advice, `cache_implementation="static"`) || strings.Contains(f.Advice, "pad or bucket") ||
		!strings.Contains(f.Advice, "saves "+units.Bytes(int64(f.Value))+" in the allocator replay") {
		t.Errorf("advice is not the static KV cache with the replayed saving: %s", f.Advice)
	}
}
