package results

import (
	"fmt"
	"strconv"

	"github.com/memscan/memscan/internal/plots"
	"github.com/memscan/memscan/internal/units"
	"github.com/memscan/memscan/report"
)

// This file renders the report of a training log's memory lines.

// ChartLogMemory is the memory lines of a training log over its iterations.
const ChartLogMemory = "log_memory.png"

// bytesOrDash renders a log measure, which is -1 when the log dialect does not print it.
func bytesOrDash(n int64) string {
	if n < 0 {
		return "-"
	}
	return units.Bytes(n)
}

// peakPlace renders " (rank R, iteration I)" for a log peak, leaving out what the log does not say.
func peakPlace(rank, iteration int) string {
	if rank < 0 {
		return ""
	}
	if iteration < 0 {
		return fmt.Sprintf(" (rank %d)", rank)
	}
	return fmt.Sprintf(" (rank %d, iteration %d)", rank, iteration)
}

// trainingLog writes the text report's section of a training log's memory lines.
func (t *textWriter) trainingLog(v *report.LogView) {
	t.section("Training log memory lines")
	t.printf("  %s log: %d lines, %d memory records", v.Dialect, v.Lines, v.Records)
	if v.SkippedLines > 0 {
		t.printf(", %d over-long lines skipped", v.SkippedLines)
	}
	// Allocated and reserved can peak on different ranks and iterations, so each peak carries its own place.
	allocRank, allocIter := v.PeakAllocatedRank, v.PeakAllocatedIteration
	if v.PeakReservedBytes < 0 {
		allocRank, allocIter = v.PeakRank, v.PeakIteration // without reserved, PeakRank follows allocated
	}
	t.printf("\n  peak allocated %s", bytesOrDash(v.PeakAllocatedBytes))
	if v.PeakAllocatedBytes >= 0 {
		t.printf("%s", peakPlace(allocRank, allocIter))
	}
	t.printf(", peak reserved %s", bytesOrDash(v.PeakReservedBytes))
	if v.PeakReservedBytes >= 0 {
		t.printf("%s", peakPlace(v.PeakRank, v.PeakIteration))
	}
	t.printf("\n")
	if v.CapacityBytes > 0 {
		t.printf("  device: %s, %s\n", orDash(v.DeviceName), units.Bytes(v.CapacityBytes))
	}
	if th := v.Theoretical; th != nil {
		t.printf("  theoretical (line %d): weight and optimizer %s, activation %s, total %s", th.Line,
			bytesOrDash(th.WeightAndOptimizerByte), bytesOrDash(th.ActivationBytes), bytesOrDash(th.TotalBytes))
		if v.TheoryGapPct != nil {
			t.printf("; measured is %+.1f %% off", *v.TheoryGapPct)
		}
		t.printf("\n")
	}
	if len(v.Ranks) > 0 {
		t.printf("\n")
		tb := newTable([]align{alignRight, alignRight, alignLeft, alignRight, alignRight, alignRight, alignRight},
			"rank", "records", "iterations", "max allocated", "max reserved", "last allocated", "last reserved")
		for _, rr := range v.Ranks {
			tb.add(intOrDash(rr.Rank), strconv.Itoa(rr.Records), fmt.Sprintf("%d-%d", rr.FirstIteration, rr.LastIteration),
				bytesOrDash(rr.MaxAllocated), bytesOrDash(rr.MaxReserved), bytesOrDash(rr.LastAllocated), bytesOrDash(rr.LastReserved))
		}
		tb.write(t.w, 2)
		if len(v.Ranks) > 1 {
			t.printf("  reserved imbalance across ranks: %.2f %% (max / median - 1)\n", v.ReservedImbalancePct)
		}
	}
}

// trainingLog writes the Markdown findings of a training log's memory lines.
func (m *mdWriter) trainingLog(r *report.Report, v *report.LogView) {
	s := fmt.Sprintf("The %s log has %d memory records; peak allocated **%s**, peak reserved %s", mdText(v.Dialect), v.Records,
		bytesOrDash(v.PeakAllocatedBytes), bytesOrDash(v.PeakReservedBytes))
	if v.PeakRank >= 0 {
		s += fmt.Sprintf(" (rank %d)", v.PeakRank)
	}
	facts := []string{s + "."}
	if v.TheoryGapPct != nil {
		facts = append(facts, fmt.Sprintf("The measured peak is %+.1f %% off the log's theoretical estimate.", *v.TheoryGapPct))
	}
	m.findings(r, facts)
	m.inputRecommendations(r.Recommendations)
}

// logCharts maps a training log to its chart: each rank's memory lines over iterations.
func logCharts(r *report.Report, v *report.LogView) []chartJob {
	if len(v.Series) == 0 {
		return nil
	}
	title := fmt.Sprintf("Memory per %s: %s (%s log)", logXName(v), titleFile(r.File), v.Dialect)
	if v.DeviceName != "" { // the log names the GPU, not which device index each rank used
		title = fmt.Sprintf("Memory per %s: %s (%s log, %s)", logXName(v), titleFile(r.File), v.Dialect, v.DeviceName)
	}
	return []chartJob{newChartJob(ChartLogMemory, title, func(path string) error {
		return plots.LogMemory(path, title, logXName(v), logLines(v))
	})}
}

func logXName(v *report.LogView) string {
	for _, s := range v.Series {
		if !s.XIsIteration {
			return "memory line"
		}
	}
	return "iteration"
}

// logLines turns each rank's series into plot lines: allocated and reserved solid, their peaks dashed; measures
// a dialect does not print are left out.
func logLines(v *report.LogView) []plots.LogLine {
	var out []plots.LogLine
	for _, s := range v.Series {
		x := toFloats(s.X)
		rank := "no rank"
		if s.Rank >= 0 {
			rank = fmt.Sprintf("rank %d", s.Rank)
		}
		for _, m := range []struct {
			name   string
			vals   []int64
			dashed bool
		}{
			{"allocated", s.Allocated, false},
			{"max allocated", s.MaxAllocated, true},
			{"reserved", s.Reserved, false},
			{"max reserved", s.MaxReserved, true},
		} {
			vals := make([]float64, len(m.vals))
			present := false
			for i, b := range m.vals {
				vals[i] = float64(b)
				present = present || b >= 0
			}
			if !present {
				continue
			}
			name := rank + " " + m.name
			// One rank: the usual allocated/reserved colours; several: a stable colour per line.
			col := plots.CategoryColor(name)
			if len(v.Series) == 1 {
				col = plots.ColorAllocated
				if m.name == "reserved" || m.name == "max reserved" {
					col = plots.ColorReserved
				}
			}
			out = append(out, plots.LogLine{Name: name, X: x, Values: vals, Dashed: m.dashed, Color: col})
		}
	}
	return out
}
