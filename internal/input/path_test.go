package input_test

import (
	"testing"

	"github.com/memscan/memscan/internal/input"
)

func TestParsePath(t *testing.T) {
	tests := []struct {
		path string
		want input.PathInfo
	}{
		{"outputs/memory_snapshot/iteration_3/rank5_memory_snapshot.pickle", input.PathInfo{Rank: 5, Iteration: 3, IterationKind: "iter"}},
		{"outputs/memory_snapshot/iteration_10_exit/rank0_memory_snapshot.pickle", input.PathInfo{Rank: 0, Iteration: 10, IterationKind: "iter"}},
		{"profiling/memory_snapshot/step_000000000010/000007_step_10.pickle", input.PathInfo{Rank: 7, Iteration: 10, IterationKind: "step"}},
		{"profiling/memory_snapshot/step_000000000020_exit/000003_step_20.pickle", input.PathInfo{Rank: 3, Iteration: 20, IterationKind: "step"}},
		{"step_000000000500/000015_step_500.pickle", input.PathInfo{Rank: 15, Iteration: 500, IterationKind: "step"}},
		{"iteration_12/rank3_memory_snapshot.pickle", input.PathInfo{Rank: 3, Iteration: 12, IterationKind: "iter"}},
		{"snapshots/rank3.pickle", input.PathInfo{Rank: 3, Iteration: -1}},
		{"rank_4.pickle", input.PathInfo{Rank: 4, Iteration: -1}},
		{"snapshots/run_r12_mem.pickle", input.PathInfo{Rank: 12, Iteration: -1}},
		{`C:\runs\iter2\rank_1\snap.pickle`, input.PathInfo{Rank: 1, Iteration: 2, IterationKind: "iter"}},
		{"runs/step_7/Rank-2.json", input.PathInfo{Rank: 2, Iteration: 7, IterationKind: "step"}},
		{"snapshots/model_memory_usage_profile_grad.pickle", input.PathInfo{Rank: -1, Iteration: -1}},
		{"snapshots/crank9.pickle", input.PathInfo{Rank: -1, Iteration: -1}}, // "crank" is not a rank
		{"frank7.pickle", input.PathInfo{Rank: -1, Iteration: -1}},
		{"rank99999999999999999999.pickle", input.PathInfo{Rank: -1, Iteration: -1}}, // not a number that fits
		{"input.pickle", input.PathInfo{Rank: -1, Iteration: -1}},
		{"", input.PathInfo{Rank: -1, Iteration: -1}},
	}
	for _, tc := range tests {
		if got := input.ParsePath(tc.path); got != tc.want {
			t.Errorf("ParsePath(%q) = %+v, want %+v", tc.path, got, tc.want)
		}
	}
}

// TestRunOf: the ranks and iterations of one dump share a run name; another run's folder or file name differs.
func TestRunOf(t *testing.T) {
	tests := []struct{ path, want string }{
		{"outputs/memory_snapshot/iteration_3/rank5_memory_snapshot.pickle", "outputs/memory_snapshot/iteration_*/rank*_memory_snapshot.pickle"},
		{"outputs/memory_snapshot/iteration_10_exit/rank0_memory_snapshot.pickle", "outputs/memory_snapshot/iteration_*_exit/rank*_memory_snapshot.pickle"},
		// The step is in the folder and in the file name: both are blanked.
		{"profiling/memory_snapshot/step_000000000010/000007_step_10.pickle", "profiling/memory_snapshot/step_*/*_step_*.pickle"},
		{"snapshots/rank3.pickle", "snapshots/rank*.pickle"},
		{`C:\runs\iter2\rank_1\snap.pickle`, "C:/runs/iter*/rank_*/snap.pickle"},
		{"snapshots/run_r12_mem.pickle", "snapshots/run_r*_mem.pickle"},
		// A number that is neither rank nor iteration stays: it tells runs apart.
		{"/scratch/job4711/iteration_3/rank5.pickle", "/scratch/job4711/iteration_*/rank*.pickle"},
		{"input.pickle", "input.pickle"},
	}
	for _, tc := range tests {
		if got := input.RunOf(tc.path); got != tc.want {
			t.Errorf("RunOf(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
	same := [][2]string{
		{"d/iteration_1/rank0_memory_snapshot.pickle", "d/iteration_20/rank7_memory_snapshot.pickle"},
		{"step_000000000010/000007_step_10.pickle", "step_000000000500/000015_step_500.pickle"},
	}
	for _, p := range same {
		if a, b := input.RunOf(p[0]), input.RunOf(p[1]); a != b {
			t.Errorf("%s and %s are one run, named %q and %q", p[0], p[1], a, b)
		}
	}
	if a, b := input.RunOf("runA/iteration_1/rank0.pickle"), input.RunOf("runB/iteration_1/rank0.pickle"); a == b {
		t.Errorf("two runs named alike: %q", a)
	}
}
