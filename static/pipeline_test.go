package static

import (
	"slices"
	"testing"
)

// TestSplitRule follows torchtitan's generate_split_points (Dec 2024): base = L / stages, the L mod stages extra
// layers one each to the middle stages from the second on, the last stage takes the rest. Llama 3.1 405B has 126
// layers: on 8 stages base 15, 6 extra → 15, 16 × 6, 15; on 16 stages (interleaved, 2 per rank) base 7, 14
// extra → 7, 8 × 14, 7. An evenly divisible model splits evenly.
func TestSplitRule(t *testing.T) {
	for _, tc := range []struct {
		layers, stages int
		want           []int
	}{
		{126, 8, []int{15, 16, 16, 16, 16, 16, 16, 15}},
		{126, 16, []int{7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7}},
		{32, 4, []int{8, 8, 8, 8}},
		{10, 3, []int{3, 4, 3}},
	} {
		if got := splitRule(tc.layers, tc.stages); !slices.Equal(got, tc.want) {
			t.Errorf("splitRule(%d, %d) = %v, want %v", tc.layers, tc.stages, got, tc.want)
		}
	}
	// An explicit split is taken as given; rank 1 of pp 2 with 2 virtual stages holds stages 1 and 3.
	r := tiny(t, func(c *Config) {
		c.Model.NumLayers = 6
		c.Hardware.NumGPUs, c.Parallel.PP, c.Parallel.VirtualStages, c.Parallel.NumMicrobatches = 2, 2, 2, 4
		c.Parallel.PPLayers = []int{1, 2, 2, 1}
		c.Training.GlobalBatchSize = 0
	})
	if got := []int{r.Stages[0].Layers, r.Stages[1].Layers}; !slices.Equal(got, []int{3, 3}) {
		t.Errorf("per-rank layers %v, want [3 3] (stages 0+2 and 1+3)", got)
	}
	c := r.Config
	e := newEst(&c)
	if got := e.stageLayers(1); !slices.Equal(got, []int{1, 2, 5}) {
		t.Errorf("rank 1 layers %v, want [1 2 5]", got)
	}
}

// TestScheduleInflight derives each schedule's in-flight micro-batches from PyTorch's schedules.py:
//   - Schedule1F1B: rank r runs min(m, pp − r) warm-up forwards before its first backward, so with pp 4 and
//     m 8 rank 0 holds 4 micro-batches and rank 3 one;
//   - ScheduleGPipe: every forward before any backward: m;
//   - ScheduleInterleaved1F1B, pp 8, v 2, m 8 (rounds 1, 8 micro-batches per round): rank 0's warm-up is
//     min((v−1)·8 + 2·7, 16) = 16, all of its chunk-micro-batches; rank 7's is (v−1)·8 = 8, chunk 0's eight
//     micro-batches, then each chunk-1 forward is followed by its backward, so at most 8 + 1 chunk-micro-batches;
//     with 405B's interleaved split (rank 7: stages 7 and 15 of 8 and 7 layers) that is 8·8 + 7 = 71
//     layer-micro-batches, and rank 0 (stages 0 and 8: 7 and 8 layers) 8·7 + 8·8 = 120;
//   - ScheduleInterleavedZeroBubble: warm-up (v−1)·mpr + (pp−1−r) (pp 4, v 2, m 8: rounds 2, mpr 4, rank 0: 7),
//     then each steady step runs F, I and W, so one more before the first W (8); a micro-batch's activations stay until
//     its deferred weight-gradient step (W), which starts r micro-batches late: rank 0 never defers, rank pp−1
//     keeps every chunk-micro-batch whose W has not run.
func TestScheduleInflight(t *testing.T) {
	count := func(ops []pipeOp, release byte) int {
		live, best := 0, 0
		for _, op := range ops {
			switch op.kind {
			case 'F':
				live++
				best = max(best, live)
			case release:
				live--
			}
		}
		return best
	}
	for _, tc := range []struct {
		schedule     string
		pp, v, m, r  int
		release      byte
		want, opsLen int
	}{
		{"1f1b", 4, 1, 8, 0, 'B', 4, 16},
		{"1f1b", 4, 1, 8, 3, 'B', 1, 16},
		{"gpipe", 4, 1, 8, 2, 'B', 8, 16},
		{"interleaved", 8, 2, 8, 0, 'B', 16, 32},
		{"interleaved", 8, 2, 8, 7, 'B', 9, 32},
		{"zero_bubble", 4, 2, 8, 0, 'W', 4 + 3 + 1, 48},
	} {
		ops := scheduleOps(tc.schedule, tc.pp, tc.v, tc.m, tc.r)
		if got := count(ops, tc.release); got != tc.want || len(ops) != tc.opsLen {
			t.Errorf("%s pp %d v %d m %d rank %d: %d in flight over %d ops, want %d over %d", tc.schedule, tc.pp, tc.v, tc.m, tc.r, got, len(ops), tc.want, tc.opsLen)
		}
		// Every chunk runs every micro-batch forward and backward exactly once, forward first (and, under zero
		// bubble, its weight gradient once, after the backward).
		seen := map[[3]int]int{}
		for _, op := range ops {
			before := map[byte]byte{'B': 'F', 'W': 'B'}[op.kind]
			if before != 0 && seen[[3]int{int(before), op.chunk, op.mb}] == 0 {
				t.Errorf("%s rank %d: %c of chunk %d micro-batch %d before its %c", tc.schedule, tc.r, op.kind, op.chunk, op.mb, before)
			}
			seen[[3]int{int(op.kind), op.chunk, op.mb}]++
		}
		kinds := "FB"
		if tc.schedule == "zero_bubble" {
			kinds = "FBW"
		}
		for chunk := 0; chunk < tc.v; chunk++ {
			for mb := 0; mb < tc.m; mb++ {
				for _, k := range kinds {
					if n := seen[[3]int{int(k), chunk, mb}]; n != 1 {
						t.Errorf("%s rank %d: %c of chunk %d micro-batch %d runs %d times, want once", tc.schedule, tc.r, k, chunk, mb, n)
					}
				}
			}
		}
		if len(seen) > len(kinds)*tc.v*tc.m {
			t.Errorf("%s rank %d: ops name chunks or micro-batches outside %d × %d", tc.schedule, tc.r, tc.v, tc.m)
		}
	}
	c := DefaultConfig()
	c.Model = ModelConfig{Preset: "llama3-405b"}
	c.Framework = "torchtitan"
	c.Hardware.GPU, c.Hardware.NumGPUs = "h100-96gb", 64
	c.Parallel.TP, c.Parallel.PP, c.Parallel.NumMicrobatches, c.Parallel.PPSchedule = 8, 8, 8, "interleaved"
	c.Training.MicroBatchSize = 1
	if err := c.Resolve(); err != nil {
		t.Fatal(err)
	}
	e := newEst(&c)
	if c.Parallel.VirtualStages != 2 {
		t.Fatalf("torchtitan interleaved: %d stages per rank, want 2", c.Parallel.VirtualStages)
	}
	for r, want := range map[int]int64{0: 120, 7: 71} {
		if got := e.inflightOf(r).layerMBs; got != want {
			t.Errorf("405B interleaved rank %d: %d layer-micro-batches in flight, want %d", r, got, want)
		}
	}
}
