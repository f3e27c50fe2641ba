package results

import (
	"fmt"
	"strconv"

	"github.com/memscan/memscan/analyze"
	"github.com/memscan/memscan/units"
)

// This file renders the report of a training log's memory lines.

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
func (t *textWriter) trainingLog(v *analyze.LogView) {
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
func (m *mdWriter) trainingLog(r *analyze.Report, v *analyze.LogView) {
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
