package suggest

import (
	"slices"
	"testing"
)

func TestDistance(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "", 3},
		{"", "abc", 3},
		{"analyse", "analyze", 1},  // substitution
		{"no-plot", "no-plots", 1}, // insertion
		{"mergee", "merge", 1},     // deletion
		{"anlayze", "analyze", 1},  // swap of neighbours
		{"kitten", "sitting", 3},   // the textbook case
		{"static", "gpus", 6},      // unrelated
		{"ca", "abc", 3},           // OSA: a swap is not followed by an insertion between the swapped letters
	}
	for _, c := range cases {
		if got := distance(c.a, c.b); got != c.want {
			t.Errorf("distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := distance(c.b, c.a); got != c.want {
			t.Errorf("distance(%q, %q) = %d, want %d (symmetry)", c.b, c.a, got, c.want)
		}
	}
}

func TestClosest(t *testing.T) {
	commands := []string{"analyze", "static", "gpus", "calibrate", "compare", "export", "merge", "version"}
	flags := []string{"out", "name", "jobs", "rules", "top", "format", "no-plots", "no-files", "progress", "summary-only", "quiet"}
	settings := []string{"max_split_size_mb", "garbage_collection_threshold", "expandable_segments", "roundup_power2_divisions"}
	cases := []struct {
		word       string
		candidates []string
		want       []string
	}{
		{"analyse", commands, []string{"analyze"}},
		{"Analyze", commands, []string{"analyze"}},
		{"statc", commands, []string{"static"}},
		{"stats", commands, nil}, // two edits in five letters: too far
		{"merg", commands, []string{"merge"}},
		{"gpu", commands, []string{"gpus"}},
		{"calib", commands, []string{"calibrate"}}, // the start of one command
		{"c", commands, nil},                       // too short to start anything
		{"co", commands, nil},
		{"frobnicate", commands, nil},
		{"no-plot", flags, []string{"no-plots"}},
		{"no_plots", flags, []string{"no-plots"}},
		{"no-file", flags, []string{"no-files"}},
		{"summary", flags, []string{"summary-only"}},
		{"formt", flags, []string{"format"}},
		{"quite", flags, []string{"quiet"}},
		{"xyz", flags, nil},
		{"expandable_segment", settings, []string{"expandable_segments"}},
		{"expandable-segments", settings, []string{"expandable_segments"}},
		{"max_split_size", settings, []string{"max_split_size_mb"}},
		{"garbage_collection", settings, []string{"garbage_collection_threshold"}},
		{"", commands, nil},
	}
	for _, c := range cases {
		if got := Closest(c.word, c.candidates); !slices.Equal(got, c.want) {
			t.Errorf("Closest(%q) = %q, want %q", c.word, got, c.want)
		}
	}
}

// TestClosestTies: equally close names are all offered, in the candidates' order, and at most maxSuggestions.
func TestClosestTies(t *testing.T) {
	if got, want := Closest("tap", []string{"top", "tip", "tab", "tan", "tar"}), []string{"top", "tip", "tab"}; !slices.Equal(got, want) {
		t.Errorf("Closest = %q, want %q", got, want)
	}
}

func TestHint(t *testing.T) {
	cases := []struct {
		word       string
		candidates []string
		want       string
	}{
		{"analyse", []string{"analyze", "merge"}, `; did you mean "analyze"?`},
		{"tp", []string{"tp", "pp"}, `; did you mean "tp"?`},
		{"ab", []string{"aa", "bb", "cc"}, `; did you mean "aa" or "bb"?`},
		{"abx", []string{"abc", "abd", "abe"}, `; did you mean "abc", "abd" or "abe"?`},
		{"zzz", []string{"analyze"}, ""},
	}
	for _, c := range cases {
		if got := Hint(c.word, c.candidates, Quoted); got != c.want {
			t.Errorf("Hint(%q) = %q, want %q", c.word, got, c.want)
		}
	}
	if got := Hint("no-plot", []string{"no-plots"}, func(s string) string { return "--" + s }); got != "; did you mean --no-plots?" {
		t.Errorf("Hint with a flag quote = %q", got)
	}
}
