package analyze

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memscan/memscan/findings"
	"github.com/memscan/memscan/internal/realsnap"
	"github.com/memscan/memscan/report"
)

// h200Run is the part of ../shared/gpu_runs/runs.json these tests read: what PyTorch measured on the H200.
type h200Run struct {
	Name          string `json:"name"`
	Snapshot      string `json:"snapshot"`
	PeakAllocated int64  `json:"peak_allocated"`
	PeakReserved  int64  `json:"peak_reserved"`
	Model         struct {
		V int `json:"V"`
		H int `json:"h"`
		L int `json:"L"`
	} `json:"model"`
	Settings struct {
		B int `json:"b"`
		S int `json:"s"`
	} `json:"settings"`
}

// analyzeH200 analyzes one shared H200 snapshot run and returns its report with PyTorch's measurements.
func analyzeH200(t *testing.T, name string) (*report.Report, h200Run) {
	t.Helper()
	var runs []h200Run
	dir := realsnap.GPURuns(t, &runs)
	for _, run := range runs {
		if run.Name == name {
			r, err := AnalyzeFile(context.Background(), filepath.Join(dir, name+".pickle.gz"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			return r, run
		}
	}
	t.Fatalf("%s is not in runs.json", name)
	return nil, h200Run{}
}

// completeH200Snapshots are the H200 snapshot runs recorded from before the process's first CUDA allocation.
var completeH200Snapshots = []string{"llama1b-bf16-b4-s2048-snap", "llama1b-varlen-b4-snap", "llama1b-infer-b32-p2048-g128-snap",
	"llama8b-oom-b8-s8192-snap"}

// TestPeakInTorchUnits checks the peak's block bytes against torch.cuda.max_memory_allocated as PyTorch measured it
// on the H200 (the maximum over every phase of the run), and that the requested bytes and the reserved bytes at
// the same moment are reported beside it.
func TestPeakInTorchUnits(t *testing.T) {
	for _, name := range completeH200Snapshots {
		t.Run(name, func(t *testing.T) {
			r, run := analyzeH200(t, name)
			p := r.Peak
			if p == nil {
				t.Fatal("no peak")
			}
			if p.AllocatedBytes != run.PeakAllocated {
				t.Errorf("peak allocated_bytes %d, torch.cuda.max_memory_allocated %d (requested %d)", p.AllocatedBytes, run.PeakAllocated, p.Bytes)
			}
			if p.RequestedBytes != p.Bytes || p.RequestedBytes > p.AllocatedBytes {
				t.Errorf("requested_bytes %d, bytes %d, allocated_bytes %d", p.RequestedBytes, p.Bytes, p.AllocatedBytes)
			}
			if p.ReservedBytes < p.AllocatedBytes || p.ReservedBytes > run.PeakReserved {
				t.Errorf("reserved at the peak %d: below the block bytes %d or above torch's max_memory_reserved %d", p.ReservedBytes, p.AllocatedBytes, run.PeakReserved)
			}
			if want := float64(p.Bytes) / float64(p.ReservedBytes) * 100; p.EfficiencyPct != want {
				t.Errorf("efficiency at the peak %.4f, want %.4f", p.EfficiencyPct, want)
			}
		})
	}
}

// realReports analyzes every public real snapshot and every H200 snapshot run, calling f with each report.
func realReports(t *testing.T, f func(t *testing.T, name string, r *report.Report)) {
	dir, manifest := realsnap.Load(t)
	var paths []string
	for _, m := range manifest {
		paths = append(paths, filepath.Join(dir, m.File))
	}
	var runs []h200Run
	gdir := realsnap.GPURuns(t, &runs)
	for _, run := range runs {
		if run.Snapshot != "" {
			paths = append(paths, filepath.Join(gdir, run.Name+".pickle.gz"))
		}
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			r, err := AnalyzeFile(context.Background(), p, Options{})
			if err != nil {
				t.Skipf("not decoded here: %v", err)
			}
			f(t, filepath.Base(p), r)
		})
	}
}

// TestFragmentationOneSource: on every real snapshot with a trace, what the fragmentation finding says expandable
// segments save is the figure of the report's allocator replay section (its baseline and expandable-segments
// peaks, partial replays included), and the finding is there exactly when that figure reaches the threshold and
// reserved exceeded the peak by the cache-overhead thresholds. HugePandaCoder's partial trace used to get an
// estimate of 6.0 GiB where its replay saves 3.9 GiB.
func TestFragmentationOneSource(t *testing.T) {
	realReports(t, func(t *testing.T, name string, r *report.Report) {
		sp := r.Part.(*report.SnapshotReport)
		var frag *findings.Finding
		for i := range r.Recommendations {
			if f := &r.Recommendations[i]; f.ID == findings.Fragmentation && f.Unit == findings.Bytes {
				frag = f
			}
		}
		ar := sp.AllocatorReplay
		if ar == nil || len(sp.AllocatorReplayDevices) > 1 {
			if frag != nil && frag.Basis == findings.BasisReplay && ar == nil {
				t.Errorf("a replayed saving without a replay section: %+v", frag)
			}
			return
		}
		saving := ar.BaselinePeakReservedBytes - ar.ExpandablePeakReservedBytes
		var excess bool
		if p := r.Peak; p != nil {
			excess = float64(ar.RecordedPeakReservedBytes) > findings.CacheOverheadRatio*float64(p.Bytes) &&
				ar.RecordedPeakReservedBytes-p.Bytes >= findings.CacheOverheadMinBytes
		}
		want := excess && saving >= findings.FragmentationMinSavingBytes && !strings.HasPrefix(ar.RecordedSettings, "expandable")
		switch {
		case want != (frag != nil):
			t.Errorf("fragmentation finding %v, replay saves %d (excess over the peak %v)", frag != nil, saving, excess)
		case frag != nil && (frag.Value != float64(saving) || frag.SavedBytes != saving || frag.Basis != findings.BasisReplay):
			t.Errorf("finding saves %g (%s), the replay section %d", frag.Value, frag.Basis, saving)
		case frag != nil && ar.Partial && !strings.Contains(frag.Evidence, "The replay is partial"):
			t.Errorf("a partial replay's saving without saying so: %s", frag.Evidence)
		}
		if name == "HugePandaCoder__octree-nca-groupeq__my_snapshot__blob_1e496ac.pickle" && (frag == nil || int64(frag.Value) != 3976<<20) {
			t.Errorf("HugePandaCoder: want the replay's 3976 MiB saving, got %+v", frag)
		}
	})
}

// TestRankedSavingsVarlen: on the variable-length H200 run the findings come ranked by what they save at the peak:
// the chunked loss (the longest step's logits and loss tensors, 14·b·s·V bytes with s its 4096 tokens, kept to
// 1024 tokens at a time) before expandable segments (the allocator replay's saving), then the cache overhead,
// which proposes no change of its own.
func TestRankedSavingsVarlen(t *testing.T) {
	r, run := analyzeH200(t, "llama1b-varlen-b4-snap")
	var ids []string
	for _, f := range r.Recommendations {
		ids = append(ids, string(f.ID))
	}
	if strings.Join(ids, " ") != "loss-logits fragmentation cache-overhead" {
		t.Fatalf("findings %v", ids)
	}
	tokens := int64(run.Settings.B * run.Settings.S)
	n := tokens * int64(run.Model.V)
	if want := 14 * n * (tokens - 1024) / tokens; abs(r.Recommendations[0].SavedBytes-want) > 1<<20 {
		t.Errorf("chunked loss saves %d, want 14N·(1 − 1024/%d) = %d", r.Recommendations[0].SavedBytes, tokens, want)
	}
	sp := r.Part.(*report.SnapshotReport)
	if got := r.Recommendations[1].SavedBytes; got != sp.AllocatorReplay.ExpandableSavingBytes() || got >= r.Recommendations[0].SavedBytes {
		t.Errorf("fragmentation saves %d, the replay section %d", got, sp.AllocatorReplay.ExpandableSavingBytes())
	}
	var held int64
	for _, c := range r.Peak.Categories {
		if c.Name == "Loss/Logits" {
			held = c.Bytes
		}
	}
	if held < 14*n || held >= 14*n+1<<20 {
		t.Errorf("Loss/Logits at the peak %d, want 14·%d", held, n)
	}
}

func abs(x int64) int64 { return max(x, -x) }

// TestLayersFromStructureNesta: the discrete-diffusion model was built on the CPU and moved with .to(device): its
// 120 parameter tensors share one stack (module.py's _apply ← convert), and the old count took them for 120 layers
// (a 270 GiB projection). Its 12 transformer blocks of 10 tensors each repeat their sizes 12 times; 9 had passed
// the failing point, so the forward would hold the live memory, the request and 2 more layers' growth: under the
// 30 GiB a 12-block forward of this size can reach.
func TestLayersFromStructureNesta(t *testing.T) {
	dir, _ := realsnap.Load(t)
	r, err := AnalyzeFile(context.Background(), filepath.Join(dir, "Nesta-gitU__discrete_diffusion__memory_snapshot_json.pickle"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ooms := r.OOMs()
	if len(ooms) != 1 || ooms[0].Explained == nil {
		t.Fatalf("ooms %+v", ooms)
	}
	x := ooms[0].Explained
	if x.Layers != 12 || x.LayersDone != 9 || !strings.Contains(x.LayersEvidence, "pattern of 10 tensors") {
		t.Errorf("layers %d done %d (%s), want 12 blocks of 10 tensors, 9 done", x.Layers, x.LayersDone, x.LayersEvidence)
	}
	if want := x.Live.Bytes + x.RequestedBytes + 2*x.PerLayerBytes; x.ProjectedBytes != want || x.ProjectedBytes >= 30<<30 {
		t.Errorf("projected %d, want live + request + 2 layers = %d, under 30 GiB", x.ProjectedBytes, want)
	}
}

// h200Phase is one phase of runs.json: torch.cuda.memory_allocated, max_memory_allocated and
// max_memory_reserved read at its end (the peaks reset after each training step, and after generate).
type h200Phase struct {
	Phase        string `json:"phase"`
	Alloc        int64  `json:"alloc"`
	Peak         int64  `json:"peak"`
	PeakReserved int64  `json:"peak_reserved"`
}

// TestIterationTableH200: every iteration's peak, its reserved maximum and the memory allocated at the end of its
// forward, backward and optimizer are what PyTorch measured on the H200 (stepN_after_forward, _after_backward and
// stepN of runs.json) — the variable-length run's steps from 11.6 to 61.2 GiB — and the generate call of the
// inference run is a prefill and a decode, whose peak is generate's, followed by the prefill-only forward.
func TestIterationTableH200(t *testing.T) {
	var runs []struct {
		Name   string      `json:"name"`
		Phases []h200Phase `json:"phases"`
	}
	dir := realsnap.GPURuns(t, &runs)
	for _, name := range []string{"llama1b-bf16-b4-s2048-snap", "llama1b-varlen-b4-snap", "llama1b-infer-b32-p2048-g128-snap"} {
		t.Run(name, func(t *testing.T) {
			measured := map[string]h200Phase{}
			for _, r := range runs {
				if r.Name == name {
					for _, p := range r.Phases {
						measured[p.Phase] = p
					}
				}
			}
			r, err := AnalyzeFile(context.Background(), filepath.Join(dir, name+".pickle.gz"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			rows := r.Part.(*report.SnapshotReport).IterationTable
			if strings.Contains(name, "infer") {
				checkInference(t, r, rows, measured)
				return
			}
			if len(rows) != len(measured)/3 {
				t.Fatalf("%d iterations, runs.json has %d steps", len(rows), len(measured)/3)
			}
			for _, row := range rows {
				step := measured[fmt.Sprintf("step%d", row.Iteration)]
				if row.PeakAllocatedBytes != step.Peak || row.PeakReservedBytes != step.PeakReserved {
					t.Errorf("iteration %d: peak %d allocated, %d reserved; torch %d, %d", row.Iteration, row.PeakAllocatedBytes, row.PeakReservedBytes, step.Peak, step.PeakReserved)
				}
				ends := map[string]string{"forward": "_after_forward", "backward": "_after_backward", "optimizer": ""}
				if len(row.Phases) != 3 {
					t.Fatalf("iteration %d phases %+v", row.Iteration, row.Phases)
				}
				for _, p := range row.Phases {
					if want := measured[fmt.Sprintf("step%d%s", row.Iteration, ends[p.Phase])].Alloc; p.AllocatedBytes != want {
						t.Errorf("iteration %d: %d allocated at the end of its %s, torch %d", row.Iteration, p.AllocatedBytes, p.Phase, want)
					}
				}
			}
		})
	}
}

// checkInference checks the inference run's table: a generate call (prefill, decode) and the forward after it.
func checkInference(t *testing.T, r *report.Report, rows []report.IterationRow, measured map[string]h200Phase) {
	t.Helper()
	if len(rows) != 2 || len(rows[0].Phases) != 2 || rows[0].Phases[0].Phase != "prefill" || rows[0].Phases[1].Phase != "decode" ||
		len(rows[1].Phases) != 1 || rows[1].Phases[0].Phase != "forward" {
		t.Fatalf("rows %+v, want a generate call (prefill, decode) and a forward", rows)
	}
	if g, p := measured["generate"], measured["prefill_only"]; rows[0].PeakAllocatedBytes != g.Peak || rows[1].PeakAllocatedBytes != p.Peak ||
		rows[0].PeakReservedBytes != g.PeakReserved {
		t.Errorf("peaks %d, %d; torch generate %d, prefill-only forward %d", rows[0].PeakAllocatedBytes, rows[1].PeakAllocatedBytes, g.Peak, p.Peak)
	}
	// The prompt's forward holds the most: the peak is in the prefill, as the report's peak says.
	if rows[0].PeakPhase != "prefill" || r.Peak.Phase != "prefill" || r.Peak.Iteration != 1 {
		t.Errorf("generate's peak in %q, the report's in iteration %d %q; want the prefill", rows[0].PeakPhase, r.Peak.Iteration, r.Peak.Phase)
	}
	// summary.json shows the generate call's prefill and decode in place of forward, backward and optimizer.
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Iterations []struct {
			Iterations []map[string]json.RawMessage `json:"iterations"`
		} `json:"iterations"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	first := got.Iterations[0].Iterations[0]
	if _, ok := first["prefill"]; !ok || first["decode"] == nil || first["forward"] != nil || first["backward"] != nil {
		t.Errorf("the generate call's iteration in summary.json has keys %v", slices.Sorted(maps.Keys(first)))
	}
}

// TestFindingsOnce: on every real snapshot each finding is stated once per device (an OOM once per failing
// request), whether the trace's detectors or the dump's checks judged it; Yiyi-philosophy's one-event trace gets
// the dump's checks only.
func TestFindingsOnce(t *testing.T) {
	realReports(t, func(t *testing.T, name string, r *report.Report) {
		type key struct {
			id          findings.ID
			device, oom int
		}
		seen := map[key]bool{}
		for _, f := range r.Recommendations {
			k := key{f.ID, f.Device, -1}
			if f.ID == findings.OOM {
				k.oom = f.Event
			}
			if seen[k] {
				t.Errorf("%s stated twice on device %d", f.ID, f.Device)
			}
			seen[k] = true
		}
	})
}
