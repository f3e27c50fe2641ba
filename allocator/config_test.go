package allocator

import (
	"errors"
	"strings"
	"testing"
)

func TestParseConf(t *testing.T) {
	var all8 [16]int64
	for i := range all8 {
		all8[i] = 8
	}
	cases := []struct {
		in   string
		want Config
	}{
		{"", Config{}},
		{"expandable_segments:True", Config{ExpandableSegments: true}},
		{"expandable_segments:False,", Config{}},
		{" max_split_size_mb : 128 , garbage_collection_threshold:0.6", Config{MaxSplitSize: 128 * MiB, GarbageCollectionThreshold: 0.6}},
		{"max_non_split_rounding_mb:64", Config{MaxNonSplitRounding: 64 * MiB}},
		{"per_process_memory_fraction:0.5", Config{PerProcessMemoryFraction: 0.5}},
		{"large_segment_size_mb:64", Config{LargeSegmentSize: 64 * MiB}},
		{"backend:native", Config{Backend: "native"}},
		{"roundup_power2_divisions:8", Config{RoundupPower2Divisions: all8}},
		// The first key (4 MiB, interval 2) also fills intervals 0 and 1; 64 MiB is interval 6; '>' fills 7..15;
		// intervals 3..5 are not named and stay 0.
		{"roundup_power2_divisions:[4:8,64:4,>:1]", Config{RoundupPower2Divisions: [16]int64{8, 8, 8, 0, 0, 0, 4, 1, 1, 1, 1, 1, 1, 1, 1, 1}}},
		{"roundup_power2_divisions:[256:2],expandable_segments:True", Config{ExpandableSegments: true, RoundupPower2Divisions: [16]int64{2, 2, 2, 2, 2, 2, 2, 2, 2}}},
		{"release_lock_on_cudamalloc:True,pinned_num_register_threads:8", Config{Inert: []string{"release_lock_on_cudamalloc:True", "pinned_num_register_threads:8"}}},
	}
	for _, tc := range cases {
		got, err := ParseConf(tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if got.String() != tc.want.String() || got.RoundupPower2Divisions != tc.want.RoundupPower2Divisions ||
			got.MaxSplitSize != tc.want.MaxSplitSize || got.Backend != tc.want.Backend {
			t.Errorf("%q: got %+v, want %+v", tc.in, got, tc.want)
		}
		// String renders what parses back to the same configuration.
		back, err := ParseConf(got.String())
		if err != nil || back.String() != got.String() || back.RoundupPower2Divisions != got.RoundupPower2Divisions {
			t.Errorf("%q: String %q does not round-trip: %+v, %v", tc.in, got.String(), back, err)
		}
	}
}

func TestParseConfErrors(t *testing.T) {
	cases := []struct{ in, setting string }{
		{"expandable_segment:True", "expandable_segment"},
		{"expandable_segments:yes", "expandable_segments"},
		{"expandable_segments:true", "expandable_segments"}, // PyTorch accepts only True and False
		{"max_split_size_mb:10", "max_split_size_mb"},
		{"max_split_size_mb:abc", "max_split_size_mb"},
		{"max_split_size_mb:", "max_split_size_mb"},
		{"max_split_size_mb", "max_split_size_mb"},
		{"max_non_split_rounding_mb:-5", "max_non_split_rounding_mb"},
		{"garbage_collection_threshold:1.0", "garbage_collection_threshold"},
		{"garbage_collection_threshold:0", "garbage_collection_threshold"},
		{"per_process_memory_fraction:1.5", "per_process_memory_fraction"},
		{"roundup_power2_divisions:3", "roundup_power2_divisions"},
		{"roundup_power2_divisions:[3:4]", "roundup_power2_divisions"},
		{"roundup_power2_divisions:[64:8", "roundup_power2_divisions"},
		{"roundup_power2_divisions:[64]", "roundup_power2_divisions"},
		{"backend:cuda", "backend"},
		{"expandable_segments:True:False", "expandable_segments"},
		{":True", ":"},
		{"pinned_num_register_threads:0", "pinned_num_register_threads"},
	}
	for _, tc := range cases {
		_, err := ParseConf(tc.in)
		var se *SettingError
		if !errors.As(err, &se) {
			t.Errorf("%q: err %v, want a SettingError", tc.in, err)
			continue
		}
		if se.Setting != tc.setting || !strings.Contains(err.Error(), tc.setting) {
			t.Errorf("%q: error %q names %q, want %q", tc.in, err, se.Setting, tc.setting)
		}
	}
}

func FuzzParseConf(f *testing.F) {
	for _, s := range []string{"", "expandable_segments:True", "max_split_size_mb:128,garbage_collection_threshold:0.6",
		"roundup_power2_divisions:[4:8,64:4,>:1]", "roundup_power2_divisions:16", "backend:native,per_process_memory_fraction:0.3",
		"roundup_power2_divisions:[", ",,:", "max_split_size_mb:99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseConf(s)
		if err != nil {
			var se *SettingError
			if !errors.As(err, &se) {
				t.Fatalf("%q: error %v is not a SettingError", s, err)
			}
			return
		}
		back, err := ParseConf(c.String())
		if err != nil || back.String() != c.String() {
			t.Fatalf("%q: String %q does not parse back (%v)", s, c.String(), err)
		}
	})
}

// TestUnknownSettingSuggests: a mistyped setting gets the setting it was probably meant to be, and one far from
// every setting gets none.
func TestUnknownSettingSuggests(t *testing.T) {
	cases := []struct{ in, want string }{
		{"expandable_segment:True", `allocator setting "expandable_segment": unknown setting; did you mean "expandable_segments"?`},
		{"expandable-segments:True", `allocator setting "expandable-segments": unknown setting; did you mean "expandable_segments"?`},
		{"max_split_size:512", `allocator setting "max_split_size": unknown setting; did you mean "max_split_size_mb"?`},
		{"garbage_colection_threshold:0.6", `allocator setting "garbage_colection_threshold": unknown setting; did you mean "garbage_collection_threshold"?`},
		{"frobnicate:1", `allocator setting "frobnicate": unknown setting`},
	}
	for _, tc := range cases {
		_, err := ParseConf(tc.in)
		if err == nil || err.Error() != tc.want {
			t.Errorf("ParseConf(%q) = %v, want %s", tc.in, err, tc.want)
		}
	}
}

// TestSettingNamesAccepted: every name the hints offer is one ParseConf knows, so a hint never leads to a second
// "unknown setting".
func TestSettingNamesAccepted(t *testing.T) {
	for _, name := range SettingNames() {
		_, err := ParseConf(name + ":x")
		if err != nil && strings.Contains(err.Error(), "unknown setting") {
			t.Errorf("%s is offered as a setting but ParseConf does not know it: %v", name, err)
		}
	}
}
