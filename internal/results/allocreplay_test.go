package results

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/memscan/memscan/report"
)

// handReplay is a what-if replay with round numbers: recorded and baseline 10 GiB, what-if 8 GiB, expandable
// (recorded settings) 9 GiB.
func handReplay() *report.AllocatorReplay {
	const gib = 1 << 30
	return &report.AllocatorReplay{
		Device: 0, Settings: "max_split_size_mb:512", WhatIf: true, RecordedSettings: "", RecordedSettingsKnown: true,
		CapacityBytes: 79 * gib, CapacitySource: "--gpu h100-sxm",
		RecordedPeakReservedBytes: 10 * gib, BaselinePeakReservedBytes: 10 * gib, PeakReservedBytes: 8 * gib,
		ExpandablePeakReservedBytes: 9 * gib, ExpandableSettings: "expandable_segments:True",
		BaselineMatchesRecording: true, BaselineFirstDivergence: -1, RecordedSegments: 12, BaselineSegments: 12, Segments: 30,
		BaselineFragmentation: report.AllocatorFragmentation{Reserved: 10 * gib, Allocated: 7 * gib, Free: 3 * gib, CachedSegments: gib, FreeInUsedSegments: 2 * gib},
		Fragmentation:         report.AllocatorFragmentation{Reserved: 8 * gib, Allocated: 7 * gib, Free: gib},
		FirstFailedEvent:      -1,
	}
}

func TestReplayRows(t *testing.T) {
	rows := replayRows(handReplay())
	var names []string
	for _, r := range rows {
		names = append(names, r.Name)
	}
	if want := []string{"recorded (trace segment events)", "replayed, recorded settings", "what-if", "recorded settings + expandable segments"}; !slices.Equal(names, want) {
		t.Fatalf("rows %v, want %v", names, want)
	}
	// vs recorded: baseline ±0, what-if −2 GiB, expandable −1 GiB.
	if d, s, f := rows[2].cells(); d != "-2.0 GiB" || s != "30" || f != "1.0 GiB" {
		t.Errorf("what-if cells %q %q %q", d, s, f)
	}
	if d, s, f := rows[0].cells(); d != "-" || s != "12" || f != "-" {
		t.Errorf("recorded cells %q %q %q", d, s, f)
	}
	// The expandable row goes when the what-if is that setting.
	ar := handReplay()
	ar.Settings, ar.PeakReservedBytes = "expandable_segments:True", 9<<30
	if n := len(replayRows(ar)); n != 3 {
		t.Errorf("%d rows when the what-if is expandable segments", n)
	}
	// It stays when another setting merely reaches the same peak: the rows name settings, not numbers.
	ar = handReplay()
	ar.PeakReservedBytes = ar.ExpandablePeakReservedBytes
	if n := len(replayRows(ar)); n != 4 {
		t.Errorf("%d rows when a different what-if ties expandable segments' peak", n)
	}
}

func TestReplayText(t *testing.T) {
	snap := &report.SnapshotReport{AllocatorReplay: handReplay()}
	var b bytes.Buffer
	tw := &textWriter{w: &b}
	tw.allocatorReplay(snap)
	out := b.String()
	for _, s := range []string{"Allocator replay (device 0)", "recorded settings: default", "79.0 GiB from --gpu h100-sxm",
		"creates the same 12 segments in the same order", "max_split_size_mb:512", "10 737 418 240", "8 589 934 592", "-2.0 GiB"} {
		if !strings.Contains(out, s) {
			t.Errorf("section lacks %q:\n%s", s, out)
		}
	}
	f := replayFindings(snap)
	if len(f) != 3 || !strings.Contains(f[1], "**8.0 GiB**") || !strings.Contains(f[2], "9.0 GiB (1.0 GiB less)") {
		t.Errorf("findings %q", f)
	}
}

// TestTimeChartWhatIf: the what-if reserved series becomes a line of its own, named for its settings.
func TestTimeChartWhatIf(t *testing.T) {
	s := report.TimelineSeries{Device: 0, Index: []int{0, 1, 2}, Allocated: []int64{1, 2, 1}, Reserved: []int64{4, 4, 4}, WhatIfReserved: []int64{2, 3, 3}}
	c := timeChart("t", s, nil, "expandable_segments:True")
	if len(c.Lines) != 3 || c.Lines[2].Name != "reserved, what-if" || !slices.Equal(c.Lines[2].Values, []float64{2, 3, 3}) || c.Title != "t (what-if: expandable_segments:True)" {
		t.Errorf("title %q, lines %+v", c.Title, c.Lines)
	}
	s.WhatIfReserved = nil
	if c := timeChart("t", s, nil, ""); len(c.Lines) != 2 {
		t.Errorf("%d lines without a what-if", len(c.Lines))
	}
}
