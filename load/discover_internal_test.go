package load

import "testing"

func TestNaturalLess(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"rank2", "rank10", true},
		{"rank10", "rank2", false},
		{"iteration_2/rank0", "iteration_10/rank0", true},
		{"a007", "a7", false}, // equal numbers: the shorter spelling first
		{"a7", "a007", true},
		{"abc", "abd", true},
		{"ab", "abc", true},
		{"x", "x", false},
	}
	for _, tt := range tests {
		if got := naturalLess(tt.a, tt.b); got != tt.want {
			t.Errorf("naturalLess(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestIsInputName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"rank0_memory_snapshot.pickle", true},
		{"snap.pkl", true},
		{"000007_step_10.pickle", true},
		{"tracer_rank0.json", true},
		{"trace.memory_timeline.json.gz", true},
		{"train.log", true},
		{"oom_snapshot", true},
		{"config.json", false},
		{"model.pt", false},
		{"memory_snapshot.pt", true},
		{"summary.json", false},
		{"report.msgpack", false},
		{"top_consumers.png", false},
		{"rank0.pickle.gz", true},
		{"snap.pkl.gz", true},
		{"train.log.gz", true},
		{"config.json.gz", false},
		{"checkpoint.tar.gz", false},
	}
	for _, tt := range tests {
		if got := isInputName(tt.name); got != tt.want {
			t.Errorf("isInputName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}
