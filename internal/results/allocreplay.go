package results

import (
	"fmt"
	"strconv"

	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/report"
)

// replayRow is one line of the allocator-replay table: one way the trace's memory was, or would be, reserved.
type replayRow struct {
	Name     string
	Settings string // PYTORCH_CUDA_ALLOC_CONF, "" for the default
	Field    string // the summary.json key of PeakReserved
	// PeakReserved is the peak reserved bytes; Delta its difference from the recorded peak (0 for the recorded row).
	PeakReserved int64
	Delta        int64
	Segments     int
	// Frag is the breakdown at that peak; nil for the recorded row (the trace does not say).
	Frag *report.AllocatorFragmentation
}

// cells renders the row's difference from the recording, its segment count and its free bytes when its reserved
// memory first reached its maximum (not the allocated peak), "-" where the row has none.
func (row replayRow) cells() (delta, segs, free string) {
	delta, segs, free = "-", "-", "-"
	if row.Field != "recorded_peak_reserved_bytes" {
		delta = units.SignedBytes(row.Delta)
	}
	if row.Frag != nil || row.Field == "recorded_peak_reserved_bytes" {
		segs = strconv.Itoa(row.Segments)
	}
	if row.Frag != nil {
		free = units.Bytes(row.Frag.Free)
	}
	return delta, segs, free
}

// replayRows lists recorded, replayed (recorded settings), the what-if and, when it is a different setting,
// expandable_segments:True.
func replayRows(ar *report.AllocatorReplay) []replayRow {
	rec := ar.RecordedPeakReservedBytes
	rows := []replayRow{
		{Name: "recorded (trace segment events)", Settings: ar.RecordedSettings, Field: "recorded_peak_reserved_bytes", PeakReserved: rec, Segments: ar.RecordedSegments},
		{Name: "replayed, recorded settings", Settings: ar.RecordedSettings, Field: "baseline_peak_reserved_bytes", PeakReserved: ar.BaselinePeakReservedBytes,
			Delta: ar.BaselinePeakReservedBytes - rec, Segments: ar.BaselineSegments, Frag: &ar.BaselineFragmentation},
	}
	if ar.WhatIf {
		rows = append(rows, replayRow{Name: "what-if", Settings: ar.Settings, Field: "peak_reserved_bytes", PeakReserved: ar.PeakReservedBytes,
			Delta: ar.PeakReservedBytes - rec, Segments: ar.Segments, Frag: &ar.Fragmentation})
	}
	if ar.ExpandablePeakReservedBytes != ar.BaselinePeakReservedBytes && (!ar.WhatIf || ar.Settings != ar.ExpandableSettings) {
		rows = append(rows, replayRow{Name: "recorded settings + expandable segments", Settings: ar.ExpandableSettings, Field: "expandable_peak_reserved_bytes",
			PeakReserved: ar.ExpandablePeakReservedBytes, Delta: ar.ExpandablePeakReservedBytes - rec})
	}
	return rows
}

// settingsLabel is a configuration as a reader sees it.
func settingsLabel(s string) string {
	if s == "" {
		return "default"
	}
	return s
}

// recordedSettingsLine says what the snapshot ran under, and whether it said so.
func recordedSettingsLine(ar *report.AllocatorReplay) string {
	if !ar.RecordedSettingsKnown {
		return "not recorded (torch before 2.3); the default was assumed"
	}
	return settingsLabel(ar.RecordedSettings)
}

// capacityLine says which device capacity the replay assumed and why.
func capacityLine(ar *report.AllocatorReplay) string {
	switch {
	case ar.CapacityBytes <= 0:
		return "unlimited (no --gpu or --device-memory given and no out-of-memory event in the trace)"
	case ar.CapacitySource == "oom event":
		return units.Bytes(ar.CapacityBytes) + " (reserved + free device memory at the trace's out-of-memory event)"
	default:
		return units.Bytes(ar.CapacityBytes) + " from " + ar.CapacitySource
	}
}

// replayCheckLine says whether the model reproduced the recording, or why it could not be checked.
func replayCheckLine(ar *report.AllocatorReplay) string {
	switch {
	case ar.Partial:
		return "partial — " + ar.PartialReason
	case ar.BaselineMatchesRecording:
		return fmt.Sprintf("the replay under the recorded settings reproduces the recorded peak to the byte and creates the same %s in the same order", units.Plural(ar.RecordedSegments, "segment", "segments"))
	default:
		return fmt.Sprintf("the replay under the recorded settings departs from the recording at event %d (peak %s replayed, %s recorded)",
			ar.BaselineFirstDivergence, units.Bytes(ar.BaselinePeakReservedBytes), units.Bytes(ar.RecordedPeakReservedBytes))
	}
}

// allocatorReplay writes the text report's section for one replay.
func (t *textWriter) allocatorReplay(snap *report.SnapshotReport) {
	for _, ar := range replaysOf(snap) {
		t.section(fmt.Sprintf("Allocator replay (device %d)", ar.Device))
		t.printf("  recorded settings: %s\n", recordedSettingsLine(ar))
		t.printf("  capacity:          %s\n", capacityLine(ar))
		t.printf("  check:             %s\n", replayCheckLine(ar))
		tb := newTable([]align{alignLeft, alignLeft, alignRight, alignRight, alignRight, alignRight, alignRight, alignRight, alignRight},
			"run", "settings", "peak reserved", "bytes", "vs recorded", "segments", "free at max reserved", "empty segments", "free in used")
		for _, row := range replayRows(ar) {
			delta, segs, free := row.cells()
			empty, used := "-", "-"
			if row.Frag != nil {
				empty, used = units.Bytes(row.Frag.CachedSegments), units.Bytes(row.Frag.FreeInUsedSegments)
			}
			tb.add(row.Name, settingsLabel(row.Settings), units.Bytes(row.PeakReserved), GroupDigits(row.PeakReserved), delta, segs, free, empty, used)
		}
		tb.write(t.w, 2)
		if ar.WhatIf && ar.FailedAllocations > 0 {
			t.printf("  the what-if runs out of memory: %d requests fail, the first at event %d\n", ar.FailedAllocations, ar.FirstFailedEvent)
		}
	}
}

// replaysOf lists the replays to show: every device's when there are several, else the one.
func replaysOf(snap *report.SnapshotReport) []*report.AllocatorReplay {
	if len(snap.AllocatorReplayDevices) > 1 {
		out := make([]*report.AllocatorReplay, len(snap.AllocatorReplayDevices))
		for i := range snap.AllocatorReplayDevices {
			out[i] = &snap.AllocatorReplayDevices[i]
		}
		return out
	}
	if snap.AllocatorReplay != nil {
		return []*report.AllocatorReplay{snap.AllocatorReplay}
	}
	return nil
}

// replayFindings are the Markdown findings of the main device's replay: recorded vs replayed vs what-if.
func replayFindings(snap *report.SnapshotReport) []string {
	ar := snap.AllocatorReplay
	if ar == nil {
		return nil
	}
	var out []string
	rec := ar.RecordedPeakReservedBytes
	switch {
	case ar.Partial:
		out = append(out, fmt.Sprintf("The allocator replay of device %d is **partial**; its numbers start from the state the snapshot implies. Why: %s.", ar.Device, mdText(ar.PartialReason)))
	case ar.BaselineMatchesRecording:
		out = append(out, fmt.Sprintf("Replaying the trace through the caching-allocator model reproduces the recorded peak reserved of **%s** on device %d to the byte (%s, same sizes, same order).",
			units.Bytes(rec), ar.Device, units.Plural(ar.RecordedSegments, "segment", "segments")))
	default:
		out = append(out, fmt.Sprintf("Replaying the trace through the caching-allocator model gives %s peak reserved on device %d against %s recorded (it departs at event %d).",
			units.Bytes(ar.BaselinePeakReservedBytes), ar.Device, units.Bytes(rec), ar.BaselineFirstDivergence))
	}
	if ar.WhatIf {
		s := fmt.Sprintf("Under `%s` the same trace would reserve **%s** at its peak (%s against recorded), capacity %s.",
			mdCode(settingsLabel(ar.Settings)), units.Bytes(ar.PeakReservedBytes), units.SignedBytes(ar.PeakReservedBytes-rec), mdText(capacityLine(ar)))
		if ar.FailedAllocations > 0 {
			s += fmt.Sprintf(" It would run out of memory at event %d.", ar.FirstFailedEvent)
		}
		out = append(out, s)
	}
	if save := ar.ExpandableSavingBytes(); save > 0 && (!ar.WhatIf || ar.Settings != ar.ExpandableSettings) {
		out = append(out, fmt.Sprintf("With `%s` it would reserve %s (%s less).", mdCode(settingsLabel(ar.ExpandableSettings)), units.Bytes(ar.ExpandablePeakReservedBytes), units.Bytes(save)))
	}
	return out
}

// allocatorReplay writes the Markdown table of the replays.
func (m *mdWriter) allocatorReplay(snap *report.SnapshotReport) {
	for _, ar := range replaysOf(snap) {
		m.printf("\n**Allocator replay, device %d** (recorded settings: %s; capacity: %s)\n\n", ar.Device, mdText(recordedSettingsLine(ar)), mdText(capacityLine(ar)))
		m.printf("| run | settings | peak reserved | vs recorded | segments | free at max reserved |\n|---|---|---:|---:|---:|---:|\n")
		for _, row := range replayRows(ar) {
			delta, segs, free := row.cells()
			m.printf("| %s | `%s` | %s | %s | %s | %s |\n", mdCell(row.Name), mdCell(mdCode(settingsLabel(row.Settings))), units.Bytes(row.PeakReserved), delta, segs, free)
		}
	}
}

// whatIfName names the what-if of device dev's replay for a chart legend ("" without one).
func whatIfName(snap *report.SnapshotReport, dev int) string {
	for _, ar := range replaysOf(snap) {
		if ar.Device == dev && ar.WhatIf {
			return settingsLabel(ar.Settings)
		}
	}
	return ""
}

// htmlReplay is one device's replay as index.html shows it.
type htmlReplay struct {
	Device                    int
	Recorded, Capacity, Check string
	Rows                      []htmlReplayRow
}

type htmlReplayRow struct {
	Device                int
	Name, Settings, Field string
	PeakReserved          int64
	Delta, Segments, Free string
}

func htmlReplays(snap *report.SnapshotReport) []htmlReplay {
	var out []htmlReplay
	for _, ar := range replaysOf(snap) {
		h := htmlReplay{Device: ar.Device, Recorded: recordedSettingsLine(ar), Capacity: capacityLine(ar), Check: replayCheckLine(ar)}
		for _, row := range replayRows(ar) {
			delta, segs, free := row.cells()
			h.Rows = append(h.Rows, htmlReplayRow{Device: ar.Device, Name: row.Name, Settings: settingsLabel(row.Settings), Field: row.Field,
				PeakReserved: row.PeakReserved, Delta: delta, Segments: segs, Free: free})
		}
		out = append(out, h)
	}
	return out
}
