package phasedetect_test

import (
	"context"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/memscan/memscan/internal/phasedetect"
	"github.com/memscan/memscan/internal/realsnap"
	"github.com/memscan/memscan/internal/replay"
	"github.com/memscan/memscan/internal/snapbuild"
	"github.com/memscan/memscan/internal/traingen"
	"github.com/memscan/memscan/load"
	"github.com/memscan/memscan/phases"
	"github.com/memscan/memscan/snapshot"
)

// firstAlloc returns the first alloc event at or after from whose stack satisfies ok, −1 when none.
func firstAlloc(s *snapshot.Snapshot, from int, ok func(*snapshot.Stack) bool) int {
	tr := s.DeviceTraces[0]
	for j := from; j < len(tr); j++ {
		if tr[j].Action == snapshot.ActionAlloc && ok(s.EntryStack(&tr[j])) {
			return j
		}
	}
	return -1
}

func is(st *snapshot.Stack) func(*snapshot.Stack) bool {
	return func(s *snapshot.Stack) bool { return s == st }
}

// TestDetectSynthetic checks the boundaries against the fixture's own stacks: iteration 1's forward starts at its
// first activation, later ones where the previous iteration ended; the backward at the first stackless allocation;
// the optimizer at its first allocation (frames) or its annotation.
func TestDetectSynthetic(t *testing.T) {
	for _, ann := range []bool{true, false} {
		run := traingen.TrainingLoop{Iterations: 3, Layers: 4, WeightBytes: 8 << 20, ActivationBytes: 32 << 20, LogitsBytes: 64 << 20, Annotations: ann}
		s := run.Build()
		tr := s.DeviceTraces[0]
		tl := phasedetect.Detect(tr, s.TraceStacks, s.ExternalAnnotations, 0)
		if len(tl.Iterations) != 3 {
			t.Fatalf("annotations=%v: %d iterations, want 3 (%+v)", ann, len(tl.Iterations), tl)
		}
		wantSource := map[bool]string{true: "optimizer annotations + stacks", false: "stacks"}[ann]
		if tl.Source != wantSource {
			t.Errorf("source %q, want %q", tl.Source, wantSource)
		}
		from := 0
		for k, it := range tl.Iterations {
			fwd := firstAlloc(s, from, is(traingen.TrainActStack))
			if k > 0 {
				fwd = tl.Iterations[k-1].Span.End
				// The previous iteration ends where its optimizer phase ends: right before this input's alloc
				// (frames), or at the end of zero_grad's frees (annotations).
				if in := firstAlloc(s, from, is(traingen.TrainInputStack)); ann && in < fwd || !ann && in != fwd {
					t.Errorf("annotations=%v iteration %d starts at %d; its input is allocated at %d", ann, k+1, fwd, in)
				}
			}
			bwd := firstAlloc(s, fwd, func(st *snapshot.Stack) bool { return st == nil })
			opt := firstAlloc(s, bwd, func(st *snapshot.Stack) bool {
				return st == traingen.TrainStateStack || st == traingen.TrainOptTmpStack
			})
			if ann {
				// The START mark is recorded at the time of the event after it, which is the optimizer's first alloc.
				opt = sortSearchTime(tr, s.ExternalAnnotations[4*k].TimeUS)
			}
			if it.Forward.Start != fwd || it.Backward.Start != bwd || it.Optimizer.Start != opt {
				t.Errorf("annotations=%v iteration %d: forward %d backward %d optimizer %d, want %d %d %d",
					ann, k+1, it.Forward.Start, it.Backward.Start, it.Optimizer.Start, fwd, bwd, opt)
			}
			if it.Forward.End != it.Backward.Start || it.Backward.End != it.Optimizer.Start || it.Optimizer.End != it.Span.End || !it.Complete {
				t.Errorf("iteration %d: phases do not tile it: %+v", k+1, it)
			}
			from = it.Span.End
		}
		if got := tl.Iterations[2].Span.End; got != len(tr) {
			t.Errorf("last iteration ends at %d, want the trace's end %d", got, len(tr))
		}
	}
}

func sortSearchTime(tr []snapshot.TraceEntry, t int64) int {
	for j := range tr {
		if tr[j].TimeUS >= t {
			return j
		}
	}
	return len(tr)
}

// TestDetectOOMAndMarkers: an OOM ends its iteration at the failing event; a trace without stacks or optimizer
// falls back to snapshot markers; an empty trace has no iterations.
func TestDetectOOMAndMarkers(t *testing.T) {
	s := traingen.TrainingLoop{Iterations: 1, Layers: 6, WeightBytes: 8 << 20, ActivationBytes: 32 << 20, LogitsBytes: 64 << 20, OOMAtLayer: 4}.Build()
	tr := s.DeviceTraces[0]
	tl := phasedetect.Detect(tr, s.TraceStacks, nil, 0)
	oom := -1
	for j := range tr {
		if tr[j].Action == snapshot.ActionOOM {
			oom = j
		}
	}
	if tl.OOM != oom || len(tl.Iterations) != 1 || tl.Iterations[0].Span.End != oom+1 || tl.Iterations[0].Complete {
		t.Errorf("OOM at %d: timeline %+v", oom, tl)
	}
	if _, ph := tl.At(oom - 1); ph != phases.Forward {
		t.Errorf("event before the OOM is in %v, want forward", ph)
	}
	if _, ph := tl.At(oom + 1); ph != phases.None {
		t.Errorf("unwinding after the OOM is in %v, want none", ph)
	}

	var m []snapshot.TraceEntry
	for i := range 6 {
		if i%2 == 0 {
			m = append(m, snapshot.TraceEntry{Action: snapshot.ActionSnapshot})
		}
		m = append(m, snapshot.TraceEntry{Action: snapshot.ActionAlloc, Addr: uint64(i+1) << 20, Size: 1 << 20})
	}
	tl = phasedetect.Detect(m, nil, nil, 0)
	if tl.Source != "snapshot markers" || len(tl.Iterations) != 3 || tl.Iterations[1].Span != (phases.Span{Start: 3, End: 6}) {
		t.Errorf("markers: %+v", tl)
	}
	if tl := phasedetect.Detect(nil, nil, nil, 0); len(tl.Iterations) != 0 || tl.Training() {
		t.Errorf("empty trace: %+v", tl)
	}
}

// run is the part of ../shared/gpu_runs/runs.json these tests read.
type run struct {
	Name   string `json:"name"`
	Phases []struct {
		Phase string `json:"phase"`
		Alloc int64  `json:"alloc"`
	} `json:"phases"`
}

func loadRuns(t *testing.T) map[string]run {
	t.Helper()
	var rs []run
	realsnap.GPURuns(t, &rs)
	out := map[string]run{}
	for _, r := range rs {
		out[r.Name] = r
	}
	return out
}

// stepPhase names the phases of runs.json measured at the end of a training step.
var stepPhase = regexp.MustCompile(`^step[0-9]+$`)

// TestDetectRealRuns: on the H200 training snapshots, read with their stacks and annotations and read as the
// periodic split does (stacks and annotations removed), there are as many iterations as the capture script ran
// steps (the stepN phases of runs.json), and the allocated memory replayed at each boundary equals what the script
// measured there with torch.cuda.memory_allocated(): after backward = before the optimizer step's first event, step
// = the iteration's end, and, where the stacks tell autograd's first allocation, after forward = before it. The
// replay counts requested bytes and PyTorch rounded block sizes, hence 0.1 %. The periodic split's boundaries are
// compared with the annotated ones too (checkPattern): its backward starts at most 4 allocations late (autograd's
// first allocations, the loss's and the logits' gradients, lift memory to the peak that marks it).
func TestDetectRealRuns(t *testing.T) {
	runs := loadRuns(t)
	for _, name := range []string{"llama1b-bf16-b4-s2048-snap", "llama1b-bf16-b4-s2048-stacksall-snap", "llama1b-varlen-b4-snap"} {
		t.Run(name, func(t *testing.T) {
			measured, steps := map[string]int64{}, 0
			for _, p := range runs[name].Phases {
				measured[p.Phase] = p.Alloc
				if stepPhase.MatchString(p.Phase) {
					steps++
				}
			}
			in, err := load.DecodeFile(context.Background(), filepath.Join(realsnap.SharedDir(t, "gpu_runs"), name+".pickle.gz"))
			if err != nil {
				t.Fatal(err)
			}
			// The replay finds the phases (phases.Detect of the device's trace and annotations) once for both.
			rep, err := replay.ReplayDevice(context.Background(), in.Snapshot, 0)
			if err != nil {
				t.Fatal(err)
			}
			pattern := checkPattern(t, in.Snapshot.DeviceTraces[0], rep.Timeline(), 4)
			for _, mode := range []struct {
				name string
				tl   *phases.Timeline
			}{{"stacks and annotations", rep.Timeline()}, {"alloc/free pattern", pattern}} {
				if len(mode.tl.Iterations) != steps {
					t.Fatalf("%s: %d iterations, the run made %d steps", mode.name, len(mode.tl.Iterations), steps)
				}
				for k, it := range mode.tl.Iterations {
					if !it.Complete {
						t.Errorf("%s: iteration %d incomplete", mode.name, k+1)
					}
					type check struct {
						phase string
						event int
					}
					checks := []check{{"_after_backward", it.Optimizer.Start - 1}, {"", it.Span.End - 1}}
					if mode.tl == rep.Timeline() {
						checks = append(checks, check{"_after_forward", it.Backward.Start - 1})
					}
					for _, c := range checks {
						name := "step" + strconv.Itoa(k+1) + c.phase
						want, got := measured[name], rep.Allocated[c.event]
						if want == 0 || math.Abs(float64(got-want)) > 0.001*float64(want) {
							t.Errorf("%s: %s: replayed %d at event %d, PyTorch measured %d", mode.name, name, got, c.event, want)
						}
					}
				}
			}
		})
	}
}

// TestDetectMixedStacks: stacks that look like forward and backward in turn every other event are not a training
// loop; no iterations are made of them.
func TestDetectMixedStacks(t *testing.T) {
	b := snapbuild.NewSnap(1)
	for i := range 400 {
		st := traingen.TrainActStack
		if i%2 == 1 {
			st = nil
		}
		b.Event(0, snapbuild.Ev(snapshot.ActionAlloc, uint64(i+1)<<20, 1<<20, st))
	}
	tl := phasedetect.Detect(b.S.DeviceTraces[0], b.S.TraceStacks, nil, 0)
	if len(tl.Iterations) != 0 || tl.Source != "stacks too mixed for iterations" {
		t.Errorf("%d iterations from %s", len(tl.Iterations), tl.Source)
	}
}
